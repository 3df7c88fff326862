//! Allocations and host memory that need logic: managed and mapped memory (noted unreplayable), registration (contents stored), VMM property and access structs.

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_uint, c_void};

use hrr_calls::cuda::ffi::CUresult;
use hrr_calls::shapes::*;

use super::{host_blob, rec};
use crate::api::cuda::calls::Export;
use crate::hook::args::{bytes_at, out};

pub unsafe fn mem_alloc_managed(
    h: Export,
    dptr: *mut u64,
    size: usize,
    flags: c_uint,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |rc| {
        rc.note_unreplayable(
            "cuMemAllocManaged",
            "managed memory is not placed; host-side accesses are not recorded",
        );
        MemAllocFlags {
            dptr: out(dptr),
            bytesize: size as u64,
            flags,
        }
    });
    r
}

pub unsafe fn mem_host_register(
    h: Export,
    p: *mut c_void,
    size: usize,
    flags: c_uint,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let contents = host_blob(p, size);
    let r = call();
    rec(h, r, |_| HostRegister {
        host_ptr: p as u64,
        bytesize: size as u64,
        flags,
        contents,
    });
    r
}

pub unsafe fn mem_host_get_device_pointer(
    h: Export,
    dptr: *mut u64,
    p: *mut c_void,
    flags: c_uint,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |rc| {
        rc.note_unreplayable(
            "cuMemHostGetDevicePointer_v2",
            "mapped host memory is read by kernels but its later host-side writes are not recorded",
        );
        HostDevicePointer {
            dptr: out(dptr),
            host_ptr: p as u64,
            flags,
        }
    });
    r
}

/// `sizeof(CUmemAllocationProp)`.
const MEM_PROP_BYTES: usize = 32;
/// `sizeof(CUmemAccessDesc)`.
const ACCESS_DESC_BYTES: usize = 12;

pub unsafe fn mem_create(
    h: Export,
    handle: *mut u64,
    size: usize,
    prop: *const u8,
    flags: u64,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| MemCreate {
        handle: out(handle),
        size: size as u64,
        prop: bytes_at(prop, MEM_PROP_BYTES).to_vec(),
        flags,
    });
    r
}

pub unsafe fn mem_set_access(
    h: Export,
    ptr: u64,
    size: usize,
    desc: *const u8,
    count: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| MemSetAccess {
        ptr,
        size: size as u64,
        desc: bytes_at(desc, count.min(64) * ACCESS_DESC_BYTES).to_vec(),
        count: count as u64,
    });
    r
}
