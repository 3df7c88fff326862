//! The program's stream and event calls that CUDA and HIP replay alike, generic over the
//! `Streams` trait: created, recorded, waited on and destroyed through remapped handles. The
//! stream an event names is resolved by the backend (CUDA maps stream 0 of `_ptsz` calls to the
//! per-thread stream).

use anyhow::Result;

use super::shared::{Call, Handles, Streams, Waiter, H};
use super::{Event, Outcome};
use crate::replay::fields::{name, u};

/// A stream the program created, with its recorded flags and priority.
pub fn stream_create(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let flags = u(f, name::FLAGS)? as u32;
    let priority = u(f, name::PRIORITY).ok().map(|p| p as i32);
    let s = api.create_stream(flags, priority)??;
    handles.insert(u(f, name::STREAM)?, s);
    Ok(Outcome::Done)
}

/// A stream the program destroyed.
pub fn stream_destroy(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    destroy(handles, ev, name::STREAM, |s| api.destroy_stream(s))
}

/// Destroy the handle in field `key` with `destroy` and forget it.
fn destroy(
    handles: &mut Handles,
    ev: &Event,
    key: &str,
    destroy: impl FnOnce(H) -> Call<()>,
) -> Result<Outcome> {
    let rec = u(&ev.fields, key)?;
    destroy(handles.get(rec)?)??;
    handles.remove(rec);
    Ok(Outcome::Done)
}

/// A stream synchronisation (under the watchdog when one is set).
pub fn stream_synchronize(
    waiter: &mut Waiter,
    api: &impl Streams,
    ev: &Event,
    stream: H,
) -> Result<Outcome> {
    waiter.wait(api, stream, &format!("{} (event #{})", ev.name, ev.seq))?;
    Ok(Outcome::Done)
}

/// `stream` made to wait for the recorded event.
pub fn stream_wait_event(
    handles: &Handles,
    api: &impl Streams,
    ev: &Event,
    stream: H,
) -> Result<Outcome> {
    let f = &ev.fields;
    let e = handles.get(u(f, name::EVENT)?)?;
    api.wait_event(stream, e, u(f, name::FLAGS)? as u32)??;
    Ok(Outcome::Done)
}

/// An event the program created, with its recorded flags.
pub fn event_create(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let e = api.create_event(u(f, name::FLAGS)? as u32)??;
    handles.insert(u(f, name::EVENT)?, e);
    Ok(Outcome::Done)
}

/// An event recorded on the stream `stream` resolves.
pub fn event_record(
    handles: &Handles,
    api: &impl Streams,
    ev: &Event,
    stream: impl FnOnce() -> Result<H>,
) -> Result<Outcome> {
    let e = handles.get(u(&ev.fields, name::EVENT)?)?;
    api.record_event(e, stream()?)??;
    Ok(Outcome::Done)
}

/// An event synchronisation.
pub fn event_synchronize(handles: &Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let e = handles.get(u(&ev.fields, name::EVENT)?)?;
    api.synchronize_event(e)??;
    Ok(Outcome::Done)
}

/// An event the program destroyed.
pub fn event_destroy(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    destroy(handles, ev, name::EVENT, |e| api.destroy_event(e))
}
