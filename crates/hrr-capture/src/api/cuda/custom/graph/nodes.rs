//! Explicit graph construction: `cuGraphCreate`'s nodes, one `GraphNode` event each
//! (`cuGraphAdd*Node`, the generic `cuGraphAddNode[_v2]`, dependencies), with the host regions
//! their memcpy nodes read and write remembered per graph (`super` records them at launches).

#![allow(clippy::missing_safety_doc)]

use super::*;
use crate::api::cuda::calls::args;
use crate::api::cuda::custom::Call;

/// A kernel node's `CUDA_KERNEL_NODE_PARAMS` at `p` (`v2`: with `kern` and `ctx` after
/// `extra`), recorded as `cuLaunchKernel` records a launch.
/// The function of kernel node parameters `p`, bound first when capture never saw it looked up
/// (as `launch.rs` does for launches: a library's private path to the driver).
pub(super) unsafe fn bind_node_function(p: *const u8, v2: bool) {
    if p.is_null() {
        return;
    }
    let f = match word_at(p, 0) {
        0 if v2 => word_at(p, 56),
        f => f,
    };
    if f != 0 {
        super::super::code::bind_unseen_function(f as Handle);
    }
}

pub(super) unsafe fn fill_kernel(
    rc: &mut Recorder,
    n: &mut GraphNode,
    p: *const u8,
    v2: bool,
    call: &str,
) {
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
    let prepared = prepare(&l, params, extra);
    let l = launch_fields(rc, call, l, prepared);
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
pub(super) unsafe fn fill_memcpy(n: &mut GraphNode, p: *const u8, ctx: Handle) -> Vec<HostRegion> {
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
pub(super) unsafe fn fill_memset(n: &mut GraphNode, p: *const u8, ctx: u64) {
    n.node_type = node_type::MEMSET;
    n.ctx = ctx;
    n.memset = bytes_at(p, MEMSET_NODE_BYTES).to_vec();
}

/// A host node's `CUDA_HOST_NODE_PARAMS` at `p` (function, user data).
pub(super) unsafe fn fill_host(rc: &mut Recorder, n: &mut GraphNode, p: *const u8, call: &str) {
    rc.note_unreplayable(call, HOST_NODE);
    n.node_type = node_type::HOST;
    if !p.is_null() {
        n.host_fn = word_at(p, 0);
        n.host_data = word_at(p, 8);
    }
}

/// A memory alloc node's `CUDA_MEM_ALLOC_NODE_PARAMS` at `p` (its `dptr` set by the driver).
pub(super) unsafe fn fill_mem_alloc(n: &mut GraphNode, p: *const u8) {
    n.node_type = node_type::MEM_ALLOC;
    if !p.is_null() {
        let at = MEM_ALLOC_BYTESIZE_AT;
        let (bytesize, dptr) = (word_at(p, at), word_at(p, at + 8));
        n.args = [dptr.to_le_bytes(), bytesize.to_le_bytes()].concat();
    }
}

/// A memory free node of `dptr`.
pub(super) fn fill_mem_free(n: &mut GraphNode, dptr: u64) {
    n.node_type = node_type::MEM_FREE;
    n.args = dptr.to_le_bytes().to_vec();
}

/// A conditional node's `CUDA_CONDITIONAL_NODE_PARAMS` at `u` (handle, type, size, the body
/// graphs the driver wrote to `phGraph_out`, at most 64), read after the call; the bodies are
/// remembered as the graph's (`graph_regions` takes their nodes' host regions).
pub(super) unsafe fn fill_conditional(n: &mut GraphNode, u: *const u8) {
    n.node_type = node_type::CONDITIONAL;
    let handle = word_at(u, 0);
    let ty = (u.add(8) as *const c_uint).read_unaligned();
    let size = (u.add(12) as *const c_uint).read_unaligned();
    let out = word_at(u, 16) as *const Handle;
    let bodies = handles(out, size.min(64) as usize);
    n.cond = [handle, u64::from(ty), u64::from(size)]
        .into_iter()
        .chain(bodies.iter().copied())
        .collect();
    if n.graph != 0 && !bodies.is_empty() {
        state::with(|st| st.graph_bodies.entry(n.graph).or_default().extend(bodies));
    }
}

/// A child-graph node of `child`: the child's host regions.
pub(super) fn fill_child(n: &mut GraphNode, child: Handle) -> Vec<HostRegion> {
    n.node_type = node_type::GRAPH;
    n.child = child as u64;
    state::with(|st| graph_regions(st, child as u64))
}

/// The generic `CUgraphNodeParams` at `p` (type, then the type's parameters at byte 16).
pub(super) unsafe fn fill_generic(
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
            fill_conditional(n, u);
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
pub(super) unsafe fn add_node(
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
pub(super) unsafe fn set_node(
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
pub unsafe fn graph_add_kernel_node(h: Export, a: args::GraphAddKernelNode, r: CUresult) {
    let v2 = h == Export::cuGraphAddKernelNode_v2;
    bind_node_function(a.p, v2);
    add_node(
        h,
        r,
        (a.node, a.g),
        (handles(a.deps, a.n), Vec::new()),
        |rc, nd| {
            fill_kernel(rc, nd, a.p, v2, "cuGraphAddKernelNode");
            Vec::new()
        },
    );
}

pub unsafe fn graph_add_memcpy_node(
    h: Export,
    a: args::GraphAddMemcpyNode,
    call: impl Call,
) -> CUresult {
    add_node_after(h, (a.node, a.g), (a.deps, a.n), call, |_, nd| {
        fill_memcpy(nd, a.p, a.ctx)
    })
}

pub unsafe fn graph_add_memset_node(
    h: Export,
    a: args::GraphAddMemsetNode,
    call: impl Call,
) -> CUresult {
    add_node_after(h, (a.node, a.g), (a.deps, a.n), call, |_, nd| {
        fill_memset(nd, a.p, a.ctx as u64);
        Vec::new()
    })
}

pub unsafe fn graph_add_host_node(
    h: Export,
    a: args::GraphAddHostNode,
    call: impl Call,
) -> CUresult {
    let args::GraphAddHostNode {
        node,
        g,
        deps,
        n,
        p,
    } = a;
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

/// `cuStreamAddCallback`: a host function by another name (its callback also takes the stream
/// and a status), recorded as every host function (`hook::common`); a stream capture refuses
/// it.
pub unsafe fn stream_add_callback(
    h: Export,
    a: args::StreamAddCallback,
    call: impl Call,
) -> CUresult {
    let args::StreamAddCallback { s, cb, data, .. } = a;
    crate::hook::common::launch_host_func(h, s, cb, data, call)
}

/// `cuLaunchHostFunc`: recorded as every host function (`hook::common`); inside a stream
/// capture, one following D2H copies of the capture is wrapped (`host_node.rs`).
pub unsafe fn launch_host_func(h: Export, a: args::LaunchHostFunc, call: impl Call) -> CUresult {
    let args::LaunchHostFunc { s, func, data } = a;
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
    a: args::GraphAddMemAllocNode,
    call: impl Call,
) -> CUresult {
    add_plain_node(h, (a.node, a.g), (a.deps, a.n), call, |nd| {
        fill_mem_alloc(nd, a.p)
    })
}

pub unsafe fn graph_add_mem_free_node(
    h: Export,
    a: args::GraphAddMemFreeNode,
    call: impl Call,
) -> CUresult {
    add_plain_node(h, (a.node, a.g), (a.deps, a.n), call, |nd| {
        fill_mem_free(nd, a.dptr)
    })
}

/// [`add_node`] after `call`, for a node without edge data whose dependencies are the `n`
/// handles at `deps`: `fill` sets its type's fields and returns its host regions.
pub(super) unsafe fn add_node_after(
    h: Export,
    (node, g): (*mut Handle, Handle),
    (deps, n): (*const Handle, usize),
    call: impl Call,
    fill: impl FnOnce(&mut Recorder, &mut GraphNode) -> Vec<HostRegion>,
) -> CUresult {
    let r = call();
    add_node(h, r, (node, g), (handles(deps, n), Vec::new()), fill);
    r
}

/// A node without edge data or host regions, after `call`: `fill` sets its type's fields.
pub(super) unsafe fn add_plain_node(
    h: Export,
    (node, g): (*mut Handle, Handle),
    (deps, n): (*const Handle, usize),
    call: impl Call,
    fill: impl FnOnce(&mut GraphNode),
) -> CUresult {
    add_node_after(h, (node, g), (deps, n), call, |_, nd| {
        fill(nd);
        Vec::new()
    })
}

pub unsafe fn graph_add_empty_node(
    h: Export,
    a: args::GraphAddEmptyNode,
    call: impl Call,
) -> CUresult {
    let args::GraphAddEmptyNode { node, g, deps, n } = a;
    add_plain_node(h, (node, g), (deps, n), call, |nd| {
        nd.node_type = node_type::EMPTY
    })
}

/// `cuGraphAddEventRecordNode` and `cuGraphAddEventWaitNode` (one row each, same arguments):
/// an event record or wait node, its type by the export.
pub unsafe fn graph_add_event_node(
    h: Export,
    node: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    e: Handle,
    call: impl Call,
) -> CUresult {
    let ty = if h == Export::cuGraphAddEventRecordNode {
        node_type::EVENT_RECORD
    } else {
        node_type::WAIT_EVENT
    };
    add_plain_node(h, (node, g), (deps, n), call, |nd| {
        nd.node_type = ty;
        nd.event = e as u64;
    })
}

pub unsafe fn graph_add_child_graph_node(
    h: Export,
    a: args::GraphAddChildGraphNode,
    call: impl Call,
) -> CUresult {
    add_node_after(h, (a.node, a.g), (a.deps, a.n), call, |_, nd| {
        fill_child(nd, a.child)
    })
}

pub unsafe fn graph_add_node(h: Export, a: args::GraphAddNode, call: impl Call) -> CUresult {
    add_node_after(h, (a.node, a.g), (a.deps, a.n), call, |rc, nd| {
        fill_generic(rc, nd, a.p, "cuGraphAddNode")
    })
}

pub unsafe fn graph_add_node_v2(h: Export, a: args::GraphAddNodeV2, r: CUresult) {
    let edges = bytes_at(a.edges, a.n.min(1 << 16) * EDGE_DATA_BYTES).to_vec();
    add_node(
        h,
        r,
        (a.node, a.g),
        (handles(a.deps, a.n), edges),
        |rc, nd| fill_generic(rc, nd, a.p, "cuGraphAddNode_v2"),
    );
}

pub unsafe fn graph_add_dependencies(h: Export, a: args::GraphAddDependencies, r: CUresult) {
    edges_added(h, r, a.g, (a.from, a.to, a.n), std::ptr::null());
}

pub unsafe fn graph_add_dependencies_v2(h: Export, a: args::GraphAddDependenciesV2, r: CUresult) {
    edges_added(h, r, a.g, (a.from, a.to, a.n), a.edges);
}

/// The `n` edges `from[i]` -> `to[i]` added to graph `g`, with their edge data at `edges`
/// (null: default edges, as `cuGraphAddDependencies` adds them).
unsafe fn edges_added(
    h: Export,
    r: CUresult,
    g: Handle,
    (from, to, n): (*const Handle, *const Handle, usize),
    edges: *const u8,
) {
    rec(h, r, |_| GraphEdges {
        graph: g as u64,
        from: handles(from, n),
        to: handles(to, n),
        edges: bytes_at(edges, n.min(1 << 16) * EDGE_DATA_BYTES).to_vec(),
    });
}
