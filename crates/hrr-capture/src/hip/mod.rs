//! The HIP interposer: exported `hip*` and `__hip*` wrappers (apps built by hipcc import them
//! from `libamdhip64.so` as `hipMalloc@hip_4.2` and so on; an unversioned definition in a
//! preloaded library satisfies those references), each forwarding to the real runtime found with
//! `dlsym(RTLD_NEXT, ...)` (or, when the runtime was loaded `RTLD_LOCAL`, through its handle),
//! and recording the call with its result.
//!
//! Fat binaries are registered by every hipcc-built program at start-up, before it has decided
//! to use the GPU. Registrations are therefore only remembered; the `__hipRegisterFatBinary`
//! event (with the bundle as a code object) and a function's `__hipRegisterFunction` event are
//! written when a launch or a symbol copy first uses them. A process that never calls HIP beyond
//! registration gets no `pid-<pid>/`, and an archive holds only the code its run used.
//!
//! Lock order: this module's state, then the recorder's. Nothing inside a recorder `fill`
//! closure takes this module's lock.

pub mod code_object;
pub mod device;
pub mod hooks;
pub mod msgpack;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use hrr_archive::{CodeKind, ObjectId};

use crate::ffi;
use crate::recorder::{self, Api, ParamLayout};

/// `hipError_t`.
pub type HipError = c_int;
/// `hipSuccess`.
pub const HIP_SUCCESS: HipError = 0;
/// `hipErrorNotFound`, returned when the real entry point is missing.
pub const HIP_ERROR_NOT_FOUND: HipError = 500;

