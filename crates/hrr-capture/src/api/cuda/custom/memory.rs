//! Allocations and host memory that need logic: managed and mapped memory (noted unreplayable), registration (contents stored), VMM property and access structs.

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::c_uint;

use hrr_calls::cuda::ffi::CUresult;
use hrr_calls::shapes::*;

use super::rec;
use crate::api::cuda::calls::Export;
use crate::hook::args::out;

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
