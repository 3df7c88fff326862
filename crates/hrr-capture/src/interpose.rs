//! How calls reach the hooks: our `dlsym` (cudart and PyTorch look the driver up through it),
//! our `cuGetProcAddress`/`_v2` (cudart fetches every entry point through them), and the exported
//! `cu*` wrappers themselves (programs linked against libcuda). HIP entry points looked up with
//! `dlsym` in `libamdhip64.so` are handed out as their `hip*` wrappers the same way.
//!
//! `dlsym` never locks, allocates or calls the driver. `dlsym(RTLD_NEXT, ...)` is forwarded with
//! a tail jump so glibc still sees the original caller. For `cuGetProcAddress` the real driver is
//! asked first and the exact exported variant it chose (`_v2`, `_ptsz`, ...) is identified with
//! `dladdr`, so the driver keeps choosing ABI versions and stream semantics; the matching wrapper
//! is handed out only when the driver's answer is exactly that export.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::ffi::{self, CUresult, CUDA_ERROR_NOT_FOUND};
use crate::{hip, hooks, recorder};

/// glibc's dlsym, primed by the library constructor, for the `RTLD_NEXT` tail jump.
static HRR_REAL_DLSYM_NEXT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

static REAL_GPA: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_GPA_V2: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Resolve glibc's dlsym before anyone needs the tail jump.
pub fn prime() {
    if let Some(f) = ffi::real_dlsym() {
        HRR_REAL_DLSYM_NEXT.store(f as *mut c_void, Ordering::Release);
    }
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

fn from_driver(p: *mut c_void) -> bool {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads.
    if unsafe { libc::dladdr(p, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    file.starts_with(b"libcuda.so")
}

extern "C" fn dlsym_inner(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let Some(real) = ffi::real_dlsym() else {
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
        return match hip::hooks::find(name) {
            Some(i) if p == hip::hooks::wrapper(i) => p,
            Some(i) if hip::from_runtime(p as usize) => {
                hip::hooks::set_real(i, p);
                hip::hooks::wrapper(i)
            }
            _ => p,
        };
    }
    if !name.starts_with(b"cu") {
        return p;
    }
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
    let Some(exported) = ffi::symbol_at(p) else {
        if !symbol.is_null() {
            recorder::note_passthrough(CStr::from_ptr(symbol));
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
            None => recorder::note_passthrough(exported),
        },
    }
}

fn real_gpa(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    let p = ffi::driver_symbol(name);
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
        let _ = recorder::guarded(|| substitute(symbol, pfn));
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
        let _ = recorder::guarded(|| substitute(symbol, pfn));
    }
    r
}
