//! What CUDA capture remembers between calls: which code object each module or library came
//! from, what each function or kernel handle is (name, code object, parameter layout from the
//! driver), which streams are capturing, which graphs a recorded stream capture produced, and
//! for graphs built node by node the host regions their memcpy nodes read and write.
//!
//! Lock order: the recorder's lock, then this one (custom functions take it inside the closure
//! that fills an event), never the other way round.

use crate::hot::HOT;
use hrr_calls::handles::{HandleMap, HandleSet};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hrr_archive::ObjectId;

use super::loader::driver_fn;
use crate::hook::profile;

/// `CUDA_ERROR_INVALID_VALUE`.
const CUDA_ERROR_INVALID_VALUE: c_int = 1;

/// What capture knows about a function or kernel handle.
#[derive(Debug, Clone, Default)]
pub struct KernelInfo {
    /// Kernel name.
    pub name: String,
    /// Code object it came from.
    pub code: Option<ObjectId>,
    /// True for `CUkernel` handles (library kernels), false for `CUfunction`.
    pub is_library_kernel: bool,
    /// The module or library it was found in (0: unknown), so its unload forgets it.
    pub owner: u64,
}

/// A host region a graph's memcpy node reads (`to_host` false) or writes (`to_host` true).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostRegion {
    /// Host address.
    pub ptr: u64,
    /// Bytes.
    pub len: u64,
    /// Written by the node (a copy to host memory).
    pub to_host: bool,
}

/// Node handle → the host regions its copies touch (a child-graph node: all of its child's).
pub type NodeRegions = HandleMap<Vec<HostRegion>>;

/// A kernel's parameters as (offset, size), from its code or the driver.
pub type ParamLayout = Arc<[(u32, u32)]>;

/// The CUDA capture state of this process.
#[derive(Default)]
pub struct State {
    /// Module or library handle → code object.
    pub modules: HandleMap<Option<ObjectId>>,
    /// Library handle → its modules (`cuLibraryGetModule`): unloading the library unloads them.
    pub library_modules: HandleMap<Vec<u64>>,
    /// Module or library handle → the function and kernel handles defined as found in it
    /// ([`KernelInfo::owner`]), so its unload finds them without a walk of every kernel.
    owned: HandleMap<Vec<u64>>,
    /// Function or kernel handle → what it is.
    pub kernels: HandleMap<KernelInfo>,
    layouts: HandleMap<Option<ParamLayout>>,
    /// Code object → the parameter layouts its code declares ([`super::param_info`]).
    pub code_layouts: std::collections::HashMap<ObjectId, Arc<super::param_info::Layouts>>,
    /// Streams currently in stream capture ([`State::begin_capture`], [`any_capturing`]).
    capturing: HandleSet,
    /// Streams capturing into a graph of the program's (`cuStreamBeginCaptureToGraph`) → it.
    pub capturing_into: HandleMap<u64>,
    /// Graphs a recorded `cuStreamEndCapture` produced (replay rebuilds exactly these).
    pub captured_graphs: HandleSet,
    /// Graphs built (or cloned) node by node, with their nodes' host regions.
    pub graph_nodes: HandleMap<NodeRegions>,
    /// Instantiations, with their nodes' host regions (from the graph, then exec updates).
    pub exec_nodes: HandleMap<NodeRegions>,
    /// Node handle → the graph it was added to.
    pub node_graph: HandleMap<u64>,
    /// Graph → the body graphs of its conditional nodes (their nodes' host regions are the
    /// graph's too).
    pub graph_bodies: HandleMap<Vec<u64>>,
    /// Stream captures under way (by the driver's capture id) → the host regions of the copies
    /// issued into them; `cuStreamEndCapture` hands them to the graph it returns.
    pub capture_regions: HandleMap<Vec<HostRegion>>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

// `HOT.kernels_generation`: bumped whenever what capture knows of a function or kernel
// handle may change (a handle defined again): what a thread remembers of a handle from an
// earlier generation is stale.
/// Bumped whenever capture forgets functions or kernels (their module or library unloaded): a
/// thread's memory of handles it found known is stale ([`forgotten_generation`]).
static FORGOTTEN_GENERATION: AtomicU64 = AtomicU64::new(0);
// `HOT.capturing`: how many streams are in stream capture (the size of
// [`State::capturing`]), read without the state's lock.

/// The generation of what capture knows of function and kernel handles (`crate::hot::HOT.kernels_generation`).
pub fn kernels_generation() -> u64 {
    HOT.kernels_generation.load(Ordering::Acquire)
}

/// The generation of capture forgetting functions and kernels ([`FORGOTTEN_GENERATION`]).
pub fn forgotten_generation() -> u64 {
    FORGOTTEN_GENERATION.load(Ordering::Acquire)
}

/// Whether any stream is in stream capture (without the state's lock).
pub fn any_capturing() -> bool {
    HOT.capturing.load(Ordering::Acquire) != 0
}

/// Run `f` on the state.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut g: MutexGuard<'_, Option<State>> = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(State::default))
}

