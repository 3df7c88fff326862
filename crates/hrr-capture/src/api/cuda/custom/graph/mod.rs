//! Stream capture, graph instantiation (graphs neither a recorded capture nor recorded node-by-node
//! construction produced are noted unreplayable), explicit graph construction (`cuGraphCreate`
//! here, `cuGraphAdd*Node` in [`nodes`], parameter updates in [`params`], exec updates, clones)
//! and graph launches.
//!
//! Explicit graphs: every node call records one `GraphNode` (kernel nodes through
//! `launch.rs`'s [`launch_fields`], as `cuLaunchKernel`); capture keeps, per graph and per
//! instantiation, the host regions its memcpy nodes read and write. At each `cuGraphLaunch` the
//! bytes of every host source region are recorded before the launch (`hrrGraphHostSource`: the
//! graph reads them at every launch), and once the launch stream is synchronised the bytes of
//! every host destination region (`hrrGraphHostResult`, checked by replay like a D2H copy).
//! A graph made by stream capture gets the host regions of the copies issued into the capture
//! (`copy.rs`), so its launches record the same two events.

#![allow(clippy::missing_safety_doc)]

use crate::api::cuda::calls::args;
use crate::api::cuda::custom::Call;
use std::ffi::{c_int, c_uint, c_void};

use hrr_calls::cuda::ffi::{
    copy_side, node_type, set_copy_side, CUresult, Handle, CUDA_ERROR_NOT_FOUND, EDGE_DATA_BYTES,
    MEMCPY3D_BYTES, MEMORYTYPE_DEVICE, MEMORYTYPE_HOST, MEMORYTYPE_UNIFIED, MEMSET_NODE_BYTES,
    MEM_ALLOC_BYTESIZE_AT,
};
use hrr_calls::shapes::*;

use super::copy::{capture_id, is_device_ptr, sync_stream};
use super::host_node;
use super::launch::{launch_fields, prepare, LaunchCall};
use super::{host_blob, rec};
use crate::api::cuda::calls::{effective_stream, real_fn, Export};
use crate::api::cuda::state::{self, HostRegion, NodeRegions, State};
use crate::api::cuda::API;
use crate::hook::args::{bytes_at, out_addr};
use crate::hook::common::LaunchHostFn;
use crate::hook::ApiExport;
use crate::recorder::{self, Recorder};

mod nodes;
mod params;
pub use nodes::*;
pub use params::*;

/// Why a graph that neither a recorded stream capture nor recorded node-by-node construction
/// produced cannot be replayed.
const GRAPH_NOT_RECORDED: &str = "graph was built before capture started (neither a recorded stream capture nor recorded cuGraphCreate/cuGraphAdd*Node calls made it); replay skips it";

/// What replay does with host nodes.
const HOST_NODE: &str = "graph host nodes run application code that is not in the archive; replay runs a no-op host function in their place";

/// Note an instantiation of a graph that replay cannot rebuild; remember the instantiation's
/// host regions (from its graph's nodes).
fn note_graph_source(rc: &mut Recorder, call: &str, g: Handle, exec: u64) {
    let known = state::with(|st| {
        let nodes = node_regions(st, g as u64);
        let known = nodes.is_some() || st.captured_graphs.contains(&(g as u64));
        st.exec_nodes.insert(exec, nodes.unwrap_or_default());
        known
    });
    if !known {
        rc.note_unreplayable(call, GRAPH_NOT_RECORDED);
    }
}

/// Every host region of graph `g`'s nodes (with its conditional nodes' bodies).
fn graph_regions(st: &State, g: u64) -> Vec<HostRegion> {
    node_regions(st, g)
        .map(|n| n.values().flatten().copied().collect())
        .unwrap_or_default()
}

