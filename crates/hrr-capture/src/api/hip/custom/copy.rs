//! Copies and memsets: H2D sources stored before the call, D2H results after it;
//! `hipMemcpyDefault` classified by the device ranges capture saw. Async D2H copies
//! (`hipMemcpyAsync` to host, `hipMemcpyDtoHAsync`) are recorded at once without their bytes,
//! which an `hrrHipMemcpyResult` event records when the copy has completed, from a host function
//! enqueued behind it (`hipLaunchHostFunc`; `hook::common::result_at_completion`, as CUDA's);
//! on a capturing stream nothing is enqueued. `hipMemcpyWithStream` and the symbol copies wait
//! for the stream at the call, as before.

use super::Call;
use crate::api::hip::calls::args;
use std::ffi::c_int;

use hrr_archive::ObjectId;
use hrr_calls::hip::ffi::{Handle, HipError, Memcpy3DParms, Ptr, HIP_ERROR_NOT_FOUND};
use hrr_calls::shapes::direction;
use hrr_calls::shapes::*;

use super::{host_blob, rec};
use crate::api::hip::calls::{real_fn, Export};
use crate::api::hip::state;
use crate::hook::common::{memcpy_dtoh_async_event, rec_seq, result_at_completion, LaunchHostFn};
use crate::recorder;

/// Wait for `stream` so an async D2H result can be read (the recorder's own call, unrecorded).
unsafe fn sync_stream(stream: Handle) -> HipError {
    type Sync = unsafe extern "C" fn(Handle) -> HipError;
    match real_fn::<Sync>(Export::hipStreamSynchronize) {
        Some(f) => f(stream),
        None => HIP_ERROR_NOT_FOUND,
    }
}

/// Store the bytes a D2H copy produced (after waiting for `stream` when the copy is async).
pub(crate) unsafe fn result_blob(
    r: HipError,
    dst: Ptr,
    n: usize,
    stream: Option<Handle>,
) -> Option<ObjectId> {
    if r != 0 {
        return None;
    }
    if let Some(s) = stream {
        if sync_stream(s) != 0 {
            return None;
        }
    }
    host_blob(dst, n)
}

/// `hipMemcpyKind` → direction; `hipMemcpyDefault` (4) from the recorded device ranges.
fn direction_of(kind: c_int, dst: Ptr, src: Ptr) -> u8 {
    match kind {
        0 => direction::H2H,
        1 => direction::H2D,
        2 => direction::D2H,
        3 => direction::D2D,
        _ => direction::of(state::is_device(src as u64), state::is_device(dst as u64)),
    }
}

unsafe fn generic_copy(
    h: Export,
    dst: Ptr,
    src: Ptr,
    n: usize,
    kind: c_int,
    stream: Option<Handle>,
    call: impl Call,
) -> HipError {
    let dir = direction_of(kind, dst, src);
    if dir == direction::D2H {
        crate::hook::results::claim(dst as usize, n);
    }
    let h2d_blob = if dir == direction::H2D {
        host_blob(src, n)
    } else {
        None
    };
    let r = call();
    // `hipMemcpyAsync`'s result is recorded when the copy completes (`later`).
    let later = matches!(h, Export::hipMemcpyAsync | Export::hipMemcpyAsync_spt)
        && stream.is_some_and(|s| !capturing(s));
    let d2h_blob = if dir == direction::D2H && !later {
        result_blob(r, dst, n, stream)
    } else {
        None
    };
    let seq = rec_seq(h, r, |_| CopyKind {
        dst: dst as u64,
        src: src as u64,
        bytes: n as u64,
        kind,
        stream: stream.unwrap_or(std::ptr::null_mut()) as u64,
        direction: dir,
        h2d_blob,
        d2h_blob,
    });
    match (stream, seq) {
        (Some(s), Some(copy)) if later && r == 0 && dir == direction::D2H => {
            result_later(copy, dst, n, s)
        }
        _ => {}
    }
    if stream.is_none() {
        recorder::flush_soft();
    }
    r
}

/// Is `stream` capturing into a graph (as capture saw `hipStreamBeginCapture`/`EndCapture`)?
fn capturing(stream: Handle) -> bool {
    state::is_capturing(stream as u64)
}

/// Have the result of the async D2H copy recorded as event `copy` recorded when it completes.
unsafe fn result_later(copy: u64, dst: Ptr, n: usize, stream: Handle) {
    result_at_completion(
        Export::hrrHipMemcpyResult,
        copy,
        (dst, n),
        stream,
        (real_fn::<LaunchHostFn>(Export::hipLaunchHostFunc), None),
        None,
        || sync_stream(stream) == 0,
    );
}