impl State {
    /// A function or kernel handle was (re)defined: handle values are reused once their object
    /// is destroyed, so what was cached under the value is dropped.
    pub fn define_kernel(&mut self, handle: u64, info: KernelInfo) {
        self.layouts.remove(&handle);
        // once per owner (a program may look the same function up before every launch)
        let known_here = self
            .kernels
            .get(&handle)
            .is_some_and(|k| k.owner == info.owner);
        if info.owner != 0 && !known_here {
            self.owned.entry(info.owner).or_default().push(handle);
        }
        self.kernels.insert(handle, info);
        HOT.kernels_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Module or library `owner` was unloaded: it (a library with its module) and the
    /// functions and kernels found in them are forgotten. The driver hands their handle values
    /// out again, for other modules' functions; what capture knew of a value must not be taken
    /// for the new function (a launch would name the old kernel and code object, and a
    /// function reached without a recorded look-up, as cuFFT's are, would not be bound again).
    pub fn forget_owner(&mut self, owner: u64) {
        let mut owners = vec![owner];
        owners.extend(self.library_modules.remove(&owner).unwrap_or_default());
        for o in owners {
            self.modules.remove(&o);
            for h in self.owned.remove(&o).unwrap_or_default() {
                // a value defined again since under another owner is that owner's now
                if self.kernels.get(&h).is_some_and(|k| k.owner == o) {
                    self.kernels.remove(&h);
                    self.layouts.remove(&h);
                }
            }
        }
        HOT.kernels_generation.fetch_add(1, Ordering::AcqRel);
        FORGOTTEN_GENERATION.fetch_add(1, Ordering::AcqRel);
    }

    /// Graph `g` was destroyed: what capture kept of it (its nodes' host regions, the nodes'
    /// graph, whether a stream capture made it) and of its conditional nodes' bodies (the
    /// driver destroys them with it) is dropped, so a long run that builds and destroys graphs
    /// does not keep them all, and a graph given the value again starts from nothing.
    pub fn forget_graph(&mut self, g: u64) {
        let mut graphs = vec![g];
        let mut i = 0;
        while i < graphs.len() && graphs.len() <= 1 << 16 {
            if let Some(bodies) = self.graph_bodies.remove(&graphs[i]) {
                // each entry is taken once, so a body named twice adds nothing the second time
                graphs.extend(bodies);
            }
            i += 1;
        }
        for g in graphs {
            self.captured_graphs.remove(&g);
            for node in self
                .graph_nodes
                .remove(&g)
                .into_iter()
                .flat_map(|n| n.into_keys())
            {
                self.node_graph.remove(&node);
            }
        }
    }

    /// Stream `s` began a stream capture.
    pub fn begin_capture(&mut self, s: u64) {
        self.capturing.insert(s);
        HOT.capturing.store(self.capturing.len(), Ordering::Release);
    }

    /// Stream `s` ended its stream capture.
    pub fn end_capture(&mut self, s: u64) {
        self.capturing.remove(&s);
        HOT.capturing.store(self.capturing.len(), Ordering::Release);
    }

    /// Whether stream `s` is in stream capture.
    pub fn is_capturing(&self, s: u64) -> bool {
        self.capturing.contains(&s)
    }

    /// Code object of a module or library handle.
    pub fn code_of(&self, module: u64) -> Option<ObjectId> {
        self.modules.get(&module).copied().flatten()
    }

    /// Parameter layout `(offset, size)` of a function or kernel handle: from its code where
    /// the code declares it ([`super::param_info`]), else from the driver. With
    /// `HRR_CAPTURE_CHECK_LAYOUTS=1` the driver is asked anyway, its answer taken, and a
    /// difference reported on standard error.
    pub fn param_layout(&mut self, handle: u64) -> Option<ParamLayout> {
        if let Some(l) = self.layouts.get(&handle) {
            return l.clone();
        }
        let info = self.kernels.get(&handle);
        let from_code = info.and_then(|k| self.code_layouts.get(&k.code?)?.get(&k.name).cloned());
        let check = profile::check_layouts();
        if let (Some(l), false) = (&from_code, check) {
            profile::LAYOUTS_FROM_CODE.fetch_add(1, Ordering::Relaxed);
            self.layouts.insert(handle, Some(l.clone()));
            return from_code;
        }
        let is_kernel = info.is_some_and(|k| k.is_library_kernel);
        let order: [&CStr; 2] = if is_kernel {
            [c"cuKernelGetParamInfo", c"cuFuncGetParamInfo"]
        } else {
            [c"cuFuncGetParamInfo", c"cuKernelGetParamInfo"]
        };
        let layout = profile::LAYOUT_QUERIES.time(|| query_layout(handle, order));
        if let (Some(code), true) = (&from_code, check) {
            profile::LAYOUTS_CHECKED.fetch_add(1, Ordering::Relaxed);
            if layout.as_ref() != Some(code) {
                profile::LAYOUTS_DIFFERING.fetch_add(1, Ordering::Relaxed);
                let name = info.map_or("?", |k| k.name.as_str());
                let driver = layout
                    .as_deref()
                    .map_or("none".into(), |l| format!("{l:?}"));
                eprintln!(
                    "hrr-capture: argument layout of {name} read from its code {:?} differs from the driver's {driver}",
                    &**code
                );
            }
        }
        self.layouts.insert(handle, layout.clone());
        layout
    }
}

/// Ask the driver for the parameter layout of `handle`, parameter by parameter, through the
/// entry points `order` names (the first that knows the handle).
fn query_layout(handle: u64, order: [&CStr; 2]) -> Option<ParamLayout> {
    type ParamInfo = unsafe extern "C" fn(*mut c_void, usize, *mut usize, *mut usize) -> c_int;
    let (mut layout, mut no_params) = (None, false);
    for name in order {
        // SAFETY: both entry points share this signature.
        let Some(f) = (unsafe { driver_fn::<ParamInfo>(name) }) else {
            continue;
        };
        let mut v = Vec::new();
        let last = loop {
            let (mut off, mut size) = (0usize, 0usize);
            // SAFETY: out-pointers to locals; the handle came from the application.
            let r = unsafe { f(handle as *mut c_void, v.len(), &mut off, &mut size) };
            if r != 0 || v.len() > 4096 {
                break r;
            }
            v.push((off as u32, size as u32));
        };
        if !v.is_empty() {
            layout = Some(Arc::from(v));
            break;
        }
        // Past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE, so at index
        // 0 it means no parameters (a layout, not an unknown one) — unless the other entry
        // point, asked next, knows the handle better.
        no_params |= last == CUDA_ERROR_INVALID_VALUE;
    }
    if layout.is_none() && no_params {
        layout = Some(Arc::from(Vec::new()));
    }
    layout
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str, owner: u64) -> KernelInfo {
        KernelInfo {
            name: name.into(),
            owner,
            ..KernelInfo::default()
        }
    }

