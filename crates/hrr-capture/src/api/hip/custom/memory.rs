//! Allocations (their live ranges remembered for `hipMemcpyDefault`), host memory and VMM calls
//! that need logic.

use super::Call;
use crate::api::hip::calls::args;

use hrr_calls::hip::ffi::{HipError, Ptr};
use hrr_calls::shapes::*;

use super::{call_tracking, rec};
use crate::api::hip::calls::Export;
use crate::api::hip::state;
use crate::hook::args::{out, out_addr};
use crate::recorder::Recorder;

/// Record an allocation of `size` bytes at `*ptr` whose shape `fill` builds from the address.
unsafe fn allocated<S: hrr_calls::Shape>(
    h: Export,
    r: HipError,
    ptr: *mut Ptr,
    size: u64,
    fill: impl FnOnce(&mut Recorder, u64) -> S,
) {
    let d = out_addr(ptr);
    if r == 0 {
        state::note_device(d, size);
    }
    rec(h, r, |rc| fill(rc, d));
}

/// Make a call that releases the device range at `ptr` (forgotten when it succeeded) and record
/// the shape `fill` builds.
unsafe fn released<S: hrr_calls::Shape>(
    h: Export,
    ptr: Ptr,
    call: impl Call,
    fill: impl FnOnce() -> S,
) -> HipError {
    call_tracking(h, call, || state::forget_device(ptr as u64), |_| fill())
}

pub unsafe fn malloc(h: Export, a: args::Malloc, r: HipError) {
    let args::Malloc { ptr, size } = a;
    allocated(h, r, ptr, size as u64, |_, dptr| MemAlloc {
        dptr,
        bytesize: size as u64,
    });
}

pub unsafe fn malloc_flags(h: Export, a: args::ExtMallocWithFlags, r: HipError) {
    let args::ExtMallocWithFlags { ptr, size, flags } = a;
    allocated(h, r, ptr, size as u64, |_, dptr| MemAllocFlags {
        dptr,
        bytesize: size as u64,
        flags,
    });
}

pub unsafe fn malloc_managed(h: Export, a: args::MallocManaged, r: HipError) {
    let args::MallocManaged { ptr, size, flags } = a;
    allocated(h, r, ptr, size as u64, |rc, dptr| {
        rc.note_unreplayable(
            "hipMallocManaged",
            "managed memory is not placed; host-side accesses are not recorded",
        );
        MemAllocFlags {
            dptr,
            bytesize: size as u64,
            flags,
        }
    });
}

pub unsafe fn malloc_async(h: Export, a: args::MallocAsync, r: HipError) {
    let args::MallocAsync { ptr, size, stream } = a;
    allocated(h, r, ptr, size as u64, |_, dptr| MemAllocAsync {
        dptr,
        bytesize: size as u64,
        stream: stream as u64,
    });
}

pub unsafe fn malloc_from_pool_async(h: Export, a: args::MallocFromPoolAsync, r: HipError) {
    allocated(h, r, a.ptr, a.size as u64, |_, dptr| MemAllocFromPool {
        dptr,
        bytesize: a.size as u64,
        pool: a.pool as u64,
        stream: a.stream as u64,
    });
}

/// Bytes of a `hipMemPoolProps` (as `CUmemPoolProps`).
const POOL_PROPS_BYTES: usize = 88;

pub unsafe fn mem_pool_create(h: Export, a: args::MemPoolCreate, r: HipError) {
    rec(h, r, |_| PoolCreate {
        pool: out_addr(a.pool),
        props: crate::hook::args::bytes_at(a.props, POOL_PROPS_BYTES).to_vec(),
    });
}

pub unsafe fn malloc_pitch(h: Export, a: args::MallocPitch, r: HipError) {
    let args::MallocPitch {
        ptr,
        pitch,
        width,
        height,
    } = a;
    let pitch = out(pitch) as u64;
    allocated(h, r, ptr, pitch.saturating_mul(height as u64), |_, dptr| {
        MallocPitch {
            dptr,
            pitch,
            width: width as u64,
            height: height as u64,
        }
    });
}

pub unsafe fn free(h: Export, a: args::Free, call: impl Call) -> HipError {
    let args::Free { ptr } = a;
    released(h, ptr, call, || DevicePtr { dptr: ptr as u64 })
}

pub unsafe fn free_async(h: Export, a: args::FreeAsync, call: impl Call) -> HipError {
    let args::FreeAsync { ptr, stream } = a;
    released(h, ptr, call, || MemFreeAsync {
        dptr: ptr as u64,
        stream: stream as u64,
    })
}

pub unsafe fn mem_map(h: Export, a: args::MemMap, call: impl Call) -> HipError {
    let args::MemMap {
        ptr,
        size,
        offset,
        handle,
        flags,
    } = a;
    call_tracking(
        h,
        call,
        || state::note_device(ptr as u64, size as u64),
        |_| MemMap {
            ptr: ptr as u64,
            size: size as u64,
            offset: offset as u64,
            handle,
            flags,
        },
    )
}

pub unsafe fn mem_unmap(h: Export, a: args::MemUnmap, call: impl Call) -> HipError {
    let args::MemUnmap { ptr, size } = a;
    released(h, ptr, call, || Range {
        ptr: ptr as u64,
        size: size as u64,
    })
}
