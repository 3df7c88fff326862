//! Copies and memsets: H2D sources stored before the call, D2H results after it; generic
//! copies classified by pointer attributes.
//!
//! Asynchronous D2H copies (`cuMemcpyDtoHAsync`, `cuMemcpyAsync` to host) never wait: the copy
//! is recorded at once without its bytes, and a host function enqueued behind it on the same
//! stream (`cuLaunchHostFunc`, the real entry point) reads the destination when the copy has
//! completed and records an `hrrMemcpyResult` event naming the copy's sequence number. The host
//! function records before it returns, and no synchronisation of that stream (stream, event or
//! context synchronize, a successful query) can return before it has, so the result is in
//! events.bin before the event of the program's synchronisation. On a capturing stream the copy
//! only becomes a graph node: nothing is enqueued; its host side is remembered for the capture
//! (`State::capture_regions`), so each launch of the graph records the bytes it reads and
//! writes (`graph/`). Where the host function cannot be enqueued, the stream is synchronised
//! and the result recorded at once.

#![allow(clippy::missing_safety_doc)]

use super::Call;
use crate::api::cuda::calls::args;
use std::ffi::{c_int, c_uint, c_void};

use hrr_calls::cuda::ffi::{CUresult, Handle, CUDA_ERROR_NOT_FOUND};
use hrr_calls::shapes::direction;
use hrr_calls::shapes::*;

use crate::api::cuda::calls::{effective_stream, real_fn, Export};
use crate::api::cuda::loader::driver_fn;
use crate::api::cuda::state::{self, HostRegion};
use crate::hook::common::{
    host_blob_alongside, memcpy_dtoh_async_event, rec_seq, submit_copy, submit_upload, LaunchHostFn,
};

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

/// The id of the stream capture `stream` takes part in (`cuStreamGetCaptureInfo`), if any.
pub(super) unsafe fn capture_id(h: Export, stream: Handle) -> Option<u64> {
    // (stream, status, id, graph, dependencies, [edge data,] count): every version's optional
    // outputs are null here, so one signature serves them all.
    type Info = unsafe extern "C" fn(
        Handle,
        *mut c_int,
        *mut u64,
        *mut c_void,
        *mut c_void,
        *mut c_void,
        *mut c_void,
    ) -> CUresult;
    let null = std::ptr::null_mut();
    let f = [
        c"cuStreamGetCaptureInfo_v3",
        c"cuStreamGetCaptureInfo_v2",
        c"cuStreamGetCaptureInfo",
    ]
    .into_iter()
    .find_map(|name| driver_fn::<Info>(name))?;
    let (mut status, mut id) = (0, 0u64);
    let r = f(
        effective_stream(h, stream),
        &mut status,
        &mut id,
        null,
        null,
        null,
        null,
    );
    (r == 0 && status == 1).then_some(id) // CU_STREAM_CAPTURE_STATUS_ACTIVE
}

/// A copy with host side `(ptr, len)` (`to_host`: written) issued on `stream`: when the stream
/// is capturing, remember the region for the graph the capture makes and say so.
pub(super) unsafe fn note_captured_copy(
    h: Export,
    stream: Handle,
    (ptr, len): (u64, u64),
    to_host: bool,
) -> bool {
    if stream.is_null() || !stream_is_capturing(h, stream) {
        return false;
    }
    if let Some(id) = capture_id(h, stream) {
        let region = HostRegion { ptr, len, to_host };
        state::with(|st| st.capture_regions.entry(id).or_default().push(region));
    }
    true
}

/// `cuMemcpyHtoDAsync`: as every H2D copy (`hook::common`), and inside a stream capture the
/// source region is remembered for the graph's launches. A large source in page-locked memory
/// outside a capture is read after the call returns (`hook::common::source_later`).
pub unsafe fn memcpy_htod_async(h: Export, a: args::MemcpyHtoDAsync, call: impl Call) -> CUresult {
    let args::MemcpyHtoDAsync {
        dst,
        src,
        n,
        stream,
    } = a;
    if source_later_applies(h, src as u64, n, stream) {
        submit_upload(dst, src, n);
        let r = call();
        let seq = rec_seq(h, r, |_| CopyH2d {
            dst,
            src: src as u64,
            bytes: n as u64,
            stream: stream as u64,
            h2d_blob: None,
        });
        if let Some(copy) = seq.filter(|_| r == 0) {
            source_later(h, copy, (src, n), stream);
        }
        return r;
    }
    let r = crate::hook::common::memcpy_htod_async(h, dst, src, n, stream, call);
    if r == 0 {
        note_captured_copy(h, stream, (src as u64, n as u64), false);
    }
    r
}

