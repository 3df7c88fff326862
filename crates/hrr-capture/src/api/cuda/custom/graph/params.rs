//! Node parameter updates, of a graph (`cuGraph*NodeSetParams`) or of an instantiation
//! (`cuGraphExec*NodeSetParams`): recorded as `GraphNode` events like the nodes they change.

#![allow(clippy::missing_safety_doc)]

use super::*;
use crate::api::cuda::calls::args;

/// `cuGraphKernelNodeSetParams` (v1 parameters) and `_v2`.
pub unsafe fn graph_kernel_node_set_params(
    h: Export,
    a: args::GraphKernelNodeSetParams,
    r: CUresult,
) {
    let args::GraphKernelNodeSetParams { node, p } = a;
    let v2 = h == Export::cuGraphKernelNodeSetParams_v2;
    let graph_node = (std::ptr::null_mut(), node);
    set_kernel(h, r, graph_node, p, v2, "cuGraphKernelNodeSetParams");
}

pub unsafe fn graph_memcpy_node_set_params(
    h: Export,
    a: args::GraphMemcpyNodeSetParams,
    r: CUresult,
) {
    let args::GraphMemcpyNodeSetParams { node, p } = a;
    set_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memcpy(nd, p, std::ptr::null_mut())
    });
}

pub unsafe fn graph_memset_node_set_params(
    h: Export,
    a: args::GraphMemsetNodeSetParams,
    r: CUresult,
) {
    let args::GraphMemsetNodeSetParams { node, p } = a;
    set_plain_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memset(nd, p, 0)
    });
}

pub unsafe fn graph_host_node_set_params(h: Export, a: args::GraphHostNodeSetParams, r: CUresult) {
    let args::GraphHostNodeSetParams { node, p } = a;
    set_plain_node(h, r, (std::ptr::null_mut(), node), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphHostNodeSetParams")
    });
}

/// `cuGraphExecKernelNodeSetParams` (v1 parameters) and `_v2`.
pub unsafe fn graph_exec_kernel_node_set_params(
    h: Export,
    a: args::GraphExecKernelNodeSetParams,
    r: CUresult,
) {
    let args::GraphExecKernelNodeSetParams { exec, node, p } = a;
    let v2 = h == Export::cuGraphExecKernelNodeSetParams_v2;
    set_kernel(h, r, (exec, node), p, v2, "cuGraphExecKernelNodeSetParams");
}

pub unsafe fn graph_exec_memcpy_node_set_params(
    h: Export,
    a: args::GraphExecMemcpyNodeSetParams,
    r: CUresult,
) {
    let args::GraphExecMemcpyNodeSetParams { exec, node, p, ctx } = a;
    set_node(h, r, (exec, node), |_, nd| fill_memcpy(nd, p, ctx));
}

pub unsafe fn graph_exec_memset_node_set_params(
    h: Export,
    a: args::GraphExecMemsetNodeSetParams,
    r: CUresult,
) {
    let args::GraphExecMemsetNodeSetParams { exec, node, p, ctx } = a;
    set_plain_node(h, r, (exec, node), |_, nd| fill_memset(nd, p, ctx as u64));
}

pub unsafe fn graph_exec_host_node_set_params(
    h: Export,
    a: args::GraphExecHostNodeSetParams,
    r: CUresult,
) {
    let args::GraphExecHostNodeSetParams { exec, node, p } = a;
    set_plain_node(h, r, (exec, node), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphExecHostNodeSetParams")
    });
}

pub unsafe fn graph_exec_child_graph_node_set_params(
    h: Export,
    a: args::GraphExecChildGraphNodeSetParams,
    r: CUresult,
) {
    let args::GraphExecChildGraphNodeSetParams { exec, node, child } = a;
    set_node(h, r, (exec, node), |_, nd| fill_child(nd, child));
}

/// [`set_node`] for a node without host regions: `fill` sets its type's fields.
unsafe fn set_plain_node(
    h: Export,
    r: CUresult,
    target: (Handle, Handle),
    fill: impl FnOnce(&mut Recorder, &mut GraphNode),
) {
    set_node(h, r, target, |rc, nd| {
        fill(rc, nd);
        Vec::new()
    });
}

/// New kernel parameters `p` (`v2`: the `_v2` layout) of `target`, recorded as `call`: the
/// function bound first when capture never saw it looked up.
unsafe fn set_kernel(
    h: Export,
    r: CUresult,
    target: (Handle, Handle),
    p: *const u8,
    v2: bool,
    call: &str,
) {
    bind_node_function(p, v2);
    set_plain_node(h, r, target, |rc, nd| fill_kernel(rc, nd, p, v2, call));
}
