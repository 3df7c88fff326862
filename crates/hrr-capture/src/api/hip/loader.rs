//! The real HIP runtime: the next definition after this library (`dlsym(RTLD_NEXT, …)`), or,
//! when a plugin loaded the runtime `RTLD_LOCAL`, the already loaded library found by name.
//! Never loads a runtime itself.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::hook::dlsym;

/// Library names of the HIP runtime, newest first.
pub const RUNTIME_NAMES: [&CStr; 4] = [
    c"libamdhip64.so.7",
    c"libamdhip64.so.6",
    c"libamdhip64.so.5",
    c"libamdhip64.so",
];

static RUNTIME: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Handle of a HIP runtime already loaded in this process (never loads one).
pub fn runtime_handle() -> *mut c_void {
    let h = RUNTIME.load(Ordering::Acquire);
    if !h.is_null() {
        return h;
    }
    for name in RUNTIME_NAMES {
        // SAFETY: RTLD_NOLOAD only returns a library that is already loaded.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if !h.is_null() {
            RUNTIME.store(h, Ordering::Release);
            return h;
        }
    }
    std::ptr::null_mut()
}

/// The real runtime's `name`: the next definition after this library (the runtime, or another
/// interposer stacked above it), else the loaded runtime's own.
pub fn runtime_symbol(name: &CStr) -> *mut c_void {
    let Some(dlsym) = dlsym::real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: glibc's dlsym with a NUL-terminated name; RTLD_NEXT is relative to this library.
    let p = unsafe { dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if !p.is_null() {
        return p;
    }
    let h = runtime_handle();
    if h.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a live handle and a NUL-terminated name.
    unsafe { dlsym(h, name.as_ptr()) }
}

/// Is address `p` inside the HIP runtime library (by file name)?
pub fn from_runtime(p: usize) -> bool {
    dlsym::object_file_of(p).starts_with(b"libamdhip64.so")
}