/// The `hrrHipMemcpyResult` pseudo-row's wrapper (no runtime entry point: never runs).
pub unsafe fn memcpy_result(_h: Export, _: args::MemcpyResult, call: impl Call) -> HipError {
    call()
}

pub unsafe fn memcpy(h: Export, a: args::Memcpy, call: impl Call) -> HipError {
    let args::Memcpy { dst, src, n, kind } = a;
    generic_copy(h, dst, src, n, kind, None, call)
}

pub unsafe fn memcpy_async(
    h: Export,
    dst: Ptr,
    src: Ptr,
    n: usize,
    kind: c_int,
    stream: Handle,
    call: impl Call,
) -> HipError {
    generic_copy(h, dst, src, n, kind, Some(stream), call)
}

pub unsafe fn memcpy_dtoh_async(h: Export, a: args::MemcpyDtoHAsync, call: impl Call) -> HipError {
    let args::MemcpyDtoHAsync { dst, n, stream, .. } = a;
    let later = !capturing(stream);
    let (r, seq) = memcpy_dtoh_async_event(h, (dst, a.src, n), stream, call, |r| {
        if later {
            None
        } else {
            result_blob(r, dst, n, Some(stream))
        }
    });
    if let Some(copy) = seq.filter(|_| later && r == 0) {
        result_later(copy, dst, n, stream);
    }
    r
}

/// Record a memset of `count` elements of `element_bytes` set to `value`.
fn memset_event(
    h: Export,
    r: HipError,
    dst: Ptr,
    value: u32,
    element_bytes: u32,
    count: usize,
    stream: Handle,
) {
    rec(h, r, |_| Memset {
        dst: dst as u64,
        value,
        element_bytes,
        count: count as u64,
        stream: stream as u64,
    });
}

/// `hipMemset2D`: `h` rows of `w` bytes, `pitch` apart, the value given as an `int`.
pub unsafe fn memset_2d_bytes(e: Export, a: args::Memset2D, r: HipError) {
    let args::Memset2D {
        dst,
        pitch,
        v,
        w,
        h,
    } = a;
    let stream = std::ptr::null_mut();
    memset_2d_bytes_async(
        e,
        args::Memset2DAsync {
            dst,
            pitch,
            v,
            w,
            h,
            stream,
        },
        r,
    )
}

/// `hipMemset2DAsync`: as [`memset_2d_bytes`], on a stream; recorded as CUDA's byte-wide 2D
/// memsets are (`hook::common::memset_2d_async`).
pub unsafe fn memset_2d_bytes_async(e: Export, a: args::Memset2DAsync, r: HipError) {
    let args::Memset2DAsync {
        dst,
        pitch,
        v,
        w,
        h,
        stream,
    } = a;
    crate::hook::common::memset_2d_async(e, dst, pitch, v as u8, w, h, stream, || r);
}

/// `hipMemset`: bytes, the value given as an `int`.
pub unsafe fn memset_bytes(h: Export, a: args::Memset, r: HipError) {
    let args::Memset { dst, v, n } = a;
    let stream = std::ptr::null_mut();
    memset_bytes_async(h, args::MemsetAsync { dst, v, n, stream }, r)
}

/// `hipMemsetAsync`: bytes, the value given as an `int`.
pub unsafe fn memset_bytes_async(h: Export, a: args::MemsetAsync, r: HipError) {
    let args::MemsetAsync { dst, v, n, stream } = a;
    memset_event(h, r, dst, v as u8 as u32, 1, n, stream);
}

/// [`pitched_fields`] of a 2D copy row's arguments `$a` (the rows name them alike).
macro_rules! pitched_fields {
    ($a:expr) => {
        pitched_fields(
            ($a.dst, $a.dpitch),
            ($a.src, $a.spitch),
            ($a.width, $a.height),
            $a.kind,
        )
    };
}

/// `hipMemcpy2D`: a pitched copy between linear memory, recorded as [`CopyPitched`] (memory types
/// of `CUDA_MEMCPY2D`), its host source rows packed before the call and its host destination
/// rows after it (the D2H check).
pub unsafe fn memcpy_2d(h: Export, a: args::Memcpy2D, call: impl Call) -> HipError {
    pitched(h, pitched_fields!(a), None, call)
}