/// The host regions of graph `g`'s nodes by node, with those of the nodes of its conditional
/// nodes' bodies (nested up to 16 deep); `None` when `g` was not built node by node.
fn node_regions(st: &State, g: u64) -> Option<NodeRegions> {
    let mut out = st.graph_nodes.get(&g)?.clone();
    let mut bodies: Vec<(u64, u32)> = Vec::new();
    let push = |bodies: &mut Vec<(u64, u32)>, g: u64, depth: u32| {
        let of = st.graph_bodies.get(&g).into_iter().flatten();
        bodies.extend(of.map(|&b| (b, depth + 1)).filter(|&(_, d)| d <= 16));
    };
    push(&mut bodies, g, 0);
    while let Some((b, depth)) = bodies.pop() {
        if let Some(n) = st.graph_nodes.get(&b) {
            out.extend(n.iter().map(|(k, v)| (*k, v.clone())));
        }
        push(&mut bodies, b, depth);
    }
    Some(out)
}

/// `n` handles at `p` (empty when null; at most 65536).
unsafe fn handles(p: *const Handle, n: usize) -> Vec<u64> {
    if p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n.min(1 << 16))
        .iter()
        .map(|&h| h as u64)
        .collect()
}

/// A `u64` at byte `at` of `p`.
unsafe fn word_at(p: *const u8, at: usize) -> u64 {
    (p.add(at) as *const u64).read_unaligned()
}

/// A stream capture begun on `s` (into graph `into` of the program's, if any).
fn capture_begun(s: Handle, into: Option<Handle>) {
    state::with(|st| {
        st.begin_capture(s as u64);
        if let Some(g) = into {
            st.capturing_into.insert(s as u64, g as u64);
        }
    });
}

pub unsafe fn stream_begin_capture(h: Export, a: args::StreamBeginCapture, r: CUresult) {
    let args::StreamBeginCapture { s, mode } = a;
    rec(h, r, |_| {
        if r == 0 {
            capture_begun(s, None);
        }
        BeginCapture {
            stream: s as u64,
            mode,
        }
    });
}

/// `cuStreamBeginCaptureToGraph`: a capture into graph `g` (built node by node, a conditional
/// node's body), after nodes `deps` of it.
pub unsafe fn stream_begin_capture_to_graph(
    h: Export,
    a: args::StreamBeginCaptureToGraph,
    r: CUresult,
) {
    let args::StreamBeginCaptureToGraph {
        s,
        g,
        deps,
        n,
        mode,
        ..
    } = a;
    rec(h, r, |_| {
        if r == 0 {
            capture_begun(s, Some(g));
        }
        BeginCaptureToGraph {
            stream: s as u64,
            graph: g as u64,
            deps: handles(deps, n),
            mode,
        }
    });
}

/// `cuStreamGetCaptureInfo_v3`: see [`capture_info`].
pub unsafe fn stream_get_capture_info_v3(h: Export, a: args::StreamGetCaptureInfo, r: CUresult) {
    capture_info(h, r, a.s, a.status, a.g, a.deps, a.n);
}

/// `cuStreamGetCaptureInfo_v2`: `_v3` without edge data.
pub unsafe fn stream_get_capture_info_v2(h: Export, a: args::StreamGetCaptureInfoV2, r: CUresult) {
    capture_info(h, r, a.s, a.status, a.g, a.deps, a.n);
}

/// Records what the program learnt of an active capture (its graph, the nodes the next work
/// follows; none where it did not ask), so replay can map them to its own capture's; queries
/// of streams not capturing, which programs make often, are not recorded.
unsafe fn capture_info(
    h: Export,
    r: CUresult,
    s: Handle,
    status: *const c_int,
    g: *const Handle,
    deps: *const *const Handle,
    n: *const usize,
) {
    const CU_STREAM_CAPTURE_STATUS_ACTIVE: c_int = 1;
    if r != 0 || status.is_null() || *status != CU_STREAM_CAPTURE_STATUS_ACTIVE {
        return;
    }
    let deps = match (deps.is_null(), n.is_null()) {
        (false, false) => handles(*deps, *n),
        _ => Vec::new(),
    };
    rec(h, r, |_| CaptureInfo {
        stream: s as u64,
        graph: out_addr(g),
        deps,
    });
}

/// `cuStreamUpdateCaptureDependencies`.
pub unsafe fn stream_update_capture_dependencies(
    h: Export,
    a: args::StreamUpdateCaptureDependencies,
    r: CUresult,
) {
    let args::StreamUpdateCaptureDependencies { s, deps, n, flags } = a;
    rec(h, r, |_| CaptureDeps {
        stream: s as u64,
        deps: handles(deps, n),
        flags,
    });
}

