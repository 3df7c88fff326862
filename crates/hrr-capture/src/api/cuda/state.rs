//! What CUDA capture remembers between calls: which code object each module or library came
//! from, what each function or kernel handle is (name, code object, parameter layout from the
//! driver, asked for on a thread of the hashing pool as soon as the handle is looked up:
//! [`prefetch_layout`]), which streams are capturing, which graphs a recorded stream capture produced, and
//! for graphs built node by node the host regions their memcpy nodes read and write.
//!
//! Lock order: the recorder's lock, then this one (custom functions take it inside the closure
//! that fills an event), never the other way round.

use hrr_calls::handles::{HandleMap, HandleSet};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hrr_archive::ObjectId;

use super::loader::driver_fn;

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

/// A kernel's parameters as (offset, size), from the driver.
pub type ParamLayout = Arc<[(u32, u32)]>;

/// A handle's parameter layout, asked of the driver once: by a thread of the hashing pool
/// right after the look-up that made the handle ([`prefetch_layout`]) or by its first launch
/// ([`param_layout`]), whichever comes first; the other waits for it. A function got from a
/// library kernel (`cuKernelGetFunction`) shares its kernel's.
pub struct LayoutSlot {
    /// The handle the driver is asked about, and whether it is a library kernel.
    handle: u64,
    is_library_kernel: bool,
    /// A prefetch was handed to the pool.
    requested: AtomicBool,
    /// The layout (`Some(None)`: the driver knows none), once asked.
    layout: Mutex<Option<Option<ParamLayout>>>,
}

