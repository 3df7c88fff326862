//! How CUDA calls reach the wrappers besides direct linking: `dlsym` of a `cu*` name (see
//! [`crate::hook::dlsym`]) and our `cuGetProcAddress`/`_v2` (cudart fetches every entry point
//! through them). For `cuGetProcAddress` the real driver is asked first and the exact exported
//! variant it chose (`_v2`, `_ptsz`, ...) is identified with `dladdr`, so the driver keeps
//! choosing ABI versions and stream semantics; the matching wrapper is handed out only when the
//! driver's answer is exactly that export. Entry points no row records are handed out as
//! counting forwarders ([`crate::hook::forward`]): the manifest's `passthrough_calls` counts
//! their calls.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use hrr_calls::cuda::ffi::{CUresult, CUDA_ERROR_NOT_FOUND};

use super::calls as hooks;
use super::loader::{driver_symbol, from_driver};
use crate::hook::dlsym::symbol_at;
use crate::hook::forward;
use crate::hook::guard::catch;
use crate::recorder;

static REAL_GPA: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_GPA_V2: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// What `dlsym` hands out for the `cu*` name `name` the real `dlsym` resolved to `p`: our
/// wrapper when `p` is the driver's export of a recorded call (or `cuGetProcAddress`), else `p`.
pub fn from_dlsym(name: &[u8], p: *mut c_void) -> *mut c_void {
    match name {
        b"cuGetProcAddress" if from_driver(p) => {
            REAL_GPA.store(p, Ordering::Release);
            return cuGetProcAddress as *mut c_void;
        }
        b"cuGetProcAddress_v2" if from_driver(p) => {
            REAL_GPA_V2.store(p, Ordering::Release);
            return cuGetProcAddress_v2 as *mut c_void;
        }
        _ => {}
    }
    match hooks::find(name) {
        Some(i) if p == hooks::wrapper(i) => p,
        Some(i) if from_driver(p) => {
            hooks::set_real(i, p);
            hooks::wrapper(i)
        }
        _ => p,
    }
}

/// Swap the driver's answer for our wrapper when it is exactly an export we hook.
unsafe fn substitute(symbol: *const c_char, pfn: *mut *mut c_void) {
    if pfn.is_null() || (*pfn).is_null() || !recorder::active() {
        return;
    }
    let p = *pfn;
    let Some(exported) = symbol_at(p) else {
        if !symbol.is_null() {
            *pfn = forward::forwarder(&CStr::from_ptr(symbol).to_string_lossy(), p);
        }
        return;
    };
    match exported.to_bytes() {
        b"cuGetProcAddress" => {
            REAL_GPA.store(p, Ordering::Release);
            *pfn = cuGetProcAddress as *mut c_void;
        }
        b"cuGetProcAddress_v2" => {
            REAL_GPA_V2.store(p, Ordering::Release);
            *pfn = cuGetProcAddress_v2 as *mut c_void;
        }
        name => match hooks::find(name) {
            Some(i) => {
                hooks::set_real(i, p);
                *pfn = hooks::wrapper(i);
            }
            None => *pfn = forward::forwarder(&exported.to_string_lossy(), p),
        },
    }
}

fn real_gpa(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    let p = driver_symbol(name);
    slot.store(p, Ordering::Release);
    p
}

/// `cuGetProcAddress` (CUDA 11.3 signature).
///
/// # Safety
/// Same contract as the driver's.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    let p = real_gpa(&REAL_GPA, c"cuGetProcAddress");
    if p.is_null() {
        return CUDA_ERROR_NOT_FOUND;
    }
    let f = std::mem::transmute::<
        *mut c_void,
        unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CUresult,
    >(p);
    let r = f(symbol, pfn, version, flags);
    if r == 0 {
        let _ = catch(|| substitute(symbol, pfn));
    }
    r
}

/// `cuGetProcAddress_v2` (CUDA 12.0 signature, with the symbol status).
///
/// # Safety
/// Same contract as the driver's.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    let p = real_gpa(&REAL_GPA_V2, c"cuGetProcAddress_v2");
    if p.is_null() {
        return CUDA_ERROR_NOT_FOUND;
    }
    let f = std::mem::transmute::<
        *mut c_void,
        unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult,
    >(p);
    let r = f(symbol, pfn, version, flags, status);
    if r == 0 {
        let _ = catch(|| substitute(symbol, pfn));
    }
    r
}
