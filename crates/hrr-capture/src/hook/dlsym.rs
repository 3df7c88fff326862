//! How calls reach the wrappers through `dlsym`: cudart, PyTorch and plugins look the driver or
//! runtime up with it. Our `dlsym` never locks, allocates or calls the driver;
//! `dlsym(RTLD_NEXT, …)` is forwarded with a tail jump so glibc still sees the original caller.
//! Each API says which of its names it hands out wrappers for (`api::*::proc_address`). Also the
//! genuine `dlsym` (taken with `dlvsym`, so our override is skipped) and `dladdr` naming.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::api;
use crate::recorder;

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

static REAL_DLSYM: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// glibc's dlsym, primed by the library constructor, for the `RTLD_NEXT` tail jump.
static HRR_REAL_DLSYM_NEXT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

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

/// Look `name` up in the library whose `dlopen` handle is `handle` with the genuine dlsym (null
/// when absent or when `handle` is 0).
pub fn lookup(handle: usize, name: &CStr) -> *mut c_void {
    match real_dlsym() {
        // SAFETY: a live handle and a NUL-terminated name.
        Some(dlsym) if handle != 0 => unsafe { dlsym(handle as *mut c_void, name.as_ptr()) },
        _ => std::ptr::null_mut(),
    }
}

/// Resolve glibc's dlsym before anyone needs the tail jump.
pub fn prime() {
    if let Some(f) = real_dlsym() {
        HRR_REAL_DLSYM_NEXT.store(f as *mut c_void, Ordering::Release);
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

/// File name (no folder) of the loaded object that holds address `p` (empty when none).
pub fn object_file_of(p: usize) -> &'static [u8] {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only looks the address up in the loader's tables.
    if unsafe { libc::dladdr(p as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return b"";
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// `dlsym` override: `RTLD_NEXT` (handle -1) tail-jumps to glibc so the caller's scope is kept.
///
/// # Safety
/// Same contract as `dlsym(3)`.
#[unsafe(no_mangle)]
#[unsafe(naked)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "cmp rdi, -1",
        "jne 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "jmp {inner}",
        real = sym HRR_REAL_DLSYM_NEXT,
        inner = sym dlsym_inner,
    )
}

extern "C" fn dlsym_inner(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let Some(real) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: forwarding the caller's arguments.
    let p = unsafe { real(handle, symbol) };
    if p.is_null() || symbol.is_null() || !recorder::active() {
        return p;
    }
    // SAFETY: dlsym's symbol argument is a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(symbol) }.to_bytes();
    if name.starts_with(b"hip") || name.starts_with(b"__hip") {
        api::hip::proc_address::from_dlsym(name, p)
    } else if name.starts_with(b"cu") {
        api::cuda::proc_address::from_dlsym(name, p)
    } else {
        p
    }
}
