//! Stream capture, graph instantiation (graphs neither a recorded capture nor recorded node-by-node
//! construction produced are noted unreplayable), explicit graph construction (`cuGraphCreate`,
//! `cuGraphAdd*Node`, parameter updates, exec updates, clones) and graph launches.
//!
//! Explicit graphs: every node call records one `GraphNode` (kernel nodes through
//! `launch.rs`'s [`launch_fields`], as `cuLaunchKernel`); capture keeps, per graph and per
//! instantiation, the host regions its memcpy nodes read and write. At each `cuGraphLaunch` the
//! bytes of every host source region are recorded before the launch (`hrrGraphHostSource`: the
//! graph reads them at every launch), and once the launch stream is synchronised the bytes of
//! every host destination region (`hrrGraphHostResult`, checked by replay like a D2H copy).
//! A graph made by stream capture gets the host regions of the copies issued into the capture
//! (`copy.rs`), so its launches record the same two events.

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use hrr_calls::cuda::ffi::{
    copy_side, node_type, set_copy_side, CUresult, Handle, InstantiateParams, CUDA_ERROR_NOT_FOUND,
    EDGE_DATA_BYTES, MEMCPY3D_BYTES, MEMORYTYPE_DEVICE, MEMORYTYPE_HOST, MEMORYTYPE_UNIFIED,
    MEMSET_NODE_BYTES, MEM_ALLOC_BYTESIZE_AT,
};
use hrr_calls::shapes::*;

use super::copy::{capture_id, is_device_ptr, sync_stream};
use super::host_node;
use super::launch::{launch_fields, LaunchCall};
use super::{host_blob, rec};
use crate::api::cuda::calls::{effective_stream, real_fn, Export};
use crate::api::cuda::state::{self, HostRegion, NodeRegions, State};
use crate::api::cuda::API;
use crate::hook::args::{bytes_at, out_addr};
use crate::hook::common::LaunchHostFn;
use crate::hook::ApiExport;
use crate::recorder::{self, Recorder};

/// Why a graph that neither a recorded stream capture nor recorded node-by-node construction
/// produced cannot be replayed.
const GRAPH_NOT_RECORDED: &str = "graph was built before capture started (neither a recorded stream capture nor recorded cuGraphCreate/cuGraphAdd*Node calls made it); replay skips it";

/// Why conditional nodes are not replayed.
const CONDITIONAL: &str = "conditional graph node (CU_GRAPH_NODE_TYPE_CONDITIONAL): its body graphs and condition handle are not rebuilt; replay skips the node and launches of its graph";

/// What replay does with host nodes.
const HOST_NODE: &str = "graph host nodes run application code that is not in the archive; replay runs a no-op host function in their place";

/// Note an instantiation of a graph that replay cannot rebuild; remember the instantiation's
/// host regions (from its graph's nodes).
fn note_graph_source(rc: &mut Recorder, call: &str, g: Handle, exec: u64) {
    let known = state::with(|st| {
        let nodes = st.graph_nodes.get(&(g as u64)).cloned();
        let known = nodes.is_some() || st.captured_graphs.contains(&(g as u64));
        st.exec_nodes.insert(exec, nodes.unwrap_or_default());
        known
    });
    if !known {
        rc.note_unreplayable(call, GRAPH_NOT_RECORDED);
    }
}

/// Every host region of graph `g`'s nodes.
fn graph_regions(st: &State, g: u64) -> Vec<HostRegion> {
    st.graph_nodes
        .get(&g)
        .map(|n| n.values().flatten().copied().collect())
        .unwrap_or_default()
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

pub unsafe fn stream_begin_capture(
    h: Export,
    s: Handle,
    mode: c_int,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| {
        if r == 0 {
            state::with(|st| st.capturing.insert(s as u64));
        }
        BeginCapture {
            stream: s as u64,
            mode,
        }
    });
    r
}

