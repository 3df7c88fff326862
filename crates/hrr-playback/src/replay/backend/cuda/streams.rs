//! CUDA streams: the `Streams` implementation of the driver table (the program's stream and
//! event calls are replayed by `backend::stream_calls` through it), the stream an event names
//! (per-thread default streams), waiting for a stream (under the `--sync-watchdog-ms` watchdog
//! through the shared `Waiter`), whether a stream is capturing into a graph now, and stream
//! memory operations (a value written or waited for in stream order).

use std::ffi::c_int;

use anyhow::Result;
use hrr_calls::cuda::Op;
use hrr_calls::shapes::StreamValue;

use super::driver::{cu, Api, CUresult, H};
use super::Cuda;
use crate::replay::backend::shared::{impl_streams, Handles};
use crate::replay::backend::{CallFailed, DetachedWait, Event, Outcome};

/// `CUDA_ERROR_NOT_READY`.
const CUDA_ERROR_NOT_READY: c_int = 600;

impl_streams!(Api, cu, create: cuStreamCreate, create_with_priority: cuStreamCreateWithPriority,
    destroy: cuStreamDestroy_v2, synchronize: cuStreamSynchronize, wait_event: cuStreamWaitEvent,
    create_event: cuEventCreate, record_event: cuEventRecord,
    synchronize_event: cuEventSynchronize, query_event: cuEventQuery,
    destroy_event: cuEventDestroy_v2, elapsed: cuEventElapsedTime, not_ready: CUDA_ERROR_NOT_READY);

impl Api {
    /// Is `stream` capturing into a graph now?
    pub fn is_capturing(&self, stream: H) -> bool {
        let Some(f) = self.cuStreamIsCapturing else {
            return false;
        };
        let mut status: c_int = 0;
        // SAFETY: out-pointer to a local.
        unsafe { f(stream, &mut status) == 0 && status != 0 }
    }
}

/// The live stream of recorded stream `recorded`: its mapped handle, or the per-thread default
/// stream for stream 0 of a `_ptsz`/`_ptds` call (`per_thread`, the event's).
pub(super) fn stream_of(handles: &Handles, per_thread: bool, recorded: u64) -> Result<H> {
    if recorded == 0 && per_thread {
        return Ok(2 as H);
    }
    handles.get(recorded)
}

impl Cuda {
    /// `cuStreamWriteValue32/64`, `cuStreamWaitValue32/64`: the recorded address translated,
    /// on the stream replay made for the recorded one, with the recorded flags.
    pub(super) fn stream_value(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        let s: StreamValue = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        let addr = self.mem.translate(s.addr);
        let (value, flags) = (s.value, s.flags);
        match op {
            Op::StreamWriteValue32 => cu!(
                self.api,
                cuStreamWriteValue32_v2(stream, addr, value as u32, flags)
            )?,
            Op::StreamWriteValue64 => cu!(
                self.api,
                cuStreamWriteValue64_v2(stream, addr, value, flags)
            )?,
            Op::StreamWaitValue32 => cu!(
                self.api,
                cuStreamWaitValue32_v2(stream, addr, value as u32, flags)
            )?,
            _ => cu!(self.api, cuStreamWaitValue64_v2(stream, addr, value, flags))?,
        }
        Ok(Outcome::Done)
    }

    /// The live stream of an event's recorded stream `recorded` (see [`stream_of`]).
    pub(super) fn stream(&self, ev: &Event, recorded: u64) -> Result<H> {
        stream_of(&self.handles, ev.per_thread, recorded)
    }

    /// Is `stream` capturing into a graph now? (Work issued there is recorded, not run: it must
    /// not be waited for, and host buffers it names must outlive the graph.)
    /// Is `stream` capturing? Asked of the driver only while a capture replay began is under
    /// way (streams that joined it through an event capture too): no query per launch otherwise.
    pub(super) fn capturing(&self, stream: H) -> bool {
        self.captures > 0 && self.api.is_capturing(stream)
    }

    /// Wait for `stream`; `what` names the work in errors.
    pub(super) fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        self.waiter.wait(&self.api, stream, what)
    }

    /// `--multi-thread`: `cuStreamSynchronize` / `cuEventSynchronize` as a wait the replay
    /// thread runs without holding the backend (`None`: another call, or `--sync-after-launch`
    /// or a watchdog is set, whose waits are the backend's).
    pub(super) fn detached(&mut self, ev: &Event) -> Option<Result<DetachedWait>> {
        if self.waiter.after_launch() {
            return None;
        }
        type Wait = unsafe extern "C" fn(H) -> CUresult;
        let (f, call, handle): (Option<Wait>, &'static str, Result<H>) = match self.ops.of(ev)? {
            hrr_calls::cuda::Op::StreamSynchronize => (
                self.api.cuStreamSynchronize,
                "cuStreamSynchronize",
                ev.read::<hrr_calls::shapes::Stream>()
                    .and_then(|s| self.stream(ev, s.stream)),
            ),
            hrr_calls::cuda::Op::EventSynchronize => (
                self.api.cuEventSynchronize,
                "cuEventSynchronize",
                ev.read::<hrr_calls::shapes::Event>()
                    .and_then(|s| self.handles.get(s.event)),
            ),
            _ => return None,
        };
        let f = f?;
        let names = self.api.cuGetErrorName;
        let what = format!("{} (event #{})", ev.name, ev.seq);
        Some(handle.map(|h| {
            let h = h as usize; // a handle, waited for on another thread
            DetachedWait::new(move || {
                // SAFETY: a live stream or event of this replay; the driver is thread-safe.
                let r = unsafe { f(h as H) };
                if r == 0 {
                    return Ok(());
                }
                let name = super::driver::error_name_with(names, r);
                Err(anyhow::Error::new(CallFailed {
                    call,
                    code: r,
                    name,
                })
                .context(what))
            })
        }))
    }

    /// `cuCtxSynchronize`, also the final wait.
    pub(super) fn ctx_synchronize(&mut self) -> Result<Outcome> {
        cu!(self.api, cuCtxSynchronize())?;
        Ok(Outcome::Done)
    }
}
