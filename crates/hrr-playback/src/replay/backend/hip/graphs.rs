//! HIP graphs made by stream capture: the capture is begun again on the mapped stream (relaxed
//! mode, as CUDA replay does: replay's own calls meanwhile must not be refused), the launches,
//! memsets and device-to-device copies between begin and end are issued into it (captured, not
//! run), the graph it ends with stands for the recorded one, and instantiations and launches of
//! it are reissued.
//! Copies between host memory and a capturing stream are skipped, said so (`copies.rs`).

use std::collections::HashSet;

use anyhow::Result;
use hrr_calls::handles::HandleMap;
use hrr_calls::shapes::{BeginCapture, EndCapture, Graph, GraphInstantiate, GraphLaunch};

use super::runtime::{hip, H};
use super::Hip;
use crate::replay::backend::{Event, Outcome};

/// `hipStreamCaptureModeRelaxed`.
const CAPTURE_MODE_RELAXED: i32 = 2;

/// The graphs and instantiations replay made, by recorded handle, and the live streams
/// capturing now.
#[derive(Default)]
pub struct Graphs {
    graphs: HandleMap<H>,
    execs: HandleMap<H>,
    capturing: HashSet<usize>,
}

/// The live handle replay made for recorded `h` in `map`, or the skip saying it was not made
/// (`what` names the object and why).
fn made(map: &HandleMap<H>, h: u64, what: &str) -> std::result::Result<H, Outcome> {
    map.get(&h)
        .copied()
        .ok_or_else(|| Outcome::Skipped(format!("{what} (0x{h:x})")))
}

impl Graphs {
    /// The graph replay made for recorded graph `h`, or the skip saying it was not made.
    fn graph(&self, h: u64) -> std::result::Result<H, Outcome> {
        let what = "graph not made by a recorded stream capture, not instantiated";
        made(&self.graphs, h, what)
    }

    /// The instantiation replay made for recorded graph exec `h`, or the skip saying it was
    /// not made.
    fn exec(&self, h: u64) -> std::result::Result<H, Outcome> {
        let what = "graph exec not instantiated in replay (its graph was not made)";
        made(&self.execs, h, what)
    }

    /// Is live stream `stream` capturing into a graph?
    pub fn capturing(&self, stream: H) -> bool {
        !self.capturing.is_empty() && self.capturing.contains(&(stream as usize))
    }
}

impl Hip {
    /// Is live stream `stream` capturing into a graph?
    pub(super) fn is_capturing(&self, stream: H) -> bool {
        self.graphs.capturing(stream)
    }

    /// `hipStreamBeginCapture`.
    pub(super) fn begin_capture(&mut self, ev: &Event) -> Result<Outcome> {
        let s: BeginCapture = ev.read()?;
        let stream = self.stream(s.stream)?;
        hip!(
            self.api,
            hipStreamBeginCapture(stream, CAPTURE_MODE_RELAXED)
        )?;
        self.graphs.capturing.insert(stream as usize);
        Ok(Outcome::Done)
    }

    /// `hipStreamEndCapture`: the graph made stands for the recorded one.
    pub(super) fn end_capture(&mut self, ev: &Event) -> Result<Outcome> {
        let s: EndCapture = ev.read()?;
        let stream = self.stream(s.stream)?;
        let mut g: H = std::ptr::null_mut();
        let r = hip!(self.api, hipStreamEndCapture(stream, &mut g));
        self.graphs.capturing.remove(&(stream as usize)); // ended, even where it failed
        r?;
        self.graphs.graphs.insert(s.graph, g);
        Ok(Outcome::Done)
    }

    /// `hipGraphInstantiate`, `hipGraphInstantiateWithFlags` (the flags, upload or auto-free
    /// of graph memory, change nothing replay sees: instantiated without).
    pub(super) fn graph_instantiate(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphInstantiate = ev.read()?;
        let g = or_skip!(self.graphs.graph(s.graph));
        let mut exec: H = std::ptr::null_mut();
        hip!(
            self.api,
            hipGraphInstantiate(&mut exec, g, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        )?;
        self.graphs.execs.insert(s.exec, exec);
        Ok(Outcome::Done)
    }

    /// `hipGraphLaunch` of an instantiation replay made.
    pub(super) fn graph_launch(&mut self, ev: &Event) -> Result<Outcome> {
        let s: GraphLaunch = ev.read()?;
        let exec = or_skip!(self.graphs.exec(s.exec));
        let stream = self.stream(s.stream)?;
        let capturing = self.is_capturing(stream);
        let timed = self.timer.start(&self.api, stream, capturing)?;
        hip!(self.api, hipGraphLaunch(exec, stream))?;
        self.timer
            .stop(&self.api, stream, timed, &format!("graph 0x{:x}", s.exec))?;
        if !capturing && self.waiter.after_launch() {
            self.wait(stream, &format!("graph launch (event #{})", ev.seq))?;
        }
        Ok(Outcome::GraphLaunched)
    }

    /// `hipGraphDestroy` (`exec` false) or `hipGraphExecDestroy`, of what replay made.
    pub(super) fn graph_destroy(&mut self, ev: &Event, exec: bool) -> Result<Outcome> {
        let recorded = ev.read::<Graph>()?.graph;
        let made = if exec {
            self.graphs.execs.remove(&recorded)
        } else {
            self.graphs.graphs.remove(&recorded)
        };
        let Some(live) = made else {
            return Ok(Outcome::Ignored); // never made (its launches say why)
        };
        if exec {
            hip!(self.api, hipGraphExecDestroy(live))?;
        } else {
            hip!(self.api, hipGraphDestroy(live))?;
        }
        Ok(Outcome::Done)
    }
}