/// `hipMemcpy2DAsync`: as [`memcpy_2d`]; a D2H result is read after waiting for its stream
/// (never on a capturing one).
pub unsafe fn memcpy_2d_async(h: Export, a: args::Memcpy2DAsync, call: impl Call) -> HipError {
    pitched(h, pitched_fields!(a), Some(a.stream), call)
}

/// The recorded fields of a 2D copy of `width` bytes by `height` rows between linear memory.
fn pitched_fields(
    (dst, dpitch): (Ptr, usize),
    (src, spitch): (Ptr, usize),
    (width, height): (usize, usize),
    kind: c_int,
) -> CopyPitched {
    use hrr_calls::cuda::ffi::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let direction = direction_of(kind, dst, src);
    let ty = |device: bool| {
        if device {
            CU_MEMORYTYPE_DEVICE
        } else {
            CU_MEMORYTYPE_HOST
        }
    };
    let src_dev = matches!(direction, direction::D2H | direction::D2D);
    let dst_dev = matches!(direction, direction::H2D | direction::D2D);
    CopyPitched {
        src_type: ty(src_dev),
        src_host: if src_dev { 0 } else { src as u64 },
        src_device: if src_dev { src as u64 } else { 0 },
        src_pitch: spitch as u64,
        dst_type: ty(dst_dev),
        dst_host: if dst_dev { 0 } else { dst as u64 },
        dst_device: if dst_dev { dst as u64 } else { 0 },
        dst_pitch: dpitch as u64,
        width_bytes: width as u64,
        height: height as u64,
        depth: 1,
        direction,
        ..Default::default()
    }
}

/// The recorded fields of the 3D copy `p` says (its sides pitched linear memory; an array side
/// is recorded with its handle and memory type array, and not replayed). `None`: no
/// parameters.
unsafe fn fields_3d(p: *const Memcpy3DParms) -> Option<CopyPitched> {
    use hrr_calls::cuda::ffi::CU_MEMORYTYPE_ARRAY;
    let p = p.as_ref()?;
    let [width, height, depth] = p.extent;
    let mut c = pitched_fields(
        (p.dst_ptr.ptr, p.dst_ptr.pitch),
        (p.src_ptr.ptr, p.src_ptr.pitch),
        (width, height),
        p.kind,
    );
    c.src_x = p.src_pos.x as u64;
    c.src_y = p.src_pos.y as u64;
    c.src_z = p.src_pos.z as u64;
    c.src_height = p.src_ptr.ysize as u64;
    c.dst_x = p.dst_pos.x as u64;
    c.dst_y = p.dst_pos.y as u64;
    c.dst_z = p.dst_pos.z as u64;
    c.dst_height = p.dst_ptr.ysize as u64;
    c.depth = depth as u64;
    if !p.src_array.is_null() {
        (c.src_type, c.src_array) = (CU_MEMORYTYPE_ARRAY, p.src_array as u64);
    }
    if !p.dst_array.is_null() {
        (c.dst_type, c.dst_array) = (CU_MEMORYTYPE_ARRAY, p.dst_array as u64);
    }
    Some(c)
}

/// `hipMemcpy3D`: recorded as [`CopyPitched`] like a 2D copy, slices packed too.
pub unsafe fn memcpy_3d(h: Export, a: args::Memcpy3D, call: impl Call) -> HipError {
    pitched_3d(h, a.p, None, call)
}

/// `hipMemcpy3DAsync`: as [`memcpy_3d`]; a D2H result is read after waiting for its stream.
pub unsafe fn memcpy_3d_async(h: Export, a: args::Memcpy3DAsync, call: impl Call) -> HipError {
    pitched_3d(h, a.p, Some(a.stream), call)
}

/// A 3D copy with parameters `p` (null: recorded with empty fields, the runtime's answer).
unsafe fn pitched_3d(
    h: Export,
    p: *const Memcpy3DParms,
    stream: Option<Handle>,
    call: impl Call,
) -> HipError {
    match fields_3d(p) {
        Some(c) => pitched(h, c, stream, call),
        None => {
            let r = call();
            rec(h, r, |_| CopyPitched::default());
            r
        }
    }
}

/// Run a pitched copy and record it (`stream` `None`: the blocking form); an async D2H
/// result is read after waiting for its stream (never a capturing one).
unsafe fn pitched(h: Export, c: CopyPitched, stream: Option<Handle>, call: impl Call) -> HipError {
    let result_there = |s: Handle| !capturing(s) && sync_stream(s) == 0;
    crate::hook::pitched::copy_and_record(h, c, stream, call, result_there).0
}