/// Whether an async H2D copy of `n` bytes from `src` on `stream` has its source read after the
/// call: large, from page-locked host memory only the host writes (a pageable source is staged
/// by the driver before the call returns, and the program may change it at once; managed or
/// device-mapped memory may be written by kernels queued behind the copy), outside a stream
/// capture (where the copy becomes a graph node reading the source at each launch).
unsafe fn source_later_applies(h: Export, src: u64, n: usize, stream: Handle) -> bool {
    n >= crate::hook::common::SOURCE_LATER_MIN
        && crate::recorder::active()
        && is_plain_pinned(src)
        && !crate::api::cuda::hostmem::tracks(src)
        && !stream_is_capturing(h, stream)
}

/// Have the source of the async H2D copy recorded as event `copy` recorded after the call
/// (`hook::common::source_later`).
unsafe fn source_later(h: Export, copy: u64, src: (*const c_void, usize), stream: Handle) {
    let s = effective_stream(h, stream);
    crate::hook::common::source_later(Export::hrrMemcpySource, copy, src, s);
}

/// Is `ptr` page-locked host memory (host memory type, not managed)?
unsafe fn is_plain_pinned(ptr: u64) -> bool {
    pointer_attribute(ptr, ATTR_MEMORY_TYPE) == Some(MEMORYTYPE_HOST)
        && pointer_attribute(ptr, ATTR_IS_MANAGED) == Some(0)
}