impl LayoutSlot {
    fn lock(&self) -> MutexGuard<'_, Option<Option<ParamLayout>>> {
        self.layout.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The CUDA capture state of this process.
#[derive(Default)]
pub struct State {
    /// Module or library handle → code object.
    pub modules: HandleMap<Option<ObjectId>>,
    /// Function or kernel handle → what it is.
    pub kernels: HandleMap<KernelInfo>,
    layouts: HandleMap<Arc<LayoutSlot>>,
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

/// Bumped whenever what capture knows of a function or kernel handle may change (a handle
/// defined again): what a thread remembers of a handle from an earlier generation is stale.
static KERNELS_GENERATION: AtomicU64 = AtomicU64::new(0);
/// How many streams are in stream capture (the size of [`State::capturing`]), read without the
/// state's lock.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// The generation of what capture knows of function and kernel handles ([`KERNELS_GENERATION`]).
pub fn kernels_generation() -> u64 {
    KERNELS_GENERATION.load(Ordering::Acquire)
}

/// Whether any stream is in stream capture (without the state's lock).
pub fn any_capturing() -> bool {
    CAPTURING.load(Ordering::Acquire) != 0
}

/// Layout prefetches asking the driver now ([`prefetch_layout`]).
static QUERYING: AtomicUsize = AtomicUsize::new(0);
/// Unloads and context changes since capture began: a prefetch queued before one gives up.
static UNLOADS: AtomicU64 = AtomicU64::new(0);
/// The longest [`quiesce_layout_queries`] waits (a fork child's copy of [`QUERYING`] may count
/// a query of a thread it does not have).
const QUIESCE_MAX: std::time::Duration = std::time::Duration::from_millis(100);

/// A module, library or context may be about to go: layout prefetches queued give up (their
/// handles may not outlive the call), and those asking the driver now are waited for.
pub fn quiesce_layout_queries() {
    UNLOADS.fetch_add(1, Ordering::SeqCst);
    let start = std::time::Instant::now();
    while QUERYING.load(Ordering::SeqCst) != 0 && start.elapsed() < QUIESCE_MAX {
        std::thread::yield_now();
    }
}

/// Handle `handle` was just looked up: ask the driver for its parameter layout on a thread of
/// the hashing pool, so that its first launch finds it (H100: the first launch of
/// cudaTensorCoreGemm's kernel, inside the sample's timed region, spent about 20 µs asking
/// the driver parameter by parameter). Nothing where the pool does not run; a layout the
/// driver did not give there is asked again by the launch ([`param_layout`]).
pub fn prefetch_layout(handle: u64) {
    let slot = with(|st| st.layout_slot(handle));
    if slot.requested.swap(true, Ordering::AcqRel) || slot.lock().is_some() {
        return;
    }
    let queued_at = UNLOADS.load(Ordering::SeqCst);
    hrr_archive::later(move || {
        // counted before the check, so that an unload either sees it or is seen by it
        QUERYING.fetch_add(1, Ordering::SeqCst);
        if UNLOADS.load(Ordering::SeqCst) == queued_at {
            let mut layout = slot.lock();
            if layout.is_none() {
                let query = || query_layout(slot.handle, slot.is_library_kernel);
                if let Some(l) = crate::hook::profile::LAYOUT_QUERIES.time(true, query) {
                    *layout = Some(Some(l));
                }
            }
        }
        QUERYING.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Parameter layout `(offset, size)` of a function or kernel handle, from the driver (asked
/// once per handle, here or by [`prefetch_layout`]). A launch never waits for a prefetch
/// asking the driver at that moment (its thread may not be running): it asks itself.
pub fn param_layout(handle: u64) -> Option<ParamLayout> {
    let slot = with(|st| st.layout_slot(handle));
    let query = || query_layout(slot.handle, slot.is_library_kernel);
    let Ok(mut layout) = slot.layout.try_lock() else {
        return crate::hook::profile::LAYOUT_QUERIES.time(false, query);
    };
    if let Some(l) = &*layout {
        return l.clone();
    }
    let l = crate::hook::profile::LAYOUT_QUERIES.time(false, query);
    *layout = Some(l.clone());
    l
}

/// Ask the driver for the parameter layout of `handle`, parameter by parameter.
fn query_layout(handle: u64, is_library_kernel: bool) -> Option<ParamLayout> {
    let order: [&CStr; 2] = if is_library_kernel {
        [c"cuKernelGetParamInfo", c"cuFuncGetParamInfo"]
    } else {
        [c"cuFuncGetParamInfo", c"cuKernelGetParamInfo"]
    };
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
        self.kernels.insert(handle, info);
        KERNELS_GENERATION.fetch_add(1, Ordering::AcqRel);
    }

    /// Stream `s` began a stream capture.
    pub fn begin_capture(&mut self, s: u64) {
        self.capturing.insert(s);
        CAPTURING.store(self.capturing.len(), Ordering::Release);
    }

    /// Stream `s` ended its stream capture.
    pub fn end_capture(&mut self, s: u64) {
        self.capturing.remove(&s);
        CAPTURING.store(self.capturing.len(), Ordering::Release);
    }

    /// Whether stream `s` is in stream capture.
    pub fn is_capturing(&self, s: u64) -> bool {
        self.capturing.contains(&s)
    }

    /// Code object of a module or library handle.
    pub fn code_of(&self, module: u64) -> Option<ObjectId> {
        self.modules.get(&module).copied().flatten()
    }

    /// The slot of handle `handle`'s parameter layout (made empty when there is none).
    fn layout_slot(&mut self, handle: u64) -> Arc<LayoutSlot> {
        let is_library_kernel = self
            .kernels
            .get(&handle)
            .is_some_and(|k| k.is_library_kernel);
        self.layouts
            .entry(handle)
            .or_insert_with(|| {
                Arc::new(LayoutSlot {
                    handle,
                    is_library_kernel,
                    requested: AtomicBool::new(false),
                    layout: Mutex::new(None),
                })
            })
            .clone()
    }

    /// Function `function` was got from library kernel `kernel`: it has the kernel's layout.
    pub fn share_layout(&mut self, kernel: u64, function: u64) {
        let slot = self.layout_slot(kernel);
        self.layouts.insert(function, slot);
    }
}
