//! HIP streams and events: created, recorded, waited on and destroyed through remapped handles;
//! waiting for a stream (plainly, or under the `--sync-watchdog-ms` watchdog through the shared
//! `Waiter`).

use anyhow::Result;

use super::runtime::{hip, HipApi, H, HIP_ERROR_NOT_READY};
use super::Hip;
use crate::replay::backend::shared::impl_stream_sync;
use crate::replay::backend::{Event, Outcome};
use crate::replay::fields::{name, u};

impl_stream_sync!(HipApi, hip, synchronize: hipStreamSynchronize,
    create_event: hipEventCreateWithFlags, record_event: hipEventRecord,
    query_event: hipEventQuery, not_ready: HIP_ERROR_NOT_READY);

impl Hip {
    /// The stream of an event (its recorded handle; 0 when it names none).
    pub(super) fn stream(&self, ev: &Event) -> Result<H> {
        self.handles.get(u(&ev.fields, name::STREAM).unwrap_or(0))
    }

    /// Wait for `stream`; `what` names the work in errors.
    pub(super) fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        self.waiter.wait(&self.api, stream, what)
    }

    /// `hipStreamCreate*`.
    pub(super) fn stream_create(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let mut s: H = std::ptr::null_mut();
        let flags = u(f, name::FLAGS)? as u32;
        match u(f, name::PRIORITY) {
            Ok(p) => hip!(
                self.api,
                hipStreamCreateWithPriority(&mut s, flags, p as i32)
            )?,
            Err(_) => hip!(self.api, hipStreamCreateWithFlags(&mut s, flags))?,
        }
        self.handles.insert(u(f, name::STREAM)?, s);
        Ok(Outcome::Done)
    }

    /// `hipStreamDestroy`.
    pub(super) fn stream_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        let rec = u(&ev.fields, name::STREAM)?;
        hip!(self.api, hipStreamDestroy(self.handles.get(rec)?))?;
        self.handles.remove(rec);
        Ok(Outcome::Done)
    }

    /// `hipStreamSynchronize`.
    pub(super) fn stream_synchronize(&mut self, ev: &Event) -> Result<Outcome> {
        let s = self.stream(ev)?;
        self.wait(s, &format!("hipStreamSynchronize (event #{})", ev.seq))?;
        Ok(Outcome::Done)
    }

    /// `hipDeviceSynchronize`, also the final wait.
    pub(super) fn device_synchronize(&mut self) -> Result<Outcome> {
        hip!(self.api, hipDeviceSynchronize())?;
        Ok(Outcome::Done)
    }

    /// `hipStreamWaitEvent`.
    pub(super) fn stream_wait_event(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let (s, e) = (self.stream(ev)?, self.handles.get(u(f, name::EVENT)?)?);
        hip!(
            self.api,
            hipStreamWaitEvent(s, e, u(f, name::FLAGS)? as u32)
        )?;
        Ok(Outcome::Done)
    }

    /// `hipEventCreate*`.
    pub(super) fn event_create(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let mut e: H = std::ptr::null_mut();
        let flags = u(f, name::FLAGS)? as u32;
        hip!(self.api, hipEventCreateWithFlags(&mut e, flags))?;
        self.handles.insert(u(f, name::EVENT)?, e);
        Ok(Outcome::Done)
    }

    /// `hipEventRecord`.
    pub(super) fn event_record(&mut self, ev: &Event) -> Result<Outcome> {
        let e = self.handles.get(u(&ev.fields, name::EVENT)?)?;
        hip!(self.api, hipEventRecord(e, self.stream(ev)?))?;
        Ok(Outcome::Done)
    }

    /// `hipEventSynchronize`.
    pub(super) fn event_synchronize(&mut self, ev: &Event) -> Result<Outcome> {
        let e = self.handles.get(u(&ev.fields, name::EVENT)?)?;
        hip!(self.api, hipEventSynchronize(e))?;
        Ok(Outcome::Done)
    }

    /// `hipEventDestroy`.
    pub(super) fn event_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        let rec = u(&ev.fields, name::EVENT)?;
        hip!(self.api, hipEventDestroy(self.handles.get(rec)?))?;
        self.handles.remove(rec);
        Ok(Outcome::Done)
    }
}
