//! Allocations and host memory that need logic: managed and mapped host memory (tracked by
//! [`crate::api::cuda::hostmem`] so the host's reads and writes are recorded), registration
//! (contents stored), the host-visible memory pseudo-calls, and memory pools (properties,
//! attribute values and access descriptors read from their structs).

#![allow(clippy::missing_safety_doc)]

use super::Call;
use crate::api::cuda::calls::args;
use std::ffi::{c_int, c_uint, c_void};

use hrr_calls::cuda::ffi::{CUresult, Handle};
use hrr_calls::shapes::*;

use super::rec;
use crate::api::cuda::calls::Export;
use crate::api::cuda::{digest, hostmem};
use crate::hook::args::{bytes_at, out, out_addr};
use crate::hook::common;

/// `CU_MEMHOSTALLOC_DEVICEMAP` and `CU_MEMHOSTREGISTER_DEVICEMAP`.
pub(crate) const DEVICEMAP: c_uint = 2;
/// `sizeof(CUmemPoolProps)`.
const POOL_PROPS_BYTES: usize = 88;
/// `sizeof(CUmemAccessDesc)`.
const ACCESS_DESC_BYTES: usize = 12;

/// A device allocation of `size` bytes returned `r`: recorded as `shape()`; one that can hold a
/// result the GPU digests has the digest kernels loaded into its context now, not inside that
/// result's copy ([`digest::prepare`]).
unsafe fn allocated<S: hrr_calls::Shape>(
    h: Export,
    r: CUresult,
    size: usize,
    shape: impl FnOnce() -> S,
) {
    rec(h, r, |_| shape());
    if r == 0 {
        digest::prepare(size);
    }
}

/// `cuMemAlloc` ([`allocated`]).
pub unsafe fn mem_alloc(h: Export, a: args::MemAlloc, r: CUresult) {
    let args::MemAlloc { dptr, size } = a;
    allocated(h, r, size, || MemAlloc {
        dptr: out(dptr),
        bytesize: size as u64,
    });
}

/// `cuMemMap` ([`allocated`]): memory mapped into a reserved range (PyTorch's expandable
/// segments) holds results the GPU digests too, where the device may read it.
pub unsafe fn mem_map(h: Export, a: args::MemMap, r: CUresult) {
    allocated(h, r, a.size, || MemMap {
        ptr: a.ptr,
        size: a.size as u64,
        offset: a.offset as u64,
        handle: a.handle,
        flags: a.flags,
    });
}

/// `cuMemAllocAsync` ([`allocated`]).
pub unsafe fn mem_alloc_async(h: Export, a: args::MemAllocAsync, r: CUresult) {
    let args::MemAllocAsync { dptr, size, stream } = a;
    allocated(h, r, size, || MemAllocAsync {
        dptr: out(dptr),
        bytesize: size as u64,
        stream: stream as u64,
    });
}

/// `cuMemAllocFromPoolAsync` ([`allocated`]).
pub unsafe fn mem_alloc_from_pool_async(h: Export, a: args::MemAllocFromPoolAsync, r: CUresult) {
    let args::MemAllocFromPoolAsync {
        dptr,
        size,
        pool,
        stream,
    } = a;
    allocated(h, r, size, || MemAllocFromPool {
        dptr: out(dptr),
        bytesize: size as u64,
        pool: pool as u64,
        stream: stream as u64,
    });
}

/// `cuMemAllocPitch` ([`allocated`]; its size: the pitch times the height).
pub unsafe fn mem_alloc_pitch(h: Export, a: args::MemAllocPitch, r: CUresult) {
    let args::MemAllocPitch {
        dptr,
        pitch,
        width,
        height,
        elem,
    } = a;
    let pitch = out(pitch);
    allocated(h, r, pitch.saturating_mul(height), || MemAllocPitch {
        dptr: out(dptr),
        pitch: pitch as u64,
        width: width as u64,
        height: height as u64,
        element_bytes: elem,
    });
}

