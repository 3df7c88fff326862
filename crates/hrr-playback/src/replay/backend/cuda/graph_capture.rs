//! CUDA stream capture, replayed: capture begins on the mapped stream (or into a rebuilt
//! graph), the recorded operations are reissued on it, so the driver captures them into a new
//! graph, which `cuStreamEndCapture` maps to the recorded one (`super::graphs` launches it);
//! the capture queries and dependency updates are reissued.

use std::ffi::c_int;

use anyhow::{anyhow, Result};
use hrr_calls::shapes::{BeginCapture, BeginCaptureToGraph, CaptureDeps, CaptureInfo, EndCapture};

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
        self.captures += 1;
        Ok(Outcome::Done)
    }

    /// `cuStreamBeginCaptureToGraph`: a capture into a rebuilt graph (a conditional node's
    /// body, say), after rebuilt nodes of it; RELAXED as in [`Self::begin_capture`].
    pub(super) fn begin_capture_to_graph(&mut self, ev: &Event) -> Result<Outcome> {
        let s: BeginCaptureToGraph = ev.read()?;
        let g = or_skip!(self.rebuilt(s.graph, "capture into"));
        let Some(deps) = self.node_graphs.live(&s.deps) else {
            let why = "a node the capture follows was not rebuilt".to_string();
            self.node_graphs.broken.insert(s.graph, why.clone());
            return Ok(Outcome::Skipped(why));
        };
        let stream = self.stream(ev, s.stream)?;
        cu!(
            self.api,
            cuStreamBeginCaptureToGraph(
                stream,
                g,
                deps.as_ptr(),
                std::ptr::null(),
                deps.len(),
                CU_STREAM_CAPTURE_MODE_RELAXED
            )
        )?;
        self.captures += 1;
        Ok(Outcome::Done)
    }

    /// `cuStreamGetCaptureInfo` of a capturing stream: the program learnt the graph being
    /// captured into and the nodes its next work follows (to add nodes by hand); replay asks
    /// its own capture and maps the recorded handles to the live ones, in order.
    pub(super) fn capture_info(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CaptureInfo = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        let (mut status, mut g, mut deps, mut n) = (0, std::ptr::null_mut(), std::ptr::null(), 0);
        cu!(
            self.api,
            cuStreamGetCaptureInfo_v3(
                stream,
                &mut status,
                std::ptr::null_mut(),
                &mut g,
                &mut deps,
                std::ptr::null_mut(),
                &mut n
            )
        )?;
        if status != 1 {
            return Err(anyhow!(
                "stream 0x{:x} captured in the recording but not in replay",
                s.stream
            ));
        }
        if s.graph != 0 {
            self.graphs.insert(s.graph, g);
        }
        let live: &[H] = match deps.is_null() {
            true => &[],
            // SAFETY: the driver's array of `n` nodes, valid until the capture changes.
            false => unsafe { std::slice::from_raw_parts(deps, n) },
        };
        // None recorded: the program did not ask (libraries often ask only for the status).
        if !s.deps.is_empty() && live.len() != s.deps.len() {
            return Ok(Outcome::Skipped(format!(
                "the capture follows {} node(s) in replay, {} in the recording: its nodes are not mapped",
                live.len(),
                s.deps.len()
            )));
        }
        for (&rec, &node) in s.deps.iter().zip(live) {
            self.node_graphs.nodes.insert(rec, node);
        }
        Ok(Outcome::Done)
    }

    /// `cuStreamUpdateCaptureDependencies[_v2]` with rebuilt nodes (default edges).
    pub(super) fn update_capture_dependencies(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CaptureDeps = ev.read()?;
        let Some(deps) = self.node_graphs.live(&s.deps) else {
            return Err(anyhow!("a node the capture is to follow was not rebuilt"));
        };
        let stream = self.stream(ev, s.stream)?;
        cu!(
            self.api,
            cuStreamUpdateCaptureDependencies_v2(
                stream,
                deps.as_ptr(),
                std::ptr::null(),
                deps.len(),
                s.flags
            )
        )?;
        Ok(Outcome::Done)
    }

    /// `cuStreamEndCapture`: the rebuilt graph.
    pub(super) fn end_capture(&mut self, ev: &Event) -> Result<Outcome> {
        let s: EndCapture = ev.read()?;
        let mut g: H = std::ptr::null_mut();
        let r = cu!(
            self.api,
            cuStreamEndCapture(self.stream(ev, s.stream)?, &mut g)
        );
        self.captures = self.captures.saturating_sub(1); // ended, even where it failed
        r?;
        self.graphs.insert(s.graph, g);
        Ok(Outcome::Done)
    }
}
