//! `--timing`, for either API: an event pair recorded around each kernel and graph launch on its
//! stream (events are reused), resolved in batches once the end event has completed, and summed
//! by name in [`Timings`]. Launches on a capturing stream are not timed (they only become graph
//! nodes).

use anyhow::Result;

use super::shared::{Streams, H};
use crate::replay::timing::Timings;

/// Timed launches waiting for their end event before they are read.
const BATCH: usize = 1024;

/// The launch timer of a replay (off unless `--timing`).
#[derive(Default)]
pub struct Timer {
    on: bool,
    free: Vec<(H, H)>,
    pending: Vec<(H, H, String)>,
    sums: Timings,
}

impl Timer {
    /// A timer, on when `on`.
    pub fn new(on: bool) -> Self {
        Timer {
            on,
            ..Timer::default()
        }
    }

    /// Before a launch on `stream`: its start event, recorded (`None`: not timed).
    pub fn start(
        &mut self,
        api: &impl Streams,
        stream: H,
        capturing: bool,
    ) -> Result<Option<(H, H)>> {
        if !self.on || capturing {
            return Ok(None);
        }
        let pair = match self.free.pop() {
            Some(p) => p,
            None => (api.create_event(0)??, api.create_event(0)??), // with timing
        };
        api.record_event(pair.0, stream)??;
        Ok(Some(pair))
    }

    /// After the launch `name` on `stream` that `start` began.
    pub fn stop(
        &mut self,
        api: &impl Streams,
        stream: H,
        pair: Option<(H, H)>,
        name: &str,
    ) -> Result<()> {
        let Some(pair) = pair else { return Ok(()) };
        api.record_event(pair.1, stream)??;
        self.pending.push((pair.0, pair.1, name.to_string()));
        if self.pending.len() >= BATCH {
            self.resolve(api)?;
        }
        Ok(())
    }

    /// Read every pending launch's time (waiting for its end event).
    pub fn resolve(&mut self, api: &impl Streams) -> Result<()> {
        for (a, b, name) in std::mem::take(&mut self.pending) {
            api.synchronize_event(b)??;
            self.sums.add(&name, api.elapsed_ms(a, b)?? as f64);
            self.free.push((a, b));
        }
        Ok(())
    }

    /// The sums so far.
    pub fn sums(&self) -> &Timings {
        &self.sums
    }
}