pub unsafe fn mem_alloc_managed(h: Export, a: args::MemAllocManaged, r: CUresult) {
    let args::MemAllocManaged { dptr, size, flags } = a;
    let p = out(dptr);
    host_visible(r, p, size, true);
    rec(h, r, |_| MemAllocFlags {
        dptr: p,
        bytesize: size as u64,
        flags,
    });
}

/// Host-visible memory at `p` that a call (status `r`) made: when it succeeded, tracked if the
/// device maps it (managed memory, pinned memory allocated or registered with `DEVICEMAP`),
/// else remembered as pinned in case its device pointer is asked.
fn host_visible(r: CUresult, p: u64, size: usize, mapped: bool) {
    if r != 0 {
        return;
    }
    if mapped {
        hostmem::track(p, size);
    } else {
        hostmem::note_pinned(p, size);
    }
}

pub unsafe fn mem_host_alloc(h: Export, a: args::MemHostAlloc, r: CUresult) {
    let args::MemHostAlloc { pp, size, flags } = a;
    let p = out_addr(pp);
    host_visible(r, p, size, flags & DEVICEMAP != 0);
    rec(h, r, |_| HostAlloc {
        host_ptr: p,
        bytesize: size as u64,
        flags,
    });
}

pub unsafe fn mem_alloc_host(h: Export, a: args::MemAllocHost, r: CUresult) {
    let args::MemAllocHost { pp, size } = a;
    let p = out_addr(pp);
    host_visible(r, p, size, false);
    rec(h, r, |_| HostAllocPlain {
        host_ptr: p,
        bytesize: size as u64,
    });
}

pub unsafe fn host_register(h: Export, a: args::MemHostRegister, call: impl Call) -> CUresult {
    let args::MemHostRegister { p, size, flags } = a;
    let r = common::host_register(h, p, size, flags, call);
    host_visible(r, p as u64, size, flags & DEVICEMAP != 0);
    r
}

pub unsafe fn host_get_device_pointer(h: Export, a: args::MemHostGetDevicePointer, r: CUresult) {
    let args::MemHostGetDevicePointer { dptr, p, flags } = a;
    if r == 0 {
        hostmem::promote(p as u64);
    }
    rec(h, r, |_| HostDevicePointer {
        dptr: out(dptr),
        host_ptr: p as u64,
        flags,
    });
}

/// A free of host-visible memory (`host`: of host memory, else device memory, which is host
/// visible when managed) stops its tracking before the memory goes, and waits for the async D2H
/// results being read from it (`hook::results::claim`: one a synchronisation on another thread
/// is recording must not lose its bytes under it; one whose copy the program cannot know
/// completed is dropped, its bytes freed unread). Its length is the tracked one, else one byte
/// (results starting at `p`); plain device memory holds no result.
unsafe fn freeing<S: hrr_calls::Shape>(
    h: Export,
    (p, host): (u64, bool),
    call: impl Call,
    shape: S,
) -> CUresult {
    match (hostmem::untrack(p), host) {
        (Some(n), _) => crate::hook::results::claim(p as usize, n),
        (None, true) => crate::hook::results::claim(p as usize, 1),
        (None, false) => {}
    }
    let r = call();
    rec(h, r, |_| shape);
    r
}

pub unsafe fn mem_free_host(h: Export, a: args::MemFreeHost, call: impl Call) -> CUresult {
    let args::MemFreeHost { p } = a;
    freeing(h, (p as u64, true), call, HostPtr { host_ptr: p as u64 })
}

pub unsafe fn mem_host_unregister(
    h: Export,
    a: args::MemHostUnregister,
    call: impl Call,
) -> CUresult {
    let args::MemHostUnregister { p } = a;
    freeing(h, (p as u64, true), call, HostPtr { host_ptr: p as u64 })
}

pub unsafe fn mem_free(h: Export, a: args::MemFree, call: impl Call) -> CUresult {
    let args::MemFree { dptr } = a;
    crate::api::cuda::freecheck::before_free(dptr);
    freeing(h, (dptr, false), call, DevicePtr { dptr })
}

