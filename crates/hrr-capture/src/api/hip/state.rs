//! What HIP capture remembers between calls. Fat binaries are registered by every hipcc-built
//! program at start-up, before it has decided to use the GPU. Registrations are therefore only
//! remembered here; the `__hipRegisterFatBinary` event (with the bundle as a code object) and a
//! function's `__hipRegisterFunction` event are written when a launch or a symbol copy first
//! uses them. A process that never calls HIP beyond registration gets no `pid-<pid>/`, and an
//! archive holds only the code its run used. Also: loaded modules and their functions with
//! their argument layouts (from the code object's metadata), live device ranges (for
//! `hipMemcpyDefault`), and streams in capture.
//!
//! Lock order: this module's state, then the recorder's. Nothing inside a recorder `fill`
//! closure takes this module's lock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::c_void;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use hrr_archive::{CodeKind, ObjectId};
use hrr_calls::shapes::{RegisterFatBinary, RegisterFunction};

use super::calls::Export;
use super::code_object;
use super::API;
use crate::hook::{self, ApiExport};
use crate::recorder;

/// A kernel's explicit arguments as (offset, size).
pub type ParamLayout = Arc<[(u32, u32)]>;

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
        fb.code = recorder::put_code(&API, bytes, CodeKind::Hsaco);
        let (code, bytes) = (fb.code, fb.len as u64);
        hook::record(&API, Export::__hipRegisterFatBinary.id(), None, |_| {
            RegisterFatBinary {
                modules: handle,
                code,
                bytes,
            }
        });
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
        let name = name.to_string();
        hook::record(&API, Export::__hipRegisterFunction.id(), None, |_| {
            RegisterFunction {
                modules: fatbin,
                host_function: f,
                name,
            }
        });
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