/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`, `_IS_MANAGED`; `CU_MEMORYTYPE_HOST`, `_DEVICE`.
pub(crate) const ATTR_MEMORY_TYPE: c_int = 2;
pub(crate) const ATTR_IS_MANAGED: c_int = 8;
const MEMORYTYPE_HOST: c_uint = 1;
pub(crate) const MEMORYTYPE_DEVICE: c_uint = 2;

/// A 32-bit pointer attribute of `ptr` (`None`: the driver does not know the memory, as for
/// pageable host memory, or has no `cuPointerGetAttribute`).
unsafe fn pointer_attribute(ptr: u64, attr: c_int) -> Option<c_uint> {
    type GetAttribute = unsafe extern "C" fn(*mut c_void, c_int, u64) -> CUresult;
    let f = driver_fn::<GetAttribute>(c"cuPointerGetAttribute")?;
    let mut v: c_uint = 0;
    (f(&mut v as *mut c_uint as *mut c_void, attr, ptr) == 0).then_some(v)
}

/// The `hrrMemcpySource` pseudo-row's wrapper (no real entry point: never runs; the events are
/// recorded by `hook::common::source_later`).
pub unsafe fn memcpy_source(_h: Export, _: args::MemcpySource, call: impl Call) -> CUresult {
    call()
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

/// After the async D2H copy recorded as event `copy` was issued: have its result recorded
/// when it completes (see the module docs). A copy into pageable memory has completed when the
/// call returns (CUDA's API synchronisation rules), and the program may reuse that memory at
/// once (a stack variable, say): its result is recorded now, not by a host function later.
/// A large result into memory the driver knows has its digests taken on the GPU behind the
/// copy (`api::cuda::digest::behind`), so that the host need not read it.
unsafe fn result_at_completion(
    h: Export,
    copy: u64,
    (dst, src, n): (*mut c_void, u64, usize),
    stream: Handle,
) {
    let pageable = is_pageable(dst as u64);
    if !pageable {
        crate::api::cuda::hostmem::async_copy();
    }
    let stream = effective_stream(h, stream);
    let digests = if pageable {
        None
    } else {
        crate::api::cuda::digest::behind(src, n, stream)
    };
    crate::hook::common::result_at_completion(
        Export::hrrMemcpyResult,
        copy,
        (dst, n),
        stream,
        (
            real_fn::<LaunchHostFn>(Export::cuLaunchHostFunc).filter(|_| !pageable),
            event_ops(),
        ),
        digests,
        || pageable || sync_stream(h, stream) == 0,
    );
}

/// The driver's event calls, for results learnt from an event behind their copy
/// (`hook::results::Deferred`); `None` where one is missing.
unsafe fn event_ops() -> Option<crate::hook::common::EventOps> {
    Some(crate::hook::common::EventOps {
        create: real_fn(Export::cuEventCreate)?,
        record: real_fn(Export::cuEventRecord)?,
        fns: crate::hook::results::EventFns {
            query: real_fn(Export::cuEventQuery)?,
            synchronize: real_fn(Export::cuEventSynchronize)?,
            destroy: real_fn(Export::cuEventDestroy_v2)?,
            launch_host_fn: real_fn(Export::cuLaunchHostFunc)?,
            is_capturing: driver_fn(c"cuStreamIsCapturing")?,
        },
    })
}

/// Is `ptr` host memory the driver does not know (neither pinned, registered, managed nor
/// device memory)?
unsafe fn is_pageable(ptr: u64) -> bool {
    driver_fn::<*const c_void>(c"cuPointerGetAttribute").is_some()
        && pointer_attribute(ptr, ATTR_MEMORY_TYPE).is_none()
}

pub unsafe fn memcpy_dtoh_async(h: Export, a: args::MemcpyDtoHAsync, call: impl Call) -> CUresult {
    let args::MemcpyDtoHAsync { dst, n, stream, .. } = a;
    let (r, seq) = memcpy_dtoh_async_event(h, (dst, a.src, n), stream, call, |_| None);
    if let Some(copy) = seq.filter(|_| r == 0) {
        if !note_captured_copy(h, stream, (dst as u64, n as u64), true) {
            result_at_completion(h, copy, (dst, a.src, n), stream);
        }
    }
    r
}

/// The `hrrMemcpyResult` pseudo-row's wrapper (it has no real entry point, so this never runs:
/// the events are recorded by the host function of `hook::common::result_at_completion`).
pub unsafe fn memcpy_result(_h: Export, _: args::MemcpyResult, call: impl Call) -> CUresult {
    call()
}

/// Is `ptr` device memory (per the driver's pointer attributes)?
pub(super) unsafe fn is_device_ptr(ptr: u64) -> bool {
    pointer_attribute(ptr, ATTR_MEMORY_TYPE).is_some_and(|t| t != MEMORYTYPE_HOST)
}

pub unsafe fn memcpy(h: Export, a: args::Memcpy, call: impl Call) -> CUresult {
    let args::Memcpy { dst, src, n } = a;
    generic_copy(h, dst, src, n, None, call)
}

pub unsafe fn memcpy_async(h: Export, a: args::MemcpyAsync, call: impl Call) -> CUresult {
    generic_copy(h, a.dst, a.src, a.n, Some(a.stream), call)
}

unsafe fn generic_copy(
    h: Export,
    dst: u64,
    src: u64,
    n: usize,
    stream: Option<Handle>,
    call: impl Call,
) -> CUresult {
    let dir = direction::of(is_device_ptr(src), is_device_ptr(dst));
    if dir == direction::D2H {
        crate::hook::results::claim(dst as usize, n);
        if stream.is_none() {
            crate::api::cuda::hostmem::blocking_download();
        }
    }
    // an async upload from page-locked memory: its source is read after the call
    let later = dir == direction::H2D && stream.is_some_and(|s| source_later_applies(h, src, n, s));
    // a host source's bytes are the copy's own (recorded with it or after it)
    if dir == direction::H2D {
        submit_upload(dst, src as *const c_void, n);
    } else {
        submit_copy(dst, Some(src), n);
    }
    let (h2d_blob, r) = if dir == direction::H2D && !later {
        host_blob_alongside(h, src as *const c_void, n, call)
    } else {
        (None, call())
    };
    // A blocking copy's result is there now; an async one's is recorded when it completes.
    let d2h_blob = match stream {
        None if r == 0 && dir == direction::D2H => {
            let staged = crate::recorder::BlobWrite::Staged;
            crate::recorder::put_result(
                &crate::api::cuda::API,
                dst as *const c_void,
                n,
                src,
                staged,
            )
        }
        _ => None,
    };
    let seq = rec_seq(h, r, |_| CopyAny {
        dst,
        src,
        bytes: n as u64,
        stream: stream.unwrap_or(std::ptr::null_mut()) as u64,
        direction: dir,
        h2d_blob,
        d2h_blob,
    });
    match (stream, seq) {
        (Some(s), Some(copy))
            if r == 0
                && dir == direction::D2H
                && !note_captured_copy(h, s, (dst, n as u64), true) =>
        {
            result_at_completion(h, copy, (dst as *mut c_void, src, n), s)
        }
        (Some(s), Some(copy)) if r == 0 && later => {
            source_later(h, copy, (src as *const c_void, n), s)
        }
        (Some(s), Some(_)) if r == 0 && dir == direction::H2D => {
            note_captured_copy(h, s, (src, n as u64), false);
        }
        _ => {}
    }
    r
}