pub unsafe fn stream_end_capture(
    h: Export,
    s: Handle,
    g: *mut Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let id = capture_id(h, s);
    let r = call();
    rec(h, r, |_| {
        let graph = out_addr(g);
        state::with(|st| {
            st.capturing.remove(&(s as u64));
            let regions = id.and_then(|id| st.capture_regions.remove(&id));
            if r == 0 {
                st.captured_graphs.insert(graph);
                // the captured copies' host regions, as one node's (capture sees no node handles)
                let nodes = NodeRegions::from([(0, regions.unwrap_or_default())]);
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

pub unsafe fn graph_instantiate(
    h: Export,
    exec: *mut Handle,
    g: Handle,
    flags: u64,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |rc| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiateWithFlags", g, out_addr(exec));
        }
        GraphInstantiate {
            exec: out_addr(exec),
            graph: g as u64,
            flags,
        }
    });
    r
}

/// CUDA 11's `cuGraphInstantiate` (error node and log buffer; no flags).
pub unsafe fn graph_instantiate_v2(
    h: Export,
    exec: *mut Handle,
    g: Handle,
    _err_node: *mut Handle,
    _log: *mut c_char,
    _log_size: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |rc| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiate_v2", g, out_addr(exec));
        }
        GraphInstantiate {
            exec: out_addr(exec),
            graph: g as u64,
            flags: 0,
        }
    });
    r
}

pub unsafe fn graph_instantiate_params(
    h: Export,
    exec: *mut Handle,
    g: Handle,
    params: *mut InstantiateParams,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |rc| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiateWithParams", g, out_addr(exec));
        }
        let (flags, upload) = params
            .as_ref()
            .map_or((0, 0), |p| (p.flags, p.upload_stream as u64));
        GraphInstantiateParams {
            exec: out_addr(exec),
            graph: g as u64,
            flags,
            upload_stream: upload,
        }
    });
    r
}

pub unsafe fn graph_create(
    h: Export,
    g: *mut Handle,
    flags: c_uint,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| {
        let graph = out_addr(g);
        if r == 0 {
            state::with(|st| st.graph_nodes.insert(graph, Default::default()));
        }
        GraphCreate { graph, flags }
    });
    r
}

/// A kernel node's `CUDA_KERNEL_NODE_PARAMS` at `p` (`v2`: with `kern` and `ctx` after
/// `extra`), recorded as `cuLaunchKernel` records a launch.
/// The function of kernel node parameters `p`, bound first when capture never saw it looked up
/// (as `launch.rs` does for launches: a library's private path to the driver).
unsafe fn bind_node_function(p: *const u8, v2: bool) {
    if p.is_null() {
        return;
    }
    let f = match word_at(p, 0) {
        0 if v2 => word_at(p, 56),
        f => f,
    };
    if f != 0 {
        super::code::bind_unseen_function(f as Handle);
    }
}

unsafe fn fill_kernel(rc: &mut Recorder, n: &mut GraphNode, p: *const u8, v2: bool, call: &str) {
    n.node_type = node_type::KERNEL;
    if p.is_null() {
        return;
    }
    let u = |at: usize| (p.add(at) as *const c_uint).read_unaligned();
    let (kern, ctx) = if v2 {
        (word_at(p, 56), word_at(p, 64))
    } else {
        (0, 0)
    };
    let f = match word_at(p, 0) {
        0 => kern,
        f => f,
    } as Handle;
    let l = LaunchCall::grid(
        f,
        [u(8), u(12), u(16)],
        [u(20), u(24), u(28)],
        u(32),
        std::ptr::null_mut(),
        false,
    );
    let params = word_at(p, 40) as *mut *mut c_void;
    let extra = word_at(p, 48) as *mut *mut c_void;
    let l = launch_fields(rc, call, l, params, extra);
    n.ctx = ctx;
    n.function = l.function;
    n.library_kernel = (kern != 0 && kern == l.function
        || state::with(|st| {
            st.kernels
                .get(&l.function)
                .is_some_and(|k| k.is_library_kernel)
        })) as u8;
    n.kernel = l.kernel;
    n.code = l.code;
    (n.grid_x, n.grid_y, n.grid_z) = (l.grid_x, l.grid_y, l.grid_z);
    (n.block_x, n.block_y, n.block_z) = (l.block_x, l.block_y, l.block_z);
    n.shared_mem = l.shared_mem;
    n.args = l.args;
    n.arg_offsets = l.arg_offsets;
    n.arg_sizes = l.arg_sizes;
    n.args_known = l.args_known;
}

