//! HIP streams: the `Streams` implementation of the runtime table (the program's stream and
//! event calls are replayed by `backend::stream_calls` through it), the stream an event names,
//! and waiting for a stream (under the `--sync-watchdog-ms` watchdog through the shared
//! `Waiter`).

use anyhow::Result;

use super::runtime::{hip, HipApi, H, HIP_ERROR_NOT_READY};
use super::Hip;
use crate::replay::backend::shared::impl_streams;
use crate::replay::backend::Outcome;

impl_streams!(HipApi, hip, create: hipStreamCreateWithFlags,
    create_with_priority: hipStreamCreateWithPriority, destroy: hipStreamDestroy,
    synchronize: hipStreamSynchronize, wait_event: hipStreamWaitEvent,
    create_event: hipEventCreateWithFlags, record_event: hipEventRecord,
    synchronize_event: hipEventSynchronize, query_event: hipEventQuery,
    destroy_event: hipEventDestroy, elapsed: hipEventElapsedTime, not_ready: HIP_ERROR_NOT_READY);

impl Hip {
    /// The live stream of recorded stream `recorded`.
    pub(super) fn stream(&self, recorded: u64) -> Result<H> {
        self.handles.get(recorded)
    }

    /// Wait for `stream`; `what` names the work in errors.
    pub(super) fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        self.waiter.wait(&self.api, stream, what)
    }

    /// `hipDeviceSynchronize`, also the final wait.
    pub(super) fn device_synchronize(&mut self) -> Result<Outcome> {
        hip!(self.api, hipDeviceSynchronize())?;
        Ok(Outcome::Done)
    }
}
