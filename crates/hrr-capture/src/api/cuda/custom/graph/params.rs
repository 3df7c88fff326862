//! Node parameter updates, of a graph (`cuGraph*NodeSetParams`) or of an instantiation
//! (`cuGraphExec*NodeSetParams`): recorded as `GraphNode` events like the nodes they change.

#![allow(clippy::missing_safety_doc)]

use super::*;
use crate::api::cuda::calls::args;
use crate::api::cuda::custom::Call;

/// `cuGraphKernelNodeSetParams` (v1 parameters) and `_v2`.
pub unsafe fn graph_kernel_node_set_params(
    h: Export,
    a: args::GraphKernelNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphKernelNodeSetParams { node, p } = a;
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
    a: args::GraphMemcpyNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphMemcpyNodeSetParams { node, p } = a;
    let r = call();
    set_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memcpy(nd, p, std::ptr::null_mut())
    });
    r
}

pub unsafe fn graph_memset_node_set_params(
    h: Export,
    a: args::GraphMemsetNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphMemsetNodeSetParams { node, p } = a;
    let r = call();
    set_node(h, r, (std::ptr::null_mut(), node), |_, nd| {
        fill_memset(nd, p, 0);
        Vec::new()
    });
    r
}

pub unsafe fn graph_host_node_set_params(
    h: Export,
    a: args::GraphHostNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphHostNodeSetParams { node, p } = a;
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
    a: args::GraphExecKernelNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphExecKernelNodeSetParams { exec, node, p } = a;
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
    a: args::GraphExecMemcpyNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphExecMemcpyNodeSetParams { exec, node, p, ctx } = a;
    let r = call();
    set_node(h, r, (exec, node), |_, nd| fill_memcpy(nd, p, ctx));
    r
}

pub unsafe fn graph_exec_memset_node_set_params(
    h: Export,
    a: args::GraphExecMemsetNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphExecMemsetNodeSetParams { exec, node, p, ctx } = a;
    let r = call();
    set_node(h, r, (exec, node), |_, nd| {
        fill_memset(nd, p, ctx as u64);
        Vec::new()
    });
    r
}

pub unsafe fn graph_exec_host_node_set_params(
    h: Export,
    a: args::GraphExecHostNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphExecHostNodeSetParams { exec, node, p } = a;
    let r = call();
    set_node(h, r, (exec, node), |rc, nd| {
        fill_host(rc, nd, p, "cuGraphExecHostNodeSetParams");
        Vec::new()
    });
    r
}

pub unsafe fn graph_exec_child_graph_node_set_params(
    h: Export,
    a: args::GraphExecChildGraphNodeSetParams,
    call: impl Call,
) -> CUresult {
    let args::GraphExecChildGraphNodeSetParams { exec, node, child } = a;
    let r = call();
    set_node(h, r, (exec, node), |_, nd| fill_child(nd, child));
    r
}