/// `cuMemUnmap`: like a free, what the range holds is recorded first while the process has
/// copied no result back (`freecheck::before_unmap`).
pub unsafe fn mem_unmap(h: Export, a: args::MemUnmap, call: impl Call) -> CUresult {
    let args::MemUnmap { ptr, size } = a;
    crate::api::cuda::freecheck::before_unmap(ptr, size);
    let r = call();
    rec(h, r, |_| Range {
        ptr,
        size: size as u64,
    });
    r
}

/// `cuDevicePrimaryCtxRelease`, `cuDevicePrimaryCtxReset`: host-visible memory may go with
/// the context, so it is no longer tracked (before the call frees it), and async D2H results
/// still waiting for their event are settled first (`hook::results::settle_deferred`).
pub unsafe fn device_context_gone(h: Export, dev: c_int, call: impl Call) -> CUresult {
    crate::hook::results::settle_deferred();
    crate::api::cuda::digest::forget(None);
    hostmem::untrack_all();
    let r = call();
    rec(h, r, |_| Device { device: dev });
    r
}

/// `cuCtxDestroy`: as [`device_context_gone`].
pub unsafe fn ctx_destroy(h: Export, a: args::CtxDestroy, call: impl Call) -> CUresult {
    let args::CtxDestroy { ctx } = a;
    crate::hook::results::settle_deferred();
    crate::api::cuda::digest::forget(Some(ctx));
    hostmem::untrack_all();
    let r = call();
    rec(h, r, |_| Ctx { ctx: ctx as u64 });
    r
}

/// A pseudo-call row (`hrrHostMemWrite`, `hrrHostMemCheck`): no driver exports it, so its
/// wrapper never gets here; capture records these events itself ([`hostmem`]).
pub unsafe fn pseudo_call(_h: Export, call: impl FnOnce()) {
    call()
}

pub unsafe fn mem_pool_create(h: Export, a: args::MemPoolCreate, r: CUresult) {
    let args::MemPoolCreate { pool, props } = a;
    rec(h, r, |_| PoolCreate {
        pool: out_addr(pool),
        props: bytes_at(props, POOL_PROPS_BYTES).to_vec(),
    });
}

/// Pool attributes 1–3 (`CU_MEMPOOL_ATTR_REUSE_*`) are ints; the others `cuuint64_t`.
unsafe fn pool_value(attr: c_int, value: *const c_void) -> u64 {
    match (value.is_null(), attr) {
        (true, _) => 0,
        (false, 1..=3) => *(value as *const c_int) as u64,
        _ => *(value as *const u64),
    }
}

/// `cuMemPoolSetAttribute` (value read before the call) and `cuMemPoolGetAttribute` (after).
pub unsafe fn mem_pool_attribute(
    h: Export,
    pool: Handle,
    attr: c_int,
    value: *mut c_void,
    call: impl Call,
) -> CUresult {
    let set = h == Export::cuMemPoolSetAttribute;
    let before = if set { pool_value(attr, value) } else { 0 };
    let r = call();
    let value = if set {
        before
    } else if r == 0 {
        pool_value(attr, value)
    } else {
        0
    };
    rec(h, r, |_| PoolAttribute {
        pool: pool as u64,
        attrib: attr,
        value,
    });
    r
}

pub unsafe fn mem_pool_set_access(h: Export, a: args::MemPoolSetAccess, r: CUresult) {
    let args::MemPoolSetAccess { pool, desc, count } = a;
    rec(h, r, |_| PoolSetAccess {
        pool: pool as u64,
        desc: bytes_at(desc, count.min(64) * ACCESS_DESC_BYTES).to_vec(),
        count: count as u64,
    });
}

/// `cuStreamSynchronize`: the tracker of host-visible memory learns which stream completed,
/// so that regions launches on other streams may still be writing are not read now.
pub unsafe fn stream_synchronize(
    h: Export,
    a: args::StreamSynchronize,
    call: impl Call,
) -> CUresult {
    let args::StreamSynchronize { s } = a;
    hostmem::synchronising_stream(s as u64);
    let r = call();
    crate::hook::returned(hrr_calls::Kind::Sync);
    rec(h, r, |_| Stream { stream: s as u64 });
    r
}