/// A memcpy node's `CUDA_MEMCPY3D` at `p`, unified pointers resolved to host or device memory;
/// returns the host regions it reads and writes.
unsafe fn fill_memcpy(n: &mut GraphNode, p: *const u8, ctx: Handle) -> Vec<HostRegion> {
    n.node_type = node_type::MEMCPY;
    n.ctx = ctx as u64;
    let mut b = bytes_at(p, MEMCPY3D_BYTES).to_vec();
    if b.is_empty() {
        return Vec::new();
    }
    let mut regions = Vec::new();
    for dst in [false, true] {
        let side = copy_side(&b, dst);
        if side.memory_type == MEMORYTYPE_UNIFIED {
            if is_device_ptr(side.device) {
                set_copy_side(&mut b, dst, MEMORYTYPE_DEVICE, 0, side.device);
            } else {
                set_copy_side(&mut b, dst, MEMORYTYPE_HOST, side.device, 0);
            }
        }
        let side = copy_side(&b, dst);
        if side.memory_type == MEMORYTYPE_HOST && side.host != 0 {
            regions.push(HostRegion {
                ptr: side.host,
                len: side.span,
                to_host: dst,
            });
        }
    }
    n.copy = b;
    regions
}

/// A memset node's `CUDA_MEMSET_NODE_PARAMS` at `p`.
unsafe fn fill_memset(n: &mut GraphNode, p: *const u8, ctx: u64) {
    n.node_type = node_type::MEMSET;
    n.ctx = ctx;
    n.memset = bytes_at(p, MEMSET_NODE_BYTES).to_vec();
}

/// A host node's `CUDA_HOST_NODE_PARAMS` at `p` (function, user data).
unsafe fn fill_host(rc: &mut Recorder, n: &mut GraphNode, p: *const u8, call: &str) {
    rc.note_unreplayable(call, HOST_NODE);
    n.node_type = node_type::HOST;
    if !p.is_null() {
        n.host_fn = word_at(p, 0);
        n.host_data = word_at(p, 8);
    }
}

/// A memory alloc node's `CUDA_MEM_ALLOC_NODE_PARAMS` at `p` (its `dptr` set by the driver).
unsafe fn fill_mem_alloc(n: &mut GraphNode, p: *const u8) {
    n.node_type = node_type::MEM_ALLOC;
    if !p.is_null() {
        let at = MEM_ALLOC_BYTESIZE_AT;
        let (bytesize, dptr) = (word_at(p, at), word_at(p, at + 8));
        n.args = [dptr.to_le_bytes(), bytesize.to_le_bytes()].concat();
    }
}

/// A memory free node of `dptr`.
fn fill_mem_free(n: &mut GraphNode, dptr: u64) {
    n.node_type = node_type::MEM_FREE;
    n.args = dptr.to_le_bytes().to_vec();
}

/// A child-graph node of `child`: the child's host regions.
fn fill_child(n: &mut GraphNode, child: Handle) -> Vec<HostRegion> {
    n.node_type = node_type::GRAPH;
    n.child = child as u64;
    state::with(|st| graph_regions(st, child as u64))
}

/// The generic `CUgraphNodeParams` at `p` (type, then the type's parameters at byte 16).
unsafe fn fill_generic(
    rc: &mut Recorder,
    n: &mut GraphNode,
    p: *const u8,
    call: &str,
) -> Vec<HostRegion> {
    if p.is_null() {
        return Vec::new();
    }
    let ty = (p as *const i32).read_unaligned();
    let u = p.add(16);
    let regions = match ty {
        node_type::KERNEL => {
            fill_kernel(rc, n, u, true, call);
            Vec::new()
        }
        // CUDA_MEMCPY_NODE_PARAMS: flags, reserved, copyCtx, then CUDA_MEMCPY3D.
        node_type::MEMCPY => fill_memcpy(n, u.add(16), word_at(u, 8) as Handle),
        // CUDA_MEMSET_NODE_PARAMS_v2: v1's fields, then ctx.
        node_type::MEMSET => {
            fill_memset(n, u, word_at(u, MEMSET_NODE_BYTES));
            Vec::new()
        }
        node_type::HOST => {
            fill_host(rc, n, u, call);
            Vec::new()
        }
        node_type::GRAPH => fill_child(n, word_at(u, 0) as Handle),
        node_type::WAIT_EVENT | node_type::EVENT_RECORD => {
            n.event = word_at(u, 0);
            Vec::new()
        }
        node_type::EMPTY => Vec::new(),
        node_type::MEM_ALLOC => {
            fill_mem_alloc(n, u);
            Vec::new()
        }
        node_type::MEM_FREE => {
            fill_mem_free(n, word_at(u, 0));
            Vec::new()
        }
        node_type::CONDITIONAL => {
            rc.note_unreplayable(call, CONDITIONAL);
            Vec::new()
        }
        other => {
            rc.note_unreplayable(
                call,
                &format!("graph node type {other} is not recorded; replay skips it"),
            );
            Vec::new()
        }
    };
    n.node_type = ty;
    regions
}

