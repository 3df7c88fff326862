//! Stream capture, graph instantiation (graphs no recorded capture produced are noted unreplayable) and host functions.

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use hrr_calls::cuda::ffi::{CUresult, Handle, InstantiateParams};
use hrr_calls::shapes::*;

use super::rec;
use crate::api::cuda::calls::Export;
use crate::api::cuda::state::{self};
use crate::hook::args::out_addr;
use crate::recorder::Recorder;

/// Why a graph that no recorded stream capture produced cannot be replayed.
const GRAPH_NOT_CAPTURED: &str = "graph was not built by a recorded stream capture (explicit graph construction, cuGraphAdd*Node, is not recorded); replay skips it";

/// Note an instantiation of a graph that replay cannot rebuild.
fn note_graph_source(rc: &mut Recorder, call: &str, g: Handle) {
    if !state::with(|st| st.captured_graphs.contains(&(g as u64))) {
        rc.note_unreplayable(call, GRAPH_NOT_CAPTURED);
    }
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
    let r = call();
    rec(h, r, |_| {
        let graph = out_addr(g);
        state::with(|st| {
            st.capturing.remove(&(s as u64));
            if r == 0 {
                st.captured_graphs.insert(graph);
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
            note_graph_source(rc, "cuGraphInstantiateWithFlags", g);
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
            note_graph_source(rc, "cuGraphInstantiate_v2", g);
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
            note_graph_source(rc, "cuGraphInstantiateWithParams", g);
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
