//! The real driver: CUDA types used by the hooks, the genuine `dlsym` (taken with `dlvsym` so our
//! own override is skipped), the real `libcuda.so.1` (opened with libloading, never unloaded), and
//! the table of real entry points each hook forwards to. Lock-free and allocation-free on the
//! paths `dlsym` uses.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// `CUresult`.
pub type CUresult = c_int;
/// `CUdeviceptr`.
pub type CUdeviceptr = u64;
/// Any opaque handle (`CUcontext`, `CUstream`, `CUmodule`, ...).
pub type Handle = *mut c_void;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_NOT_FOUND`, returned when the real symbol is missing.
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
/// `CU_STREAM_PER_THREAD`.
pub const CU_STREAM_PER_THREAD: u64 = 0x2;

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

static REAL_DLSYM: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// glibc's own `dlsym` (GLIBC_2.34 first, then the older 2.2.5 version).
pub fn real_dlsym() -> Option<DlsymFn> {
    let mut p = REAL_DLSYM.load(Ordering::Acquire);
    if p.is_null() {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
            // SAFETY: dlvsym with constant NUL-terminated names.
            p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
            if !p.is_null() {
                break;
            }
        }
        if p.is_null() {
            return None;
        }
        REAL_DLSYM.store(p, Ordering::Release);
    }
    // SAFETY: p is glibc's dlsym.
    Some(unsafe { std::mem::transmute::<*mut c_void, DlsymFn>(p) })
}

/// Raw handle of the real driver library, opened once on first need with libloading and never
/// unloaded (never from inside `dlsym`). Null when no driver is found.
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

/// Look `name` up in the real driver.
pub fn driver_symbol(name: &CStr) -> *mut c_void {
    let handle = driver_handle();
    match real_dlsym() {
        // SAFETY: a live handle and a NUL-terminated name.
        Some(dlsym) if !handle.is_null() => unsafe { dlsym(handle, name.as_ptr()) },
        _ => std::ptr::null_mut(),
    }
}

/// Name of the exported symbol at exactly `addr`, if `addr` is one (no allocation).
///
/// # Safety
/// `addr` is only compared and passed to `dladdr`; any value is accepted.
pub unsafe fn symbol_at(addr: *const c_void) -> Option<&'static CStr> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads its arguments.
    if unsafe { libc::dladdr(addr, &mut info) } == 0
        || info.dli_sname.is_null()
        || !std::ptr::eq(info.dli_saddr, addr)
    {
        return None;
    }
    // SAFETY: dladdr returns a NUL-terminated string owned by the loaded object.
    Some(unsafe { CStr::from_ptr(info.dli_sname) })
}