/// Record a node added to graph `g` after `deps`: `fill` sets its type's fields and returns its
/// host regions, which capture keeps under the graph.
unsafe fn add_node(
    h: Export,
    r: CUresult,
    (node, g): (*mut Handle, Handle),
    (deps, edges): (Vec<u64>, Vec<u8>),
    fill: impl FnOnce(&mut Recorder, &mut GraphNode) -> Vec<HostRegion>,
) {
    rec(h, r, |rc| {
        let mut n = GraphNode {
            node: out_addr(node),
            graph: g as u64,
            deps,
            edges,
            ..Default::default()
        };
        let regions = fill(rc, &mut n);
        if r == 0 {
            state::with(|st| {
                st.node_graph.insert(n.node, n.graph);
                st.graph_nodes
                    .entry(n.graph)
                    .or_default()
                    .insert(n.node, regions);
            });
        }
        n
    });
}

/// Record new parameters of `node` (of a graph; of instantiation `exec` when not null).
unsafe fn set_node(
    h: Export,
    r: CUresult,
    (exec, node): (Handle, Handle),
    fill: impl FnOnce(&mut Recorder, &mut GraphNode) -> Vec<HostRegion>,
) {
    rec(h, r, |rc| {
        let mut n = GraphNode {
            node: node as u64,
            exec: exec as u64,
            ..Default::default()
        };
        let regions = fill(rc, &mut n);
        if r == 0 {
            state::with(|st| {
                let nodes = match n.exec {
                    0 => st
                        .node_graph
                        .get(&n.node)
                        .copied()
                        .map(|g| st.graph_nodes.entry(g).or_default()),
                    x => Some(st.exec_nodes.entry(x).or_default()),
                };
                if let Some(nodes) = nodes {
                    nodes.insert(n.node, regions);
                }
            });
        }
        n
    });
}

/// `cuGraphAddKernelNode` (v1 parameters) and `_v2` (with `kern` and `ctx`).
pub unsafe fn graph_add_kernel_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let v2 = h == Export::cuGraphAddKernelNode_v2;
    bind_node_function(p, v2);
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |rc, nd| {
        fill_kernel(rc, nd, p, v2, "cuGraphAddKernelNode");
        Vec::new()
    });
    r
}

pub unsafe fn graph_add_memcpy_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *const u8,
    ctx: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |_, nd| {
        fill_memcpy(nd, p, ctx)
    });
    r
}

pub unsafe fn graph_add_memset_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *const u8,
    ctx: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |_, nd| {
        fill_memset(nd, p, ctx as u64);
        Vec::new()
    });
    r
}

pub unsafe fn graph_add_host_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let deps = handles(deps, n);
    // the D2H regions of the nodes it follows: kept before the program's code runs
    let follows: Vec<(u64, u64)> = state::with(|st| {
        let nodes = st.graph_nodes.get(&(g as u64));
        let regions = deps.iter().filter_map(|d| nodes.and_then(|m| m.get(d)));
        regions
            .flatten()
            .filter(|r| r.to_host)
            .map(|r| (r.ptr, r.len))
            .collect()
    });
    type AddHostNode =
        unsafe extern "C" fn(*mut Handle, Handle, *const Handle, usize, *const u8) -> CUresult;
    let real = real_fn::<AddHostNode>(h);
    let r = match (p.is_null() || follows.is_empty(), real) {
        (false, Some(real)) => {
            let (func, data) = host_node::wrap(word_at(p, 0), word_at(p, 8), follows);
            let params = [func, data];
            real(
                node,
                g,
                deps.as_ptr() as *const Handle,
                n,
                params.as_ptr() as *const u8,
            )
        }
        _ => call(),
    };
    add_node(h, r, (node, g), (deps, Vec::new()), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphAddHostNode");
        Vec::new()
    });
    r
}

