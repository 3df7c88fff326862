//! CUDA graphs. Built by stream capture, they are rebuilt the same way (`graph_capture.rs`): capture begins on the
//! mapped stream, the recorded operations are reissued on it (so the driver captures them into a
//! new graph). Built node by node (`cuGraphCreate`, `cuGraphAdd*Node`), they are rebuilt node by
//! node with remapped handles (functions, events, child graphs; memory alloc and free nodes as
//! empty nodes, their memory placed at its recorded address and kept; device pointers through
//! placement, kernel arguments as launches translate them) and the same dependencies, and their
//! parameter updates (`cuGraph*NodeSetParams`, `cuGraphExec*NodeSetParams`, `cuGraphExecUpdate`)
//! are reissued. Graphs and their instantiations are mapped by recorded handle and every
//! `cuGraphLaunch` runs the rebuilt graph.
//!
//! Host memory of memcpy nodes (and of copies issued inside a stream capture) is replay's own page-locked buffer (`cuMemAllocHost`) per recorded
//! host region (it lives until the process ends): before a launch the recorded bytes of each source region are written into it
//! (`hrrGraphHostSource`), after it each destination region is compared with the recorded bytes
//! (`hrrGraphHostResult`, a D2H check). Host nodes run a no-op host function (the program's is
//! not in the archive; capture notes that in the manifest), so stream order is kept.
//! Conditional nodes (IF, WHILE, SWITCH) are rebuilt with a conditional handle created again
//! (`cuGraphConditionalHandleCreate`, its live value substituted for the recorded one in kernel
//! arguments, as texture objects are) and their body graphs, which the driver creates with the
//! node, mapped to the recorded ones so the nodes added to them are rebuilt there; a graph whose
//! body holds a node replay cannot rebuild is not instantiated either. Not rebuilt (skipped with
//! the reason, and the graph with them not instantiated): copies from or to CUDA arrays, node
//! types hrr does not record; nodes of a cloned graph are not mapped (`cuGraphNodeFindInClone`
//! is not recorded), so parameter updates of them are skipped.

use std::collections::HashMap;
use std::ffi::c_void;

use anyhow::{anyhow, Context, Result};
use hrr_calls::cuda::ffi::{
    copy_side, node_type, set_copy_side, MEMCPY3D_BYTES, MEMORYTYPE_DEVICE, MEMORYTYPE_HOST,
    MEMSET_NODE_BYTES,
};
use hrr_calls::shapes::{
    ConditionalHandle, Graph, GraphClone, GraphCreate, GraphEdges, GraphExecUpdate,
    GraphHostResult, GraphHostSource, GraphInstantiate, GraphLaunch, GraphNode, GraphNodeHandle,
    Launch,
};

use super::driver::{cu, packed_args_extra, HostNodeParams, KernelNodeParams, H};
use super::Cuda;
use crate::replay::backend::shared::launch_gate;
use crate::replay::backend::{Blobs, Event, Outcome};

/// What a node call does: adds a node, sets a graph node's parameters, or an instantiation's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeCall {
    /// `cuGraphAdd*Node`, `cuGraphAddNode`.
    Add,
    /// `cuGraph*NodeSetParams`.
    Set,
    /// `cuGraphExec*NodeSetParams`.
    ExecSet,
}

/// Replay's state of graphs built node by node.
#[derive(Default)]
pub(super) struct NodeGraphs {
    /// Rebuilt nodes, by recorded handle.
    pub(super) nodes: HashMap<u64, H>,
    /// Replay's host buffers of memcpy nodes, by recorded host region (address, bytes).
    host: HashMap<(u64, u64), HostBuf>,
    /// Recorded graphs holding a node replay could not rebuild, with the reason.
    pub(super) broken: HashMap<u64, String>,
    /// Body graphs of conditional nodes → the graph holding the node (recorded handles).
    parent: HashMap<u64, u64>,
}

impl NodeGraphs {
    /// The rebuilt nodes of recorded nodes `recorded`; `None` if one was not rebuilt.
    pub(super) fn live(&self, recorded: &[u64]) -> Option<Vec<H>> {
        recorded
            .iter()
            .map(|n| self.nodes.get(n).copied())
            .collect()
    }
}

