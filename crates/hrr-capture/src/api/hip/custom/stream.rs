//! Streams, events, stream capture and graphs that need logic, host functions.

use super::Call;
use crate::api::hip::calls::args;

use hrr_calls::hip::ffi::HipError;
use hrr_calls::shapes::{
    BeginCapture, EndCapture, EventCreate, GraphInstantiate, GraphLaunch, StreamCreate,
};

use super::{call_tracking, rec};
use crate::api::hip::calls::Export;
use crate::api::hip::state;
use crate::hook::args::out_addr;

pub unsafe fn stream_create(h: Export, a: args::StreamCreate, r: HipError) {
    let args::StreamCreate { s } = a;
    rec(h, r, |_| StreamCreate {
        stream: out_addr(s),
        flags: 0,
    });
}

pub unsafe fn event_create(h: Export, a: args::EventCreate, r: HipError) {
    let args::EventCreate { e } = a;
    rec(h, r, |_| EventCreate {
        event: out_addr(e),
        flags: 0,
    });
}

pub unsafe fn stream_begin_capture(
    h: Export,
    a: args::StreamBeginCapture,
    call: impl Call,
) -> HipError {
    let args::StreamBeginCapture { s, mode } = a;
    call_tracking(
        h,
        call,
        || state::set_capturing(s as u64, true),
        |_| BeginCapture {
            stream: s as u64,
            mode,
        },
    )
}

pub unsafe fn stream_end_capture(h: Export, a: args::StreamEndCapture, r: HipError) {
    let args::StreamEndCapture { s, g } = a;
    state::set_capturing(s as u64, false);
    rec(h, r, |_| EndCapture {
        stream: s as u64,
        graph: out_addr(g),
    });
}

pub unsafe fn graph_launch(h: Export, a: args::GraphLaunch, r: HipError) {
    let args::GraphLaunch { exec, s } = a;
    rec(h, r, |_| GraphLaunch {
        exec: exec as u64,
        stream: s as u64,
    });
}

/// `hipGraphInstantiate` (no flags).
pub unsafe fn graph_instantiate(h: Export, a: args::GraphInstantiate, r: HipError) {
    rec(h, r, |_| GraphInstantiate {
        exec: out_addr(a.exec),
        graph: a.g as u64,
        flags: 0,
    });
}
