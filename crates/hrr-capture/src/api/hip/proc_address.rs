//! How HIP calls reach the wrappers besides direct linking: `dlsym` of a `hip*` name in the
//! runtime (see [`crate::hook::dlsym`]) and `hipGetProcAddress` (ROCm 6.1+).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use hrr_calls::hip::ffi::{HipError, HIP_ERROR_NOT_FOUND, HIP_SUCCESS};

use super::calls as hooks;
use super::loader::{from_runtime, runtime_symbol};
use crate::hook::dlsym::symbol_at;
use crate::recorder;

/// What `dlsym` hands out for the HIP name `name` the real `dlsym` resolved to `p`: our wrapper
/// when `p` is the runtime's export of a recorded call, else `p`.
pub fn from_dlsym(name: &[u8], p: *mut c_void) -> *mut c_void {
    match hooks::find(name) {
        Some(i) if p == hooks::wrapper(i) => p,
        Some(i) if from_runtime(p as usize) => {
            hooks::set_real(i, p);
            hooks::wrapper(i)
        }
        _ => p,
    }
}

static REAL_GPA: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// `hipGetProcAddress` (ROCm 6.1+): the runtime is asked first; when its answer is exactly the
/// export of a recorded entry point (`dladdr` names it, so the variant the runtime chose for
/// `hipVersion` is kept), the matching wrapper is handed out instead. Not itself recorded.
///
/// # Safety
/// Same contract as the runtime's.
#[no_mangle]
pub unsafe extern "C" fn hipGetProcAddress(
    symbol: *const std::ffi::c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> HipError {
    let mut p = REAL_GPA.load(Ordering::Acquire);
    if p.is_null() {
        p = runtime_symbol(c"hipGetProcAddress");
        if p.is_null() {
            return HIP_ERROR_NOT_FOUND;
        }
        REAL_GPA.store(p, Ordering::Release);
    }
    type Gpa = unsafe extern "C" fn(
        *const std::ffi::c_char,
        *mut *mut c_void,
        c_int,
        u64,
        *mut c_int,
    ) -> HipError;
    let r = std::mem::transmute::<*mut c_void, Gpa>(p)(symbol, pfn, version, flags, status);
    if r == HIP_SUCCESS && recorder::active() && !pfn.is_null() && !(*pfn).is_null() {
        let got = *pfn;
        if let Some(i) = symbol_at(got).and_then(|n| hooks::find(n.to_bytes())) {
            if from_runtime(got as usize) {
                hooks::set_real(i, got);
                *pfn = hooks::wrapper(i);
            }
        }
    }
    r
}
