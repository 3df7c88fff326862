//! Writing one event: the call's result (when it returns a status) then its shape's fields, in
//! the shape's order, through the recorder. And what a wrapper does after a call of a kind.

use hrr_archive::schema::PayloadBuilder;
use hrr_calls::{Kind, Shape};

use crate::api::ApiDef;
use crate::recorder::{self, Recorder};

/// Record one event of record type `id`: `result` (if the call returns one) and the shape
/// `fill` builds (it may also note things in the manifest through the recorder). Returns the
/// event's sequence number when it was written.
#[inline]
pub fn record<S: Shape>(
    api: &'static ApiDef,
    id: u16,
    result: Option<i32>,
    fill: impl FnOnce(&mut Recorder) -> S,
) -> Option<u64> {
    record_written(api, id, result, |rc, p| fill(rc).write(p))
}

/// [`record`] of a shape that `write` appends field by field itself (one borrowed from the
/// caller's buffers, as a launch's `LaunchView`), after `result`.
#[inline]
pub fn record_written(
    api: &'static ApiDef,
    id: u16,
    result: Option<i32>,
    write: impl FnOnce(&mut Recorder, &mut PayloadBuilder),
) -> Option<u64> {
    recorder::record(api, id, |rc, p| {
        if let Some(r) = result {
            p.i32(r);
        }
        write(rc, p);
    })
}

/// Before a call of `kind` is made: a call that can block (synchronisation, a blocking or
/// synchronised D2H copy) first hands buffered events to the kernel, so a hang or a `kill -9`
/// while it waits never loses a launch recorded before it (queued blobs are not waited for
/// here: that would serialise every copy with the blob thread; they are at the flush after).
/// Inlined into each wrapper, whose `kind` is a constant: a launch's is one load of the hot
/// flags (`crate::hot`), no call.
#[inline(always)]
pub fn before(kind: Kind) {
    crate::api::cuda::hostmem::before(kind);
    // Program code or host memory changes behind pending async D2H copies, without a
    // synchronisation: their results are recorded first (hook::results).
    if matches!(kind, Kind::HostFunc | Kind::GraphLaunch | Kind::HostMem) {
        super::results::claim_all();
        super::results::wait_recorded();
    }
    if matches!(kind, Kind::D2h | Kind::Copy) {
        crate::api::cuda::freecheck::results_copied();
    }
    if matches!(kind, Kind::Sync | Kind::D2h | Kind::Copy) {
        recorder::flush_events();
    }
}

/// The real call of a hook is about to be made (after its custom function's own work before
/// it): device work whose hook did not say what it reaches is taken to reach every region of
/// host-visible memory ([`crate::api::cuda::hostmem::submit`]).
#[inline]
pub fn before_real_call() {
    crate::api::cuda::hostmem::before_real_call();
}

/// After a call of `kind` returned: a blocking call hands buffered events to the kernel after
/// the queued blobs are written, so a `kill -9` after it loses nothing recorded before. Both also
/// let the tracker of host-visible memory record what the host wrote and read
/// ([`crate::api::cuda::hostmem`]). A copy that returned with its copy still running (an async
/// D2H into page-locked memory) tells the program nothing completed: results are not waited
/// for there (that wait held every async copy of a loop for the previous one's hashing).
/// Inlined into each wrapper, as [`before`] is.
#[inline(always)]
pub fn after(kind: Kind) {
    if matches!(kind, Kind::Sync | Kind::D2h | Kind::Copy)
        && !crate::api::cuda::hostmem::copy_left_running()
    {
        super::results::wait_recorded();
    }
    crate::api::cuda::hostmem::after(kind);
    if kind == Kind::Sync {
        recorder::flush_soft();
    }
}

/// A call of `kind` returned and is about to be recorded: after a synchronisation, async D2H
/// results still being recorded by host functions are recorded first (their events precede
/// the synchronisation's).
#[inline]
pub fn returned(kind: Kind) {
    if kind == Kind::Sync {
        recorder::wait_results_recorded();
    }
}