/// `cuStreamUpdateCaptureDependencies_v2` (edge data is not recorded: default edges).
pub unsafe fn stream_update_capture_dependencies_v2(
    h: Export,
    a: args::StreamUpdateCaptureDependenciesV2,
    r: CUresult,
) {
    let args::StreamUpdateCaptureDependenciesV2 {
        s, deps, n, flags, ..
    } = a;
    stream_update_capture_dependencies(
        h,
        args::StreamUpdateCaptureDependencies { s, deps, n, flags },
        r,
    )
}

pub unsafe fn stream_end_capture(
    h: Export,
    a: args::StreamEndCapture,
    call: impl Call,
) -> CUresult {
    let args::StreamEndCapture { s, g } = a;
    let id = capture_id(h, s);
    let r = call();
    rec(h, r, |_| {
        let graph = out_addr(g);
        state::with(|st| {
            st.end_capture(s as u64);
            let regions = id.and_then(|id| st.capture_regions.remove(&id));
            if let Some(into) = st.capturing_into.remove(&(s as u64)) {
                // a graph of the program's: the captured copies' regions join its nodes'
                if r == 0 {
                    let nodes = st.graph_nodes.entry(into).or_default();
                    nodes
                        .entry(0)
                        .or_default()
                        .extend(regions.unwrap_or_default());
                }
            } else if r == 0 {
                st.captured_graphs.insert(graph);
                // the captured copies' host regions, as one node's (capture sees no node handles)
                let nodes: NodeRegions = [(0, regions.unwrap_or_default())].into_iter().collect();
                st.graph_nodes.insert(graph, nodes);
            }
        });
        EndCapture {
            stream: s as u64,
            graph,
        }
    });
    r
}

pub unsafe fn graph_instantiate(h: Export, a: args::GraphInstantiateWithFlags, r: CUresult) {
    let args::GraphInstantiateWithFlags { exec, g, flags } = a;
    instantiated(h, r, (exec, g), |exec| GraphInstantiate {
        exec,
        graph: g as u64,
        flags,
    });
}

/// Record the instantiation (status `r`) of graph `g` into `*exec`, with the shape `shape`
/// builds from the executable graph's handle; when it succeeded, the graph's source is noted
/// under the row's name.
unsafe fn instantiated<S: hrr_calls::Shape>(
    h: Export,
    r: CUresult,
    (exec, g): (*mut Handle, Handle),
    shape: impl FnOnce(u64) -> S,
) {
    rec(h, r, |rc| {
        let exec = out_addr(exec);
        if r == 0 {
            note_graph_source(rc, h.base_name(), g, exec);
        }
        shape(exec)
    });
}

/// CUDA 11's `cuGraphInstantiate` (error node and log buffer; no flags).
pub unsafe fn graph_instantiate_v2(h: Export, a: args::GraphInstantiate, r: CUresult) {
    let args::GraphInstantiate { exec, g, .. } = a;
    instantiated(h, r, (exec, g), |exec| GraphInstantiate {
        exec,
        graph: g as u64,
        flags: 0,
    });
}

pub unsafe fn graph_instantiate_params(
    h: Export,
    a: args::GraphInstantiateWithParams,
    r: CUresult,
) {
    let args::GraphInstantiateWithParams { exec, g, params } = a;
    instantiated(h, r, (exec, g), |exec| {
        let (flags, upload) = params
            .as_ref()
            .map_or((0, 0), |p| (p.flags, p.upload_stream as u64));
        GraphInstantiateParams {
            exec,
            graph: g as u64,
            flags,
            upload_stream: upload,
        }
    });
}

/// `cuGraphDestroy` / `cuGraphExecDestroy` (one row each, same shape): what capture kept of
/// the graph or instantiation is dropped first ([`state::State::forget_graph`]), then the
/// call is made and recorded. First, not once it returned: `cuStreamEndCapture` on another
/// thread is not ordered with it and may be handed the value as soon as the call returns.
pub unsafe fn graph_destroy(h: Export, g: Handle, call: impl Call) -> CUresult {
    let graph = g as u64;
    state::with(|st| {
        if h == Export::cuGraphExecDestroy {
            st.exec_nodes.remove(&graph);
        } else {
            st.forget_graph(graph);
        }
    });
    let r = call();
    rec(h, r, |_| Graph { graph });
    r
}

