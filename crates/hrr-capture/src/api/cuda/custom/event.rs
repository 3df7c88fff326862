//! `cuEventRecord` and `cuEventRecordWithFlags`: recorded as their rows say, after capture
//! loaded the digest kernels a large allocation of the current context asked for
//! ([`digest::before_event_record`]). Programs record an event to start the regions they
//! time, after the allocations those regions use: loaded there, the kernels neither move the
//! program's allocations nor fall inside a timed region.

#![allow(clippy::missing_safety_doc)]

use super::{rec, Call};
use crate::api::cuda::calls::Export;
use crate::api::cuda::digest;
use hrr_calls::cuda::ffi::{CUresult, Handle};
use hrr_calls::shapes::{EventRecord, EventRecordFlags};
use std::ffi::c_uint;

/// `cuEventRecord` ([module docs](self)).
pub unsafe fn event_record(h: Export, e: Handle, s: Handle, call: impl Call) -> CUresult {
    digest::before_event_record();
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
    digest::before_event_record();
    let r = call();
    rec(h, r, |_| EventRecordFlags {
        event: e as u64,
        stream: s as u64,
        flags,
    });
    r
}