/// A page-locked host buffer of the driver (never freed: graphs may read it until replay ends).
struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

impl HostBuf {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes the driver allocated for this buffer, never freed.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`; `&mut self` keeps the access exclusive on the host side.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The no-op host function host nodes run in replay.
unsafe extern "C" fn no_op_host_fn(_data: *mut c_void) {}

/// A graph kernel node's fields as the launch they describe.
fn launch_of(n: &GraphNode) -> Launch {
    Launch {
        function: n.function,
        kernel: n.kernel.clone(),
        code: n.code,
        grid_x: n.grid_x,
        grid_y: n.grid_y,
        grid_z: n.grid_z,
        block_x: n.block_x,
        block_y: n.block_y,
        block_z: n.block_z,
        shared_mem: n.shared_mem,
        args: n.args.clone(),
        arg_offsets: n.arg_offsets.clone(),
        arg_sizes: n.arg_sizes.clone(),
        args_known: n.args_known,
        ..Launch::default()
    }
}

impl Cuda {
    /// The rebuilt graph of recorded `graph`, or why the call on it (`what`) is skipped.
    pub(super) fn rebuilt(&self, graph: u64, what: &str) -> std::result::Result<H, Outcome> {
        self.graphs.get(&graph).copied().ok_or_else(|| {
            Outcome::Skipped(format!("{what} graph 0x{graph:x}, which was not rebuilt"))
        })
    }

    /// `cuGraphInstantiate*` of a rebuilt graph (`GraphInstantiate`, or the same fields of
    /// `GraphInstantiateParams`).
    pub(super) fn graph_instantiate(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphInstantiate = ev.read()?;
        let graph = s.graph;
        if let Some(why) = self.node_graphs.broken.get(&graph) {
            return Ok(Outcome::Skipped(format!(
                "graph 0x{graph:x} not instantiated: {why}"
            )));
        }
        let Some(&g) = self.graphs.get(&graph) else {
            return Ok(Outcome::Skipped(format!(
                "graph 0x{graph:x} was built before capture started (no recorded stream capture or cuGraphCreate made it); not instantiated"
            )));
        };
        // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD (2) only means "upload now" and needs
        // cuGraphInstantiateWithParams; the graph is uploaded at its first launch anyway.
        let flags = s.flags & !2;
        let mut exec: H = std::ptr::null_mut();
        cu!(self.api, cuGraphInstantiateWithFlags(&mut exec, g, flags))?;
        self.execs.insert(s.exec, exec);
        Ok(Outcome::Done)
    }

    /// `cuGraphLaunch` of an instantiated rebuilt graph.
    pub(super) fn graph_launch(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphLaunch = ev.read()?;
        let rec = s.exec;
        let Some(&exec) = self.execs.get(&rec) else {
            return Ok(Outcome::Skipped(format!(
                "graph exec 0x{rec:x} was not instantiated in replay (its graph was not rebuilt)"
            )));
        };
        let stream = self.stream(ev, s.stream)?;
        let capturing = self.capturing(stream);
        if let Some(Ok(n)) = self.noise.as_mut().filter(|_| !capturing) {
            n.before_launch(&self.api)?;
        }
        let timed = self.timer.start(&self.api, stream, capturing)?;
        cu!(self.api, cuGraphLaunch(exec, stream))?;
        self.timer
            .stop(&self.api, stream, timed, &format!("graph 0x{rec:x}"))?;
        if !self.capturing(stream) && self.waiter.after_launch() {
            self.wait(stream, &format!("graph launch (event #{})", ev.seq))?;
        }
        Ok(Outcome::GraphLaunched)
    }

    /// `cuGraphDestroy` (of a rebuilt graph; others were never made).
    pub(super) fn graph_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        Ok(match self.graphs.remove(&ev.read::<Graph>()?.graph) {
            Some(g) => {
                cu!(self.api, cuGraphDestroy(g))?;
                Outcome::Done
            }
            None => Outcome::Ignored, // not rebuilt (built before capture started)
        })
    }

    /// `cuGraphExecDestroy`.
    pub(super) fn graph_exec_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        Ok(match self.execs.remove(&ev.read::<Graph>()?.graph) {
            Some(e) => {
                cu!(self.api, cuGraphExecDestroy(e))?;
                Outcome::Done
            }
            None => Outcome::Ignored,
        })
    }

    /// `cuGraphCreate`.
    pub(super) fn graph_create(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphCreate = ev.read()?;
        let mut g: H = std::ptr::null_mut();
        cu!(self.api, cuGraphCreate(&mut g, s.flags))?;
        self.graphs.insert(s.graph, g);
        Ok(Outcome::Done)
    }

    /// The replay buffer of recorded host region `(ptr, bytes)`, made (zeroed) on first use.
    pub(super) fn host_buffer(&mut self, ptr: u64, bytes: u64) -> Result<*mut u8> {
        if let Some(b) = self.node_graphs.host.get(&(ptr, bytes)) {
            return Ok(b.ptr);
        }
        let len = usize::try_from(bytes).map_err(|_| anyhow!("host region of {bytes} bytes"))?;
        let mut p: *mut c_void = std::ptr::null_mut();
        cu!(self.api, cuMemAllocHost_v2(&mut p, len.max(1)))
            .with_context(|| format!("host buffer of {len} bytes for a graph memcpy node"))?;
        let mut b = HostBuf {
            ptr: p as *mut u8,
            len,
        };
        b.bytes_mut().fill(0);
        let p = b.ptr;
        self.node_graphs.host.insert((ptr, bytes), b);
        Ok(p)
    }

    /// A recorded `CUDA_MEMCPY3D` with replay's pointers: device pointers translated, host
    /// pointers replaced by replay's buffers. `Err(why)`: not replayable.
    fn memcpy_params(&mut self, copy: &[u8]) -> Result<std::result::Result<Vec<u8>, String>> {
        if copy.len() != MEMCPY3D_BYTES {
            return Ok(Err(format!(
                "CUDA_MEMCPY3D of {} bytes recorded",
                copy.len()
            )));
        }
        let mut b = copy.to_vec();
        for dst in [false, true] {
            let side = copy_side(&b, dst);
            match side.memory_type {
                MEMORYTYPE_DEVICE => {
                    let d = self.mem.translate(side.device);
                    set_copy_side(&mut b, dst, MEMORYTYPE_DEVICE, 0, d);
                }
                MEMORYTYPE_HOST => {
                    let h = self.host_buffer(side.host, side.span)? as u64;
                    set_copy_side(&mut b, dst, MEMORYTYPE_HOST, h, 0);
                }
                t => {
                    return Ok(Err(format!(
                        "memcpy node with memory type {t} (CUDA arrays are not replayed)"
                    )))
                }
            }
        }
        Ok(Ok(b))
    }

    /// A recorded `CUDA_MEMSET_NODE_PARAMS` with its destination translated.
    fn memset_params(&self, memset: &[u8]) -> std::result::Result<Vec<u8>, String> {
        if memset.len() != MEMSET_NODE_BYTES {
            return Err(format!(
                "CUDA_MEMSET_NODE_PARAMS of {} bytes recorded",
                memset.len()
            ));
        }
        let mut b = memset.to_vec();
        let dst = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
        b[0..8].copy_from_slice(&self.mem.translate(dst).to_le_bytes());
        Ok(b)
    }

    /// The current context (memcpy and memset nodes run in it).
    fn current_ctx(&self) -> Result<H> {
        let mut c: H = std::ptr::null_mut();
        cu!(self.api, cuCtxGetCurrent(&mut c))?;
        Ok(c)
    }

    /// A node added to a graph, or new parameters of a graph's or an instantiation's node
    /// (`GraphNode`). A node replay cannot rebuild marks its graph as not instantiable.
    pub(super) fn graph_node(
        &mut self,
        ev: &Event,
        call: NodeCall,
        filter: Option<&str>,
    ) -> Result<Outcome> {
        let s: GraphNode = ev.read()?;
        let why = match self.node_call(&s, call, filter)? {
            Ok(outcome) => return Ok(outcome),
            Err(why) => why,
        };
        if call == NodeCall::Add {
            // the graph, and every graph holding it as a conditional node's body
            let mut g = Some(s.graph);
            for _ in 0..=16 {
                let Some(at) = g else { break };
                let why = match at == s.graph {
                    true => why.clone(),
                    false => format!("its conditional body graph 0x{:x}: {why}", s.graph),
                };
                self.node_graphs.broken.insert(at, why);
                g = self.node_graphs.parent.get(&at).copied();
            }
        }
        Ok(Outcome::Skipped(format!(
            "graph node 0x{:x}: {why}",
            s.node
        )))
    }

    /// [`Self::graph_node`]'s work; `Err(why)`: not replayable.
    fn node_call(
        &mut self,
        s: &GraphNode,
        call: NodeCall,
        filter: Option<&str>,
    ) -> Result<std::result::Result<Outcome, String>> {
        let (graph, exec, node) = match call {
            NodeCall::Add => match self.graphs.get(&s.graph) {
                Some(&g) => (g, std::ptr::null_mut(), std::ptr::null_mut()),
                None => return Ok(Err(format!("graph 0x{:x} was not rebuilt", s.graph))),
            },
            NodeCall::Set | NodeCall::ExecSet => {
                let Some(&node) = self.node_graphs.nodes.get(&s.node) else {
                    return Ok(Err(
                        "node was not rebuilt (or belongs to a cloned graph)".into()
                    ));
                };
                let exec = match (call, self.execs.get(&s.exec)) {
                    (NodeCall::Set, _) => std::ptr::null_mut(),
                    (_, Some(&x)) => x,
                    (_, None) => {
                        return Ok(Err(format!(
                            "graph exec 0x{:x} was not instantiated",
                            s.exec
                        )))
                    }
                };
                (std::ptr::null_mut(), exec, node)
            }
        };
        let Some(deps) = self.node_graphs.live(&s.deps) else {
            return Ok(Err("a node it depends on was not rebuilt".into()));
        };
        let (dp, dn) = (deps.as_ptr(), deps.len());
        let mut new: H = std::ptr::null_mut();
        let api = &self.api;
        match (s.node_type, call) {
            (node_type::KERNEL, _) => {
                let mut l = launch_of(s);
                if let Err(not_launched) = launch_gate(&l, filter) {
                    // Stands in as an empty node so what depends on it keeps its order.
                    if call == NodeCall::Add {
                        cu!(api, cuGraphAddEmptyNode(&mut new, graph, dp, dn))?;
                        self.node_graphs.nodes.insert(s.node, new);
                    }
                    return Ok(Ok(not_launched));
                }
                let func = self.handles.get(l.function)?;
                // object values (textures, surfaces, conditional handles) and tensor maps from
                // the recorded bytes
                self.objects
                    .rewrite(&mut l.args, &l.arg_offsets, &l.arg_sizes, &self.mem);
                let mut size = l.args.len();
                let mut extra = packed_args_extra(l.args.as_ptr(), &mut size);
                let p = KernelNodeParams::of_launch(&l, func, s.library_kernel != 0, &mut extra);
                match call {
                    NodeCall::Add => {
                        cu!(api, cuGraphAddKernelNode_v2(&mut new, graph, dp, dn, &p))?
                    }
                    NodeCall::Set => cu!(api, cuGraphKernelNodeSetParams_v2(node, &p))?,
                    NodeCall::ExecSet => {
                        cu!(api, cuGraphExecKernelNodeSetParams_v2(exec, node, &p))?
                    }
                }
            }
            (node_type::MEMCPY | node_type::MEMSET, _) => {
                let memcpy = s.node_type == node_type::MEMCPY;
                let params = match memcpy {
                    true => self.memcpy_params(&s.copy)?,
                    false => self.memset_params(&s.memset),
                };
                let b = match params {
                    Ok(b) => b,
                    Err(why) => return Ok(Err(why)),
                };
                let (ctx, api, b) = (self.current_ctx()?, &self.api, b.as_ptr());
                // the same three calls for either node, with the struct's bytes and a context
                match (call, memcpy) {
                    (NodeCall::Add, true) => {
                        cu!(api, cuGraphAddMemcpyNode(&mut new, graph, dp, dn, b, ctx))?
                    }
                    (NodeCall::Add, false) => {
                        cu!(api, cuGraphAddMemsetNode(&mut new, graph, dp, dn, b, ctx))?
                    }
                    (NodeCall::Set, true) => cu!(api, cuGraphMemcpyNodeSetParams(node, b))?,
                    (NodeCall::Set, false) => cu!(api, cuGraphMemsetNodeSetParams(node, b))?,
                    (NodeCall::ExecSet, true) => {
                        cu!(api, cuGraphExecMemcpyNodeSetParams(exec, node, b, ctx))?
                    }
                    (NodeCall::ExecSet, false) => {
                        cu!(api, cuGraphExecMemsetNodeSetParams(exec, node, b, ctx))?
                    }
                }
            }
            (node_type::HOST, _) => {
                // The program's host function is not in the archive: a no-op keeps the order.
                let p = HostNodeParams {
                    func: Some(no_op_host_fn),
                    data: std::ptr::null_mut(),
                };
                match call {
                    NodeCall::Add => cu!(api, cuGraphAddHostNode(&mut new, graph, dp, dn, &p))?,
                    NodeCall::Set => cu!(api, cuGraphHostNodeSetParams(node, &p))?,
                    NodeCall::ExecSet => cu!(api, cuGraphExecHostNodeSetParams(exec, node, &p))?,
                }
            }
            (node_type::GRAPH, NodeCall::Add | NodeCall::ExecSet) => {
                let Some(&child) = self.graphs.get(&s.child) else {
                    return Ok(Err(format!("child graph 0x{:x} was not rebuilt", s.child)));
                };
                if let Some(why) = self.node_graphs.broken.get(&s.child) {
                    return Ok(Err(format!("child graph 0x{:x}: {why}", s.child)));
                }
                match call {
                    NodeCall::Add => cu!(
                        api,
                        cuGraphAddChildGraphNode(&mut new, graph, dp, dn, child)
                    )?,
                    _ => cu!(api, cuGraphExecChildGraphNodeSetParams(exec, node, child))?,
                }
            }
            (node_type::EMPTY, NodeCall::Add) => {
                cu!(api, cuGraphAddEmptyNode(&mut new, graph, dp, dn))?
            }
            // Graph memory: placed at its recorded address now and kept (as stream-ordered
            // allocations inside a capture are); the nodes stand in as empty ones.
            (node_type::MEM_ALLOC, NodeCall::Add) => {
                let word = |i: usize| {
                    s.args
                        .get(i * 8..i * 8 + 8)
                        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                };
                let (Some(dptr), Some(bytesize)) = (word(0), word(1)) else {
                    return Ok(Err("memory alloc node recorded without its address".into()));
                };
                if self.graph_mem.insert(dptr) {
                    self.mem.alloc(&self.api, dptr, bytesize)?;
                }
                cu!(self.api, cuGraphAddEmptyNode(&mut new, graph, dp, dn))?
            }
            (node_type::MEM_FREE, NodeCall::Add) => {
                cu!(api, cuGraphAddEmptyNode(&mut new, graph, dp, dn))?
            }
            (node_type::EVENT_RECORD | node_type::WAIT_EVENT, NodeCall::Add) => {
                let e = self.handles.get(s.event)?;
                if s.node_type == node_type::EVENT_RECORD {
                    cu!(api, cuGraphAddEventRecordNode(&mut new, graph, dp, dn, e))?
                } else {
                    cu!(api, cuGraphAddEventWaitNode(&mut new, graph, dp, dn, e))?
                }
            }
            (node_type::CONDITIONAL, NodeCall::Add) => {
                let live_bodies = match self.conditional_params(s)? {
                    Ok((mut params, _ours)) => {
                        let api = &self.api;
                        let p = params.as_mut_ptr();
                        let none = std::ptr::null();
                        cu!(api, cuGraphAddNode_v2(&mut new, graph, dp, none, dn, p))?;
                        // the driver points `phGraph_out` at an array of its own (older drivers
                        // fill the one given): the body graphs, read where it points now
                        let at = u64::from_le_bytes(params[32..40].try_into().expect("8 bytes"));
                        let n = s.cond.len().saturating_sub(3);
                        match at {
                            0 => Vec::new(),
                            // SAFETY: the driver wrote `n` (the recorded size) graph handles there
                            at => unsafe { std::slice::from_raw_parts(at as *const H, n) }.to_vec(),
                        }
                    }
                    Err(why) => return Ok(Err(why)),
                };
                if live_bodies.iter().any(|b| b.is_null()) || live_bodies.is_empty() {
                    return Ok(Err("the driver returned no body graph for it".into()));
                }
                let recorded = s.cond.get(3..).unwrap_or_default();
                for (&rec, live) in recorded.iter().zip(live_bodies.iter()) {
                    self.graphs.insert(rec, *live);
                    self.node_graphs.parent.insert(rec, s.graph);
                }
            }
            (t, _) => return Ok(Err(format!("graph node type {t} is not replayed"))),
        }
        if call == NodeCall::Add {
            self.node_graphs.nodes.insert(s.node, new);
        }
        Ok(Ok(Outcome::Done))
    }

    /// The `CUgraphNodeParams` of recorded conditional node `s` (its `cond`: handle, type, size,
    /// body graphs) with the live conditional handle, and an array for the body graphs that
    /// `phGraph_out` points to (drivers that fill the caller's array write there; keep both
    /// until the call returned); `Err(why)`: not rebuildable.
    #[allow(clippy::type_complexity)]
    fn conditional_params(
        &self,
        s: &GraphNode,
    ) -> Result<std::result::Result<(Box<[u8; 256]>, Box<[H]>), String>> {
        let [handle, ty, size, bodies @ ..] = s.cond.as_slice() else {
            return Ok(Err(
                "conditional node recorded without its parameters (an older recorder)".into(),
            ));
        };
        let Some(live) = self.objects.live(*handle) else {
            return Ok(Err(format!(
                "its conditional handle 0x{handle:x} was not created"
            )));
        };
        if bodies.len() as u64 != *size || *size == 0 || *size > 64 {
            return Ok(Err(format!(
                "conditional node of {size} body graphs recorded with {}",
                bodies.len()
            )));
        }
        let mut out: Box<[H]> = vec![std::ptr::null_mut(); bodies.len()].into_boxed_slice();
        let ctx = self.current_ctx()?;
        // CUgraphNodeParams: type at 0, CUDA_CONDITIONAL_NODE_PARAMS at 16 (handle, type, size,
        // phGraph_out, ctx)
        let mut p = Box::new([0u8; 256]);
        p[0..4].copy_from_slice(&node_type::CONDITIONAL.to_le_bytes());
        p[16..24].copy_from_slice(&live.to_le_bytes());
        p[24..28].copy_from_slice(&(*ty as u32).to_le_bytes());
        p[28..32].copy_from_slice(&(*size as u32).to_le_bytes());
        p[32..40].copy_from_slice(&(out.as_mut_ptr() as u64).to_le_bytes());
        p[40..48].copy_from_slice(&(ctx as u64).to_le_bytes());
        Ok(Ok((p, out)))
    }

    /// `cuGraphConditionalHandleCreate`: a handle for the rebuilt graph with the recorded default
    /// value and flags; its live value replaces the recorded one in kernel arguments and
    /// conditional nodes.
    pub(super) fn conditional_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: ConditionalHandle = ev.read()?;
        let g = or_skip!(self.rebuilt(s.graph, "conditional handle of"));
        let ctx = self.current_ctx()?;
        let mut live = 0u64;
        let (default, flags) = (s.default_value, s.flags);
        cu!(
            self.api,
            cuGraphConditionalHandleCreate(&mut live, g, ctx, default, flags)
        )?;
        self.objects.insert(s.handle, live);
        Ok(Outcome::Done)
    }

    /// `cuGraphAddDependencies*` (edge data, `_v2`, is not reissued: default edges).
    pub(super) fn graph_add_dependencies(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphEdges = ev.read()?;
        let g = or_skip!(self.rebuilt(s.graph, "dependencies added to"));
        let nodes = &self.node_graphs;
        let (Some(from), Some(to)) = (nodes.live(&s.from), nodes.live(&s.to)) else {
            let why = "a node of a dependency was not rebuilt".to_string();
            self.node_graphs.broken.insert(s.graph, why.clone());
            return Ok(Outcome::Skipped(why));
        };
        let n = from.len().min(to.len());
        cu!(
            self.api,
            cuGraphAddDependencies(g, from.as_ptr(), to.as_ptr(), n)
        )?;
        Ok(Outcome::Done)
    }

    /// `cuGraphExecUpdate`.
    pub(super) fn graph_exec_update(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphExecUpdate = ev.read()?;
        let (Some(&x), Some(&g)) = (self.execs.get(&s.exec), self.graphs.get(&s.graph)) else {
            return Ok(Outcome::Skipped("graph or its exec was not rebuilt".into()));
        };
        // CUgraphExecUpdateResultInfo: result, error node, error-from node.
        let mut info = [0u8; 24];
        cu!(self.api, cuGraphExecUpdate_v2(x, g, info.as_mut_ptr()))?;
        Ok(Outcome::Done)
    }

    /// `cuGraphUpload`.
    pub(super) fn graph_upload(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphLaunch = ev.read()?;
        let Some(&x) = self.execs.get(&s.exec) else {
            return Ok(Outcome::Ignored);
        };
        let stream = self.stream(ev, s.stream)?;
        cu!(self.api, cuGraphUpload(x, stream))?;
        Ok(Outcome::Done)
    }

    /// `cuGraphClone` (its nodes are not mapped: see the module docs).
    pub(super) fn graph_clone(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphClone = ev.read()?;
        let g = or_skip!(self.rebuilt(s.graph, "clone of"));
        if let Some(why) = self.node_graphs.broken.get(&s.graph).cloned() {
            self.node_graphs.broken.insert(s.clone, why);
        }
        let mut c: H = std::ptr::null_mut();
        cu!(self.api, cuGraphClone(&mut c, g))?;
        self.graphs.insert(s.clone, c);
        Ok(Outcome::Done)
    }

    /// `cuGraphDestroyNode`.
    pub(super) fn graph_destroy_node(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphNodeHandle = ev.read()?;
        Ok(match self.node_graphs.nodes.remove(&s.node) {
            Some(n) => {
                cu!(self.api, cuGraphDestroyNode(n))?;
                Outcome::Done
            }
            None => Outcome::Ignored,
        })
    }

    /// `hrrGraphHostSource`: the bytes a launch's memcpy nodes read from host memory, written
    /// into replay's buffer before the launch.
    pub(super) fn graph_host_source(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: GraphHostSource = ev.read()?;
        if !self.execs.contains_key(&s.exec) {
            return Ok(Outcome::Ignored); // its launch is skipped (and says why)
        }
        let Some(buf) = self.node_graphs.host.get_mut(&(s.host_ptr, s.bytes)) else {
            return Ok(Outcome::Skipped(format!(
                "no rebuilt memcpy node reads host 0x{:x}",
                s.host_ptr
            )));
        };
        let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
            return Ok(Outcome::Skipped(
                "host bytes a graph reads were not recorded".into(),
            ));
        };
        if data.len() != buf.len {
            return Err(anyhow!(
                "host bytes of {} bytes recorded for a region of {}",
                data.len(),
                buf.len
            ));
        }
        buf.bytes_mut().copy_from_slice(&data);
        Ok(Outcome::Done)
    }

    /// `hrrGraphHostResult`: once the launch stream is done, replay's buffer of a host region
    /// the graph's memcpy nodes wrote, checked against the recorded bytes.
    pub(super) fn graph_host_result(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphHostResult = ev.read()?;
        if !self.execs.contains_key(&s.exec) {
            return Ok(Outcome::Skipped(format!(
                "host result of graph exec 0x{:x}, which was not instantiated",
                s.exec
            )));
        }
        if !self.node_graphs.host.contains_key(&(s.host_ptr, s.bytes)) {
            return Ok(Outcome::Skipped(format!(
                "no rebuilt memcpy node writes host 0x{:x}",
                s.host_ptr
            )));
        }
        let stream = self.stream(ev, s.stream)?;
        self.wait(stream, &format!("graph launch result (event #{})", ev.seq))?;
        let got = self.node_graphs.host[&(s.host_ptr, s.bytes)]
            .bytes()
            .to_vec();
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
            site: s.host_ptr,
        })
    }
}
