//! The program's stream and event calls that CUDA and HIP replay alike, generic over the
//! `Streams` trait: created, recorded, waited on and destroyed through remapped handles. The
//! stream an event names is resolved by the backend (CUDA maps stream 0 of `_ptsz` calls to the
//! per-thread stream).

use anyhow::Result;
use hrr_calls::shapes::{
    self, EventCreate, EventRecord, StreamCreate, StreamCreatePriority, StreamWaitEvent,
};

use super::shared::{Call, Handles, Streams, Waiter, H};
use super::{Event, Outcome};

/// A stream the program created, with its recorded flags and, when `prioritised`
/// (`StreamCreatePriority`), its priority.
pub fn stream_create(
    handles: &mut Handles,
    api: &impl Streams,
    ev: &Event,
    prioritised: bool,
) -> Result<Outcome> {
    let (stream, flags, priority) = if prioritised {
        let s: StreamCreatePriority = ev.read()?;
        (s.stream, s.flags, Some(s.priority))
    } else {
        let s: StreamCreate = ev.read()?;
        (s.stream, s.flags, None)
    };
    let live = api.create_stream(flags, priority)??;
    handles.insert(stream, live);
    Ok(Outcome::Done)
}

/// A stream the program destroyed.
pub fn stream_destroy(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let rec = ev.read::<shapes::Stream>()?.stream;
    destroy(handles, rec, |s| api.destroy_stream(s))
}

/// Destroy the handle recorded as `rec` with `destroy` and forget it.
fn destroy(
    handles: &mut Handles,
    rec: u64,
    destroy: impl FnOnce(H) -> Call<()>,
) -> Result<Outcome> {
    destroy(handles.get(rec)?)??;
    handles.remove(rec);
    Ok(Outcome::Done)
}

/// A stream synchronisation (under the watchdog when one is set), on the stream `stream`
/// resolves from the recorded one.
pub fn stream_synchronize(
    waiter: &mut Waiter,
    api: &impl Streams,
    ev: &Event,
    stream: impl FnOnce(u64) -> Result<H>,
) -> Result<Outcome> {
    let s = stream(ev.read::<shapes::Stream>()?.stream)?;
    waiter.wait(api, s, &format!("{} (event #{})", ev.name, ev.seq))?;
    Ok(Outcome::Done)
}

/// An event the program created, with its recorded flags.
pub fn event_create(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let s: EventCreate = ev.read()?;
    let e = api.create_event(s.flags)??;
    handles.insert(s.event, e);
    Ok(Outcome::Done)
}

/// A recorded event and the stream `stream` resolves from the recorded one: the stream made to
/// wait for the event (`wait`: `StreamWaitEvent`), else the event recorded on the stream
/// (`EventRecord`, or the event and stream of `EventRecordFlags`).
pub fn event_on_stream(
    handles: &Handles,
    api: &impl Streams,
    ev: &Event,
    wait: bool,
    stream: impl FnOnce(u64) -> Result<H>,
) -> Result<Outcome> {
    if wait {
        let s: StreamWaitEvent = ev.read()?;
        let st = stream(s.stream)?;
        api.wait_event(st, handles.get(s.event)?, s.flags)??;
    } else {
        let s: EventRecord = ev.read()?;
        api.record_event(handles.get(s.event)?, stream(s.stream)?)??;
    }
    Ok(Outcome::Done)
}

/// An event synchronisation.
pub fn event_synchronize(handles: &Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let e = handles.get(ev.read::<shapes::Event>()?.event)?;
    api.synchronize_event(e)??;
    Ok(Outcome::Done)
}

/// An event the program destroyed.
pub fn event_destroy(handles: &mut Handles, api: &impl Streams, ev: &Event) -> Result<Outcome> {
    let rec = ev.read::<shapes::Event>()?.event;
    destroy(handles, rec, |e| api.destroy_event(e))
}