    /// Unloading a library forgets its kernels, its module and the functions looked up in that
    /// module; another module's stay known.
    #[test]
    fn an_unloaded_library_takes_its_module_and_their_functions_with_it() {
        let mut st = State::default();
        let (lib, lib_module, other) = (0x100, 0x200, 0x300);
        for m in [lib, lib_module, other] {
            st.modules.insert(m, None);
        }
        st.library_modules.insert(lib, vec![lib_module]);
        st.define_kernel(0x10, kernel("k", lib));
        st.define_kernel(0x20, kernel("f", lib_module));
        st.define_kernel(0x30, kernel("g", other));
        st.define_kernel(0x30, kernel("g", other));
        assert_eq!(st.owned[&other], [0x30]);
        let generation = kernels_generation();
        st.forget_owner(lib);
        assert!(kernels_generation() > generation);
        assert!(!st.kernels.contains_key(&0x10));
        assert!(!st.kernels.contains_key(&0x20));
        assert_eq!(st.kernels[&0x30].name, "g");
        assert!(!st.modules.contains_key(&lib) && !st.modules.contains_key(&lib_module));
        assert!(st.modules.contains_key(&other));
        assert!(st.library_modules.is_empty());
        // a value defined again under another owner stays when its first owner goes
        st.define_kernel(0x30, kernel("h", 0x400));
        st.forget_owner(other);
        assert_eq!(st.kernels[&0x30].name, "h");
        st.forget_owner(0x400);
        assert!(st.kernels.is_empty() && st.modules.is_empty() && st.owned.is_empty());
    }

    /// Destroying a graph drops its nodes, its conditional nodes' bodies and theirs; another
    /// graph's stay.
    #[test]
    fn a_destroyed_graph_takes_its_nodes_and_bodies_with_it() {
        let mut st = State::default();
        let region = HostRegion {
            ptr: 0x1000,
            len: 64,
            to_host: true,
        };
        for (graph, node) in [(1, 10), (2, 20), (3, 30)] {
            st.graph_nodes
                .entry(graph)
                .or_default()
                .insert(node, vec![region]);
            st.node_graph.insert(node, graph);
        }
        st.graph_bodies.insert(1, vec![2]);
        st.captured_graphs.insert(1);
        st.forget_graph(1);
        assert_eq!(st.graph_nodes.keys().collect::<Vec<_>>(), [&3]);
        assert_eq!(st.node_graph.keys().collect::<Vec<_>>(), [&30]);
        assert!(st.captured_graphs.is_empty() && st.graph_bodies.is_empty());
    }
}