pub unsafe fn graph_create(h: Export, a: args::GraphCreate, r: CUresult) {
    let args::GraphCreate { g, flags } = a;
    rec(h, r, |_| {
        let graph = out_addr(g);
        if r == 0 {
            state::with(|st| st.graph_nodes.insert(graph, Default::default()));
        }
        GraphCreate { graph, flags }
    });
}

/// `cuGraphExecUpdate`: the instantiation's nodes now have graph `g`'s parameters.
pub unsafe fn graph_exec_update(h: Export, a: args::GraphExecUpdate, r: CUresult) {
    let args::GraphExecUpdate { exec, g, .. } = a;
    rec(h, r, |_| {
        if r == 0 {
            state::with(|st| {
                let nodes = node_regions(st, g as u64).unwrap_or_default();
                st.exec_nodes.insert(exec as u64, nodes);
            });
        }
        GraphExecUpdate {
            exec: exec as u64,
            graph: g as u64,
        }
    });
}

pub unsafe fn graph_clone(h: Export, a: args::GraphClone, r: CUresult) {
    let args::GraphClone { clone, g } = a;
    rec(h, r, |_| {
        let c = out_addr(clone);
        if r == 0 {
            state::with(|st| {
                if let Some(nodes) = st.graph_nodes.get(&(g as u64)).cloned() {
                    st.graph_nodes.insert(c, nodes);
                }
            });
        }
        GraphClone {
            clone: c,
            graph: g as u64,
        }
    });
}

/// The `hrrGraphHost*` rows: record types written by [`graph_launch`], not entry points (no
/// driver has them, so their wrappers answer "not found" before reaching this).
pub unsafe fn graph_host_record(
    _h: Export,
    _exec: Handle,
    _host: u64,
    _n: u64,
    _call: impl Call,
) -> CUresult {
    CUDA_ERROR_NOT_FOUND
}

/// `cuGraphLaunch`: the bytes of the instantiation's host source regions before the launch;
/// after it, once the launch stream is synchronised (never a capturing one), the bytes of its
/// host destination regions.
pub unsafe fn graph_launch(h: Export, a: args::GraphLaunch, call: impl Call) -> CUresult {
    let args::GraphLaunch { exec, s } = a;
    let x = exec as u64;
    let mut regions: Vec<HostRegion> = state::with(|st| {
        st.exec_nodes
            .get(&x)
            .map(|n| n.values().flatten().copied().collect())
            .unwrap_or_default()
    });
    regions.sort_by_key(|r| (r.ptr, r.len, r.to_host));
    regions.dedup();
    host_node::forget(regions.iter().filter(|r| r.to_host).map(|r| (r.ptr, r.len)));
    for reg in regions.iter().filter(|r| !r.to_host) {
        let h2d_blob = host_blob(reg.ptr as *const c_void, reg.len as usize);
        crate::hook::record(&API, Export::hrrGraphHostSource.id(), Some(0), |_| {
            GraphHostSource {
                exec: x,
                host_ptr: reg.ptr,
                bytes: reg.len,
                h2d_blob,
            }
        });
    }
    let r = call();
    rec(h, r, |_| GraphLaunch {
        exec: x,
        stream: s as u64,
    });
    let results: Vec<_> = regions.iter().filter(|r| r.to_host).collect();
    if r == 0 && !results.is_empty() && sync_stream(h, s) == 0 {
        crate::api::cuda::freecheck::results_copied();
        for reg in results {
            // the bytes before program code of the graph ran, if it changed them
            let kept = host_node::take((reg.ptr, reg.len));
            let at = kept.as_ref().map_or(reg.ptr as *const u8, |k| k.as_ptr());
            let d2h_blob = host_blob(at as *const c_void, reg.len as usize);
            crate::hook::record(&API, Export::hrrGraphHostResult.id(), Some(0), |_| {
                GraphHostResult {
                    exec: x,
                    stream: s as u64,
                    host_ptr: reg.ptr,
                    bytes: reg.len,
                    d2h_blob,
                }
            });
        }
        recorder::flush_soft();
    }
    r
}
