//! CUDA streams and events: created, recorded, waited on and destroyed through remapped
//! handles; waiting for a stream (plainly, or under the `--sync-watchdog-ms` watchdog through
//! the shared `Waiter`), and whether a stream is capturing into a graph now.

use std::ffi::c_int;

use anyhow::Result;

use super::driver::{cu, Api, H};
use super::Cuda;
use crate::replay::backend::shared::impl_stream_sync;
use crate::replay::backend::{Event, Outcome};
use crate::replay::fields::{name, u};

/// `CUDA_ERROR_NOT_READY`.
const CUDA_ERROR_NOT_READY: c_int = 600;

impl_stream_sync!(Api, cu, synchronize: cuStreamSynchronize, create_event: cuEventCreate,
    record_event: cuEventRecord, query_event: cuEventQuery, not_ready: CUDA_ERROR_NOT_READY);

impl Cuda {
    /// The stream of an event: its recorded handle, or the per-thread default stream for a
    /// `_ptsz`/`_ptds` call on stream 0.
    pub(super) fn stream(&self, ev: &Event) -> Result<H> {
        let s = u(&ev.fields, name::STREAM).unwrap_or(0);
        if s == 0 && ev.per_thread {
            return Ok(2 as H);
        }
        self.handles.get(s)
    }

    /// Is `stream` capturing into a graph now? (Work issued there is recorded, not run: it must
    /// not be waited for, and host buffers it names must outlive the graph.)
    pub(super) fn capturing(&self, stream: H) -> bool {
        let Some(f) = self.api.cuStreamIsCapturing else {
            return false;
        };
        let mut status: c_int = 0;
        // SAFETY: out-pointer to a local.
        unsafe { f(stream, &mut status) == 0 && status != 0 }
    }

    /// Wait for `stream`; `what` names the work in errors.
    pub(super) fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        self.waiter.wait(&self.api, stream, what)
    }

    /// `cuStreamCreate*`.
    pub(super) fn stream_create(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let mut s: H = std::ptr::null_mut();
        let flags = u(f, name::FLAGS)? as u32;
        match u(f, name::PRIORITY) {
            Ok(p) => cu!(
                self.api,
                cuStreamCreateWithPriority(&mut s, flags, p as i32)
            )?,
            Err(_) => cu!(self.api, cuStreamCreate(&mut s, flags))?,
        }
        self.handles.insert(u(f, name::STREAM)?, s);
        Ok(Outcome::Done)
    }

    /// `cuStreamDestroy`.
    pub(super) fn stream_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        let rec = u(&ev.fields, name::STREAM)?;
        cu!(self.api, cuStreamDestroy_v2(self.handles.get(rec)?))?;
        self.handles.remove(rec);
        Ok(Outcome::Done)
    }

    /// `cuStreamSynchronize`.
    pub(super) fn stream_synchronize(&mut self, ev: &Event) -> Result<Outcome> {
        let s = self.stream(ev)?;
        self.wait(s, &format!("cuStreamSynchronize (event #{})", ev.seq))?;
        Ok(Outcome::Done)
    }

    /// `cuCtxSynchronize`, also the final wait.
    pub(super) fn ctx_synchronize(&mut self) -> Result<Outcome> {
        cu!(self.api, cuCtxSynchronize())?;
        Ok(Outcome::Done)
    }

    /// `cuStreamWaitEvent`.
    pub(super) fn stream_wait_event(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let (s, e) = (self.stream(ev)?, self.handles.get(u(f, name::EVENT)?)?);
        cu!(self.api, cuStreamWaitEvent(s, e, u(f, name::FLAGS)? as u32))?;
        Ok(Outcome::Done)
    }

    /// `cuEventCreate`.
    pub(super) fn event_create(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let mut e: H = std::ptr::null_mut();
        cu!(self.api, cuEventCreate(&mut e, u(f, name::FLAGS)? as u32))?;
        self.handles.insert(u(f, name::EVENT)?, e);
        Ok(Outcome::Done)
    }

    /// `cuEventRecord*`.
    pub(super) fn event_record(&mut self, ev: &Event) -> Result<Outcome> {
        let e = self.handles.get(u(&ev.fields, name::EVENT)?)?;
        cu!(self.api, cuEventRecord(e, self.stream(ev)?))?;
        Ok(Outcome::Done)
    }

    /// `cuEventSynchronize`.
    pub(super) fn event_synchronize(&mut self, ev: &Event) -> Result<Outcome> {
        let e = self.handles.get(u(&ev.fields, name::EVENT)?)?;
        cu!(self.api, cuEventSynchronize(e))?;
        Ok(Outcome::Done)
    }

    /// `cuEventDestroy`.
    pub(super) fn event_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        let rec = u(&ev.fields, name::EVENT)?;
        cu!(self.api, cuEventDestroy_v2(self.handles.get(rec)?))?;
        self.handles.remove(rec);
        Ok(Outcome::Done)
    }
}
