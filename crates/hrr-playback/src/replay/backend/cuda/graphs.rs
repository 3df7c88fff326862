//! CUDA graphs built by stream capture, rebuilt the same way: capture begins on the mapped
//! stream, the recorded operations are reissued on it (so the driver captures them into a new
//! graph), the graph and its instantiations are mapped by recorded handle, and every
//! `cuGraphLaunch` runs the rebuilt graph. Graphs built node by node (`cuGraphAdd*Node`, not
//! recorded) are skipped with a reason.

use std::ffi::c_int;

use anyhow::Result;
use hrr_calls::shapes::{BeginCapture, EndCapture, Graph, GraphInstantiate, GraphLaunch};

use super::driver::{cu, H};
use super::Cuda;
use crate::replay::backend::{Event, Outcome};

/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
const CU_STREAM_CAPTURE_MODE_RELAXED: c_int = 2;

impl Cuda {
    /// `cuStreamBeginCapture`.
    pub(super) fn begin_capture(&mut self, ev: &Event) -> Result<Outcome> {
        // Always RELAXED, whatever mode the program used: in GLOBAL (cudart's default)
        // or THREAD_LOCAL mode the driver refuses "potentially unsafe" calls — memory
        // allocation, VMM mapping, legacy-stream copies — while the capture runs, and
        // replay makes such calls of its own (placing allocations the program made
        // during the capture, copies for its checks). The mode changes only what may be
        // called meanwhile, never what the graph holds.
        let s = self.stream(ev, ev.read::<BeginCapture>()?.stream)?;
        cu!(
            self.api,
            cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED)
        )?;
        Ok(Outcome::Done)
    }

    /// `cuStreamEndCapture`: the rebuilt graph.
    pub(super) fn end_capture(&mut self, ev: &Event) -> Result<Outcome> {
        let s: EndCapture = ev.read()?;
        let mut g: H = std::ptr::null_mut();
        cu!(
            self.api,
            cuStreamEndCapture(self.stream(ev, s.stream)?, &mut g)
        )?;
        self.graphs.insert(s.graph, g);
        Ok(Outcome::Done)
    }

    /// `cuGraphInstantiate*` of a rebuilt graph (`GraphInstantiate`, or the same fields of
    /// `GraphInstantiateParams`).
    pub(super) fn graph_instantiate(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphInstantiate = ev.read()?;
        let graph = s.graph;
        let Some(&g) = self.graphs.get(&graph) else {
            return Ok(Outcome::Skipped(format!(
                "graph 0x{graph:x} was not built by a recorded stream capture (explicit graph construction is not recorded); not instantiated"
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
                "graph exec 0x{rec:x} was not instantiated in replay (its graph was not built by a recorded stream capture)"
            )));
        };
        let stream = self.stream(ev, s.stream)?;
        cu!(self.api, cuGraphLaunch(exec, stream))?;
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
            None => Outcome::Ignored, // not rebuilt (explicitly built)
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
}