/// `cuStreamDestroy`: async D2H results of copies on the stream still waiting for their event
/// are settled first, and no host function is enqueued for a claimed result until the stream
/// is gone (`hook::results::stream_going`).
pub unsafe fn stream_destroy(h: Export, a: args::StreamDestroy, call: impl Call) -> CUresult {
    let args::StreamDestroy { s } = a;
    let settled = crate::hook::results::stream_going(s);
    let r = call();
    drop(settled);
    rec(h, r, |_| Stream { stream: s as u64 });
    r
}

/// `cuIpcOpenMemHandle`: memory another process exported, opened here; recorded with the
/// handle's bytes (which pair it with the export at replay) and the size of the allocation
/// the driver mapped (`cuMemGetAddressRange`), which replay translates as a whole.
pub unsafe fn ipc_open_mem_handle(h: Export, a: args::IpcOpenMemHandle, r: CUresult) {
    let args::IpcOpenMemHandle {
        dptr,
        handle,
        flags,
    } = a;
    let opened = out(dptr);
    let bytes = if r == 0 { allocation_bytes(opened) } else { 0 };
    rec(h, r, |_| IpcOpenMem {
        dptr: opened,
        handle: handle.0.to_vec(),
        flags,
        bytes,
    });
}

/// The size of the allocation holding `dptr`, asked of the driver (0 when it cannot say).
unsafe fn allocation_bytes(dptr: u64) -> u64 {
    type GetRange = unsafe extern "C" fn(*mut u64, *mut usize, u64) -> CUresult;
    let Some(get) = crate::api::cuda::loader::driver_fn::<GetRange>(c"cuMemGetAddressRange_v2")
    else {
        return 0;
    };
    let (mut base, mut size) = (0u64, 0usize);
    match get(&mut base, &mut size, dptr) {
        0 if base == dptr => size as u64,
        _ => 0,
    }
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` and `CU_MEM_HANDLE_TYPE_FABRIC`.
const HANDLE_POSIX_FD: c_int = 1;
const HANDLE_FABRIC: c_int = 8;

/// What pairs an OS handle of type `kind` at `os` (for a file descriptor, the descriptor
/// itself) across processes: a descriptor's file by device and inode numbers, a fabric
/// handle's 64 bytes; empty for other types.
unsafe fn shareable_key(kind: c_int, os: *const c_void) -> Vec<u8> {
    match kind {
        HANDLE_POSIX_FD => {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(os as usize as c_int, &mut st) != 0 {
                return Vec::new();
            }
            let mut key = (st.st_dev as u64).to_le_bytes().to_vec();
            key.extend_from_slice(&(st.st_ino as u64).to_le_bytes());
            key
        }
        HANDLE_FABRIC => bytes_at(os as *const u8, 64).to_vec(),
        _ => Vec::new(),
    }
}

/// `cuMemExportToShareableHandle`: recorded with the key of the OS handle it made.
pub unsafe fn mem_export_to_shareable_handle(
    h: Export,
    a: args::MemExportToShareableHandle,
    r: CUresult,
) {
    let args::MemExportToShareableHandle {
        out,
        handle,
        kind,
        flags,
    } = a;
    let key = match (r, kind) {
        (0, HANDLE_POSIX_FD) if !out.is_null() => {
            shareable_key(kind, *(out as *const c_int) as usize as *const c_void)
        }
        (0, _) if !out.is_null() => shareable_key(kind, out),
        _ => Vec::new(),
    };
    rec(h, r, |_| Shareable {
        handle,
        kind: kind as u32,
        flags,
        key,
    });
}

/// `cuMemImportFromShareableHandle`: recorded with the key of the OS handle it imported (read
/// before the call, which may close a descriptor).
pub unsafe fn mem_import_from_shareable_handle(
    h: Export,
    a: args::MemImportFromShareableHandle,
    call: impl Call,
) -> CUresult {
    let args::MemImportFromShareableHandle { handle, os, kind } = a;
    let key = shareable_key(kind, os);
    let r = call();
    rec(h, r, |_| Shareable {
        handle: out(handle),
        kind: kind as u32,
        flags: 0,
        key,
    });
    r
}