/// `cuLaunchHostFunc`: recorded as every host function (`hook::common`); inside a stream
/// capture, one following D2H copies of the capture is wrapped (`host_node.rs`).
pub unsafe fn launch_host_func(
    h: Export,
    s: Handle,
    func: *mut c_void,
    data: *mut c_void,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let follows: Vec<(u64, u64)> = match capture_id(h, s) {
        Some(id) => state::with(|st| {
            let regions = st.capture_regions.get(&id).into_iter().flatten();
            regions
                .filter(|r| r.to_host)
                .map(|r| (r.ptr, r.len))
                .collect()
        }),
        None => Vec::new(),
    };
    let real = real_fn::<LaunchHostFn>(h);
    match (follows.is_empty(), real) {
        (false, Some(real)) => {
            let (f, d) = host_node::wrap(func as u64, data as u64, follows);
            // SAFETY: `f` is `func` or the wrapper, both host functions.
            let f = std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(f as usize);
            crate::hook::common::launch_host_func(h, s, func, data, || {
                real(effective_stream(h, s), f, d as *mut c_void)
            })
        }
        _ => crate::hook::common::launch_host_func(h, s, func, data, call),
    }
}

pub unsafe fn graph_add_mem_alloc_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *mut u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    add_plain_node(h, (node, g), (deps, n), call, |nd| fill_mem_alloc(nd, p))
}

pub unsafe fn graph_add_mem_free_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    dptr: u64,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    add_plain_node(h, (node, g), (deps, n), call, |nd| fill_mem_free(nd, dptr))
}

/// A node without edge data or host regions, after `call`: `fill` sets its type's fields.
unsafe fn add_plain_node(
    h: Export,
    (node, g): (*mut Handle, Handle),
    (deps, n): (*const Handle, usize),
    call: impl FnOnce() -> CUresult,
    fill: impl FnOnce(&mut GraphNode),
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |_, nd| {
        fill(nd);
        Vec::new()
    });
    r
}

pub unsafe fn graph_add_empty_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    add_plain_node(h, (node, g), (deps, n), call, |nd| {
        nd.node_type = node_type::EMPTY
    })
}

/// An event record or wait node.
unsafe fn add_event_node(
    h: Export,
    (node, g): (*mut Handle, Handle),
    (deps, n): (*const Handle, usize),
    (e, ty): (Handle, i32),
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |_, nd| {
        nd.node_type = ty;
        nd.event = e as u64;
        Vec::new()
    });
    r
}

pub unsafe fn graph_add_event_record_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    e: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    add_event_node(h, (node, g), (deps, n), (e, node_type::EVENT_RECORD), call)
}

pub unsafe fn graph_add_event_wait_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    e: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    add_event_node(h, (node, g), (deps, n), (e, node_type::WAIT_EVENT), call)
}

pub unsafe fn graph_add_child_graph_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    child: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |_, nd| {
        fill_child(nd, child)
    });
    r
}

pub unsafe fn graph_add_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *mut u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), |rc, nd| {
        fill_generic(rc, nd, p, "cuGraphAddNode")
    });
    r
}

pub unsafe fn graph_add_node_v2(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    edges: *const u8,
    n: usize,
    p: *mut u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let edges = bytes_at(edges, n.min(1 << 16) * EDGE_DATA_BYTES).to_vec();
    add_node(h, r, (node, g), (handles(deps, n), edges), |rc, nd| {
        fill_generic(rc, nd, p, "cuGraphAddNode_v2")
    });
    r
}

pub unsafe fn graph_add_dependencies(
    h: Export,
    g: Handle,
    from: *const Handle,
    to: *const Handle,
    n: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    graph_add_dependencies_v2(h, g, from, to, std::ptr::null(), n, call)
}

