//! Copies and memsets: H2D sources stored before the call, D2H results after it (async: after synchronising the stream, never on a capturing one); generic copies classified by pointer attributes.

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_uint, c_void};

use hrr_calls::cuda::ffi::{CUresult, Handle, CUDA_ERROR_NOT_FOUND};
use hrr_calls::shapes::direction;
use hrr_calls::shapes::*;

use super::{host_blob, rec};
use crate::api::cuda::calls::{effective_stream, real_fn, Export};
use crate::api::cuda::loader::driver_fn;

/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`.
const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CUresult = 900;

/// Is `stream` capturing into a graph (asked of the driver, so streams that joined a capture
/// through an event count too)?
unsafe fn stream_is_capturing(h: Export, stream: Handle) -> bool {
    type IsCapturing = unsafe extern "C" fn(Handle, *mut c_int) -> CUresult;
    let Some(f) = driver_fn::<IsCapturing>(c"cuStreamIsCapturing") else {
        return false;
    };
    let mut status: c_int = 0;
    f(effective_stream(h, stream), &mut status) == 0 && status != 0
}

/// Wait for `stream` so an async D2H result can be read (the recorder's own call, unrecorded).
/// A capturing stream is never waited for (the driver would refuse and invalidate the capture):
/// a copy issued there only becomes a graph node, so there is no result to store yet.
pub(super) unsafe fn sync_stream(h: Export, stream: Handle) -> CUresult {
    if stream_is_capturing(h, stream) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    type Sync = unsafe extern "C" fn(Handle) -> CUresult;
    match real_fn::<Sync>(Export::cuStreamSynchronize) {
        Some(f) => f(effective_stream(h, stream)),
        None => CUDA_ERROR_NOT_FOUND,
    }
}

pub unsafe fn memcpy_dtoh_async(
    h: Export,
    dst: *mut c_void,
    src: u64,
    n: usize,
    stream: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let d2h_blob = if r == 0 && sync_stream(h, stream) == 0 {
        host_blob(dst, n)
    } else {
        None
    };
    rec(h, r, |_| CopyD2h {
        dst: dst as u64,
        src,
        bytes: n as u64,
        stream: stream as u64,
        d2h_blob,
    });
    r
}

/// Is `ptr` device memory (per the driver's pointer attributes)?
pub(super) unsafe fn is_device_ptr(ptr: u64) -> bool {
    type GetAttribute = unsafe extern "C" fn(*mut c_void, c_int, u64) -> CUresult;
    let Some(f) = driver_fn::<GetAttribute>(c"cuPointerGetAttribute") else {
        return false;
    };
    let mut ty: c_uint = 0;
    // CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2; CU_MEMORYTYPE_HOST = 1.
    f(&mut ty as *mut c_uint as *mut c_void, 2, ptr) == 0 && ty != 1
}

pub unsafe fn memcpy(
    h: Export,
    dst: u64,
    src: u64,
    n: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    generic_copy(h, dst, src, n, None, call)
}

pub unsafe fn memcpy_async(
    h: Export,
    dst: u64,
    src: u64,
    n: usize,
    stream: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    generic_copy(h, dst, src, n, Some(stream), call)
}

unsafe fn generic_copy(
    h: Export,
    dst: u64,
    src: u64,
    n: usize,
    stream: Option<Handle>,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let dir = direction::of(is_device_ptr(src), is_device_ptr(dst));
    let h2d_blob = if dir == direction::H2D {
        host_blob(src as *const c_void, n)
    } else {
        None
    };
    let r = call();
    let d2h_blob = match stream {
        _ if r != 0 || dir != direction::D2H => None,
        Some(s) if sync_stream(h, s) != 0 => None,
        _ => host_blob(dst as *const c_void, n),
    };
    rec(h, r, |_| CopyAny {
        dst,
        src,
        bytes: n as u64,
        stream: stream.unwrap_or(std::ptr::null_mut()) as u64,
        direction: dir,
        h2d_blob,
        d2h_blob,
    });
    r
}