/// `dim3`, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

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
    let Some(dlsym) = ffi::real_dlsym() else {
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
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only looks the address up in the loader's tables.
    if unsafe { libc::dladdr(p as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
    let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    file.starts_with(b"libamdhip64.so")
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
        if let Some(i) = ffi::symbol_at(got).and_then(|n| hooks::find(n.to_bytes())) {
            if from_runtime(got as usize) {
                hooks::set_real(i, got);
                *pfn = hooks::wrapper(i);
            }
        }
    }
    r
}

// ---------------------------------------------------------------------------------------------
// What the interposer remembers between calls.

/// Layouts of the kernels of one image, by name.
type Layouts = Arc<HashMap<String, ParamLayout>>;

struct FatBinary {
    image: usize,
    len: usize,
    /// The process whose archive holds this fat binary's registration (0: none yet).
    written_in: u32,
    code: Option<ObjectId>,
    layouts: Option<Result<Layouts, String>>,
}

struct HostFunction {
    name: Arc<str>,
    fatbin: u64,
    written_in: u32,
}

struct Symbol {
    name: Arc<str>,
    fatbin: u64,
}

struct Module {
    code: Option<ObjectId>,
    layouts: Result<Layouts, String>,
}

/// A kernel a launch names: its name, code object and explicit-argument layout.
#[derive(Debug, Clone)]
pub struct KernelRef {
    /// Kernel name (as in the code object).
    pub name: Arc<str>,
    /// The code object holding it.
    pub code: Option<ObjectId>,
    /// `(offset, size)` of each argument the program passes, or why it is unknown.
    pub layout: Result<ParamLayout, String>,
}

#[derive(Default)]
struct State {
    fatbins: HashMap<u64, FatBinary>,
    host_functions: HashMap<u64, HostFunction>,
    symbols: HashMap<u64, Symbol>,
    modules: HashMap<u64, Module>,
    functions: HashMap<u64, KernelRef>,
    /// Device allocations and mappings alive now: start → length (for `hipMemcpyDefault`).
    device: BTreeMap<u64, u64>,
    /// Streams in stream capture.
    capturing: HashSet<u64>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn layouts_of(bytes: &[u8]) -> Result<Layouts, String> {
    code_object::kernels(bytes)
        .map(|ks| {
            Arc::new(
                ks.into_iter()
                    .map(|(name, k)| (name, ParamLayout::from(k.explicit_layout())))
                    .collect(),
            )
        })
        .map_err(|e| e.to_string())
}

fn layout_in(layouts: &Result<Layouts, String>, name: &str) -> Result<ParamLayout, String> {
    match layouts {
        Ok(map) => map.get(name).cloned().ok_or_else(|| {
            format!("kernel `{name}` is not described by its code object's metadata")
        }),
        Err(e) => Err(e.clone()),
    }
}

/// Remember a fat binary registered at `handle` (image as `__hipRegisterFatBinary` got it).
///
/// # Safety
/// `data` is what the program handed `__hipRegisterFatBinary`.
pub unsafe fn note_fat_binary(handle: u64, data: *const c_void) {
    let Some((image, len)) = code_object::identify(data as *const u8) else {
        return;
    };
    state().fatbins.insert(
        handle,
        FatBinary {
            image: image as usize,
            len,
            written_in: 0,
            code: None,
            layouts: None,
        },
    );
}

/// Forget a fat binary (and its functions and variables) at unregistration.
pub fn forget_fat_binary(handle: u64) {
    let mut st = state();
    st.fatbins.remove(&handle);
    st.host_functions.retain(|_, f| f.fatbin != handle);
    st.symbols.retain(|_, s| s.fatbin != handle);
}

/// Remember a host stub → kernel name registration.
pub fn note_function(fatbin: u64, host_function: u64, name: &str) {
    state().host_functions.insert(
        host_function,
        HostFunction {
            name: name.into(),
            fatbin,
            written_in: 0,
        },
    );
}

/// Remember a `__device__` / `__constant__` variable registration.
pub fn note_variable(fatbin: u64, host_var: u64, name: &str) {
    state().symbols.insert(
        host_var,
        Symbol {
            name: name.into(),
            fatbin,
        },
    );
}

/// The fat binary `handle`'s code object, writing its registration event (and the code object)
/// into this process's archive the first time.
fn ensure_fat_binary(st: &mut State, handle: u64) -> Option<ObjectId> {
    let pid = recorder::current_pid();
    let fb = st.fatbins.get_mut(&handle)?;
    if fb.written_in != pid {
        fb.written_in = pid;
        // SAFETY: the runtime keeps a registered image mapped until it is unregistered.
        let bytes = unsafe { std::slice::from_raw_parts(fb.image as *const u8, fb.len) };
        fb.code = recorder::put_code_api(Api::Hip, bytes, CodeKind::Hsaco);
        let (code, len) = (fb.code, fb.len as u64);
        recorder::record_api(
            Api::Hip,
            hooks::call_id(hooks::Hook::__hipRegisterFatBinary),
            |_, p| {
                p.u64(handle).object(code).u64(len);
            },
        );
    }
    fb.code
}

fn fat_binary_layouts(st: &mut State, handle: u64) -> Result<Layouts, String> {
    let Some(fb) = st.fatbins.get_mut(&handle) else {
        return Err("its fat binary was not seen registered".into());
    };
    fb.layouts
        .get_or_insert_with(|| {
            // SAFETY: as in ensure_fat_binary.
            layouts_of(unsafe { std::slice::from_raw_parts(fb.image as *const u8, fb.len) })
        })
        .clone()
}

/// The kernel behind a host stub (a `<<<>>>` launch), writing its registrations on first use.
/// `None` when the stub was never seen registered.
pub fn kernel_of_host_function(f: u64) -> Option<KernelRef> {
    let mut st = state();
    let (name, fatbin, written_in) = {
        let hf = st.host_functions.get(&f)?;
        (hf.name.clone(), hf.fatbin, hf.written_in)
    };
    let code = ensure_fat_binary(&mut st, fatbin);
    let pid = recorder::current_pid();
    if written_in != pid {
        if let Some(hf) = st.host_functions.get_mut(&f) {
            hf.written_in = pid;
        }
        let n = name.clone();
        recorder::record_api(
            Api::Hip,
            hooks::call_id(hooks::Hook::__hipRegisterFunction),
            |_, p| {
                p.u64(fatbin).u64(f).str(&n);
            },
        );
    }
    let layout = fat_binary_layouts(&mut st, fatbin).and_then(|l| layout_in(&Ok(l), &name));
    Some(KernelRef { name, code, layout })
}

/// The name and code object of a registered variable, writing its fat binary's registration on
/// first use. `None` when the variable was never seen registered.
pub fn symbol(host_var: u64) -> Option<(Arc<str>, Option<ObjectId>)> {
    let mut st = state();
    let (name, fatbin) = {
        let s = st.symbols.get(&host_var)?;
        (s.name.clone(), s.fatbin)
    };
    let code = ensure_fat_binary(&mut st, fatbin);
    Some((name, code))
}

/// Remember a module loaded from `bytes` (stored as code object `code`).
pub fn note_module(module: u64, code: Option<ObjectId>, bytes: Option<&[u8]>) {
    let layouts = bytes.map_or_else(|| Err("module image not read".into()), layouts_of);
    state().modules.insert(module, Module { code, layouts });
}

/// Forget an unloaded module.
pub fn forget_module(module: u64) {
    state().modules.remove(&module);
}

/// Code object of a module.
pub fn module_code(module: u64) -> Option<ObjectId> {
    state().modules.get(&module).and_then(|m| m.code)
}

/// Remember a function looked up in a module.
pub fn note_module_function(function: u64, module: u64, name: &str) {
    let mut st = state();
    let (code, layout) = match st.modules.get(&module) {
        Some(m) => (m.code, layout_in(&m.layouts, name)),
        None => (None, Err("its module was not seen loaded".into())),
    };
    st.functions.insert(
        function,
        KernelRef {
            name: name.into(),
            code,
            layout,
        },
    );
}

/// The kernel behind a module function handle.
pub fn kernel_of_function(function: u64) -> Option<KernelRef> {
    state().functions.get(&function).cloned()
}

/// Note a live device range.
pub fn note_device(ptr: u64, len: u64) {
    if ptr != 0 {
        state().device.insert(ptr, len.max(1));
    }
}

/// Forget the device range starting at `ptr`.
pub fn forget_device(ptr: u64) {
    state().device.remove(&ptr);
}

/// Is `addr` inside a live device allocation or mapping this process made?
pub fn is_device(addr: u64) -> bool {
    matches!(state().device.range(..=addr).next_back(), Some((&s, &l)) if addr - s < l)
}

/// Note stream capture starting or ending on `stream`.
pub fn set_capturing(stream: u64, on: bool) {
    let mut st = state();
    if on {
        st.capturing.insert(stream);
    } else {
        st.capturing.remove(&stream);
    }
}

/// Is `stream` being captured into a graph?
pub fn is_capturing(stream: u64) -> bool {
    let st = state();
    !st.capturing.is_empty() && st.capturing.contains(&stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges_classify_addresses() {
        note_device(0x1000, 0x100);
        assert!(is_device(0x1000) && is_device(0x10ff));
        assert!(!is_device(0x1100) && !is_device(0xfff));
        forget_device(0x1000);
        assert!(!is_device(0x1000));
    }
}