pub unsafe fn graph_add_dependencies_v2(
    h: Export,
    g: Handle,
    from: *const Handle,
    to: *const Handle,
    edges: *const u8,
    n: usize,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| GraphEdges {
        graph: g as u64,
        from: handles(from, n),
        to: handles(to, n),
        edges: bytes_at(edges, n.min(1 << 16) * EDGE_DATA_BYTES).to_vec(),
    });
    r
}

/// `cuGraphKernelNodeSetParams` (v1 parameters) and `_v2`.
pub unsafe fn graph_kernel_node_set_params(
    h: Export,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let v2 = h == Export::cuGraphKernelNodeSetParams_v2;
    bind_node_function(p, v2);
    set_node(h, r, (std::ptr::null_mut(), node), |rc, nd| {
        fill_kernel(rc, nd, p, v2, "cuGraphKernelNodeSetParams");
        Vec::new()
    });
    r
}

pub unsafe fn graph_memcpy_node_set_params(
    h: Export,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memcpy(nd, p, std::ptr::null_mut())
    });
    r
}

pub unsafe fn graph_memset_node_set_params(
    h: Export,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memset(nd, p, 0);
        Vec::new()
    });
    r
}

pub unsafe fn graph_host_node_set_params(
    h: Export,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (std::ptr::null_mut(), node), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphHostNodeSetParams");
        Vec::new()
    });
    r
}

/// `cuGraphExecKernelNodeSetParams` (v1 parameters) and `_v2`.
pub unsafe fn graph_exec_kernel_node_set_params(
    h: Export,
    exec: Handle,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let v2 = h == Export::cuGraphExecKernelNodeSetParams_v2;
    bind_node_function(p, v2);
    set_node(h, r, (exec, node), |rc, nd| {
        fill_kernel(rc, nd, p, v2, "cuGraphExecKernelNodeSetParams");
        Vec::new()
    });
    r
}

pub unsafe fn graph_exec_memcpy_node_set_params(
    h: Export,
    exec: Handle,
    node: Handle,
    p: *const u8,
    ctx: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (exec, node), |_, nd| fill_memcpy(nd, p, ctx));
    r
}

pub unsafe fn graph_exec_memset_node_set_params(
    h: Export,
    exec: Handle,
    node: Handle,
    p: *const u8,
    ctx: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (exec, node), |_, nd| {
        fill_memset(nd, p, ctx as u64);
        Vec::new()
    });
    r
}

pub unsafe fn graph_exec_host_node_set_params(
    h: Export,
    exec: Handle,
    node: Handle,
    p: *const u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (exec, node), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphExecHostNodeSetParams");
        Vec::new()
    });
    r
}

pub unsafe fn graph_exec_child_graph_node_set_params(
    h: Export,
    exec: Handle,
    node: Handle,
    child: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    set_node(h, r, (exec, node), |_, nd| fill_child(nd, child));
    r
}

/// `cuGraphExecUpdate`: the instantiation's nodes now have graph `g`'s parameters.
pub unsafe fn graph_exec_update(
    h: Export,
    exec: Handle,
    g: Handle,
    _info: *mut u8,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    rec(h, r, |_| {
        if r == 0 {
            state::with(|st| {
                let nodes = st.graph_nodes.get(&(g as u64)).cloned().unwrap_or_default();
                st.exec_nodes.insert(exec as u64, nodes);
            });
        }
        GraphExecUpdate {
            exec: exec as u64,
            graph: g as u64,
        }
    });
    r
}

pub unsafe fn graph_clone(
    h: Export,
    clone: *mut Handle,
    g: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
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
    r
}

/// The `hrrGraphHost*` rows: record types written by [`graph_launch`], not entry points (no
/// driver has them, so their wrappers answer "not found" before reaching this).
pub unsafe fn graph_host_record(
    _h: Export,
    _exec: Handle,
    _host: u64,
    _n: u64,
    _call: impl FnOnce() -> CUresult,
) -> CUresult {
    CUDA_ERROR_NOT_FOUND
}

/// `cuGraphLaunch`: the bytes of the instantiation's host source regions before the launch;
/// after it, once the launch stream is synchronised (never a capturing one), the bytes of its
/// host destination regions.
pub unsafe fn graph_launch(
    h: Export,
    exec: Handle,
    s: Handle,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
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
