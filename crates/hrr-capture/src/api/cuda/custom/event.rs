//! `cuEventRecord` and `cuEventRecordWithFlags`: recorded as their rows say, after capture
//! loaded the digest kernels a large allocation of the current context asked for
//! ([`digest::before_event_record`]). Programs record an event to start the regions they
//! time, after the allocations those regions use: loaded there, the kernels neither move the
//! program's allocations nor fall inside a timed region. Not while a stream capture is under
//! way (PyTorch records events inside the graphs it captures; the load allocates): a later
//! record, or the first large result, loads them then.

#![allow(clippy::missing_safety_doc)]

use super::{rec, Call};
use crate::api::cuda::calls::Export;
use crate::api::cuda::{digest, state};
use hrr_calls::cuda::ffi::{CUresult, Handle};
use hrr_calls::shapes::{EventRecord, EventRecordFlags};
use std::ffi::c_uint;

/// Load what a large allocation asked for, unless a stream capture is under way.
unsafe fn before_record() {
    if !state::any_capturing() {
        digest::before_event_record();
    }
}

/// `cuEventRecord` ([module docs](self)).
pub unsafe fn event_record(h: Export, e: Handle, s: Handle, call: impl Call) -> CUresult {
    before_record();
    let r = call();
    rec(h, r, |_| EventRecord {
        event: e as u64,
        stream: s as u64,
    });
    r
}

/// `cuEventRecordWithFlags` ([module docs](self)).
pub unsafe fn event_record_with_flags(
    h: Export,
    e: Handle,
    s: Handle,
    flags: c_uint,
    call: impl Call,
) -> CUresult {
    before_record();
    let r = call();
    rec(h, r, |_| EventRecordFlags {
        event: e as u64,
        stream: s as u64,
        flags,
    });
    r
}
