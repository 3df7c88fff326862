//! The real CUDA driver: `libcuda.so.1` (or `$HRR_CUDA_DRIVER`), opened with libloading on
//! first need and never unloaded (never from inside `dlsym`), and its symbols.

use std::ffi::{c_void, CStr};
use std::sync::OnceLock;

use crate::hook::dlsym;

/// Raw handle of the real driver library (null when no driver is found).
pub fn driver_handle() -> *mut c_void {
    static HANDLE: OnceLock<usize> = OnceLock::new();
    *HANDLE.get_or_init(|| {
        let name = std::env::var_os("HRR_CUDA_DRIVER").unwrap_or_else(|| "libcuda.so.1".into());
        // SAFETY: loading the system driver; its initialisers are the driver's own.
        unsafe {
            libloading::os::unix::Library::open(
                Some(name),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        }
        .map(|lib| lib.into_raw() as usize)
        .unwrap_or(0)
    }) as *mut c_void
}

/// Look `name` up in the real driver (null when absent).
pub fn driver_symbol(name: &CStr) -> *mut c_void {
    dlsym::lookup(driver_handle() as usize, name)
}

/// A driver entry point as a typed function pointer.
///
/// # Safety
/// `F` must be the entry point's C signature (an `unsafe extern "C" fn`).
pub unsafe fn driver_fn<F: Copy>(name: &CStr) -> Option<F> {
    let p = driver_symbol(name);
    (!p.is_null()).then(|| std::mem::transmute_copy::<*mut c_void, F>(&p))
}

/// Does `p` lie in the driver library?
pub fn from_driver(p: *mut c_void) -> bool {
    dlsym::object_file_of(p as usize).starts_with(b"libcuda.so")
}
