//! Host-visible memory tracker: the regions the device reaches directly and the host reads and
//! writes without a copy call (managed allocations, mapped pinned memory: `cuMemHostAlloc` with
//! `DEVICEMAP`, registrations with `DEVICEMAP`, and pinned memory whose device pointer the
//! program asked for). Each region keeps a fingerprint per [`CHUNK`] (XXH3-128: change
//! detection only, several times cheaper than the blake3 of the blobs it stores); what changed since the
//! state hrr last knew is recorded as a pseudo-call (`hrrHostMemWrite`, `hrrHostMemCheck`
//! rows of the table; FORMAT.md §"host-visible memory"):
//!
//! - before device work is submitted (launch, copy, memset, graph launch: [`submit`]), the
//!   regions it may reach (those a launch's argument words point into, a copy's destination
//!   and device-side source; every region for a graph launch or a launch whose arguments are
//!   not known; and for the first submission since a synchronisation of the whole device,
//!   since work may reach a region through pointers kept in memory, as NCCL's flags, every
//!   region device code was handed a pointer into: [`Region::escaped`]) are read
//!   unless device work in flight may be writing them: changed chunks are **host writes**,
//!   replayed before the same call; chunks a copy overwrites whole are not read first;
//! - after a synchronisation (context, stream or event synchronisation, a blocking D2H copy):
//!   changed chunks of a region device work may have written since the last such point (a
//!   kernel whose arguments point into it, a copy or memset writing it, any graph launch) are
//!   what the device wrote, recorded as **host reads** that replay compares like a D2H result.
//!   A stream's synchronisation (`cuStreamSynchronize` of a stream other than the legacy
//!   default one) completes that stream's launches only: a region launches on other streams
//!   may still be writing is not read then, but at a later synchronisation that completes them
//!   ([`synchronising_stream`]). A region no device work was noted writing is not read at a
//!   synchronisation (what the host changed there is read before device work next may reach
//!   it), nor are the chunks a blocking copy's recorded result covers.
//!
//! A region escapes when a launch's argument words point into it, when an upload of at most
//! [`UPLOAD_SCAN_MAX`] bytes ([`uploaded`]) or a host write recorded into another region holds
//! a pointer into it (that region is then read at once, before the same work), or when work
//! whose reach is not known is submitted (every region). A region that never escapes (a
//! staging buffer only copies reach, simpleStreams' registered 64 MiB) is read only where a
//! copy reaches it, not at every first submission (`HRR_CAPTURE_HOSTMEM_READ_ALL=1`: it is).
//!
//! Unchanged chunks are never stored again, nor are chunks an async D2H result recorded whole
//! ([`result_recorded`]). Limits (README, "what capture does not record
//! yet"): a host write made while device work that may write the same region is in flight is
//! seen at the next synchronisation and recorded as a check (replay then reports a mismatch: a
//! program whose host and device update the same managed words at once); a pointer into a
//! region handed to device code inside an upload over [`UPLOAD_SCAN_MAX`] or otherwise unseen
//! (a value a kernel computes) leaves it unescaped, so host writes there before the first work
//! after a synchronisation are not recorded; a kernel reaching a
//! region through a pointer stored in memory rather than in its arguments is not seen, so its
//! writes there are recorded as host writes (replayed, not compared); an event
//! synchronisation is taken as the whole device being idle, and so is a stream's for copies,
//! memsets and graph launches (their stream is not tracked); regions are read by the recorder's thread
//! at these points only, so a region freed by another thread meanwhile is not guarded against.

use crate::hot::HOT;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

use hrr_calls::shapes::{HostMemCheck, HostMemWrite};
use hrr_calls::Kind;

use super::calls::Export;
use super::API;
use crate::fingerprint::Fingerprint;
use crate::hook::profile::{HOSTMEM_AFTER_SYNC, HOSTMEM_BEFORE_WORK};
use crate::hook::ApiExport;
use crate::recorder;

/// Hashing and storing granularity.
pub const CHUNK: usize = 64 << 10;
/// Consecutive changed chunks are stored as one blob of at most this many chunks.
const MAX_RUN: usize = 64;

struct Region {
    len: usize,
    /// Fingerprint of each chunk as hrr last knew it (`None`: never seen).
    known: Vec<Option<Fingerprint>>,
    /// The streams of launches since the region's last check whose arguments point into it,
    /// and [`ANY_STREAM`] after a copy, memset or graph launch (which may write any region):
    /// device work that may be writing it.
    touched: Vec<u64>,
    /// Submissions so far that may write it (each one that notes it in `touched` counts).
    writes: u64,
    /// The chunks an async D2H result recorded as they are now, and `writes` when its copy was
    /// submitted: while no later submission may have written the region, the next scan takes
    /// them as known instead of hashing them again ([`result_recorded`]).
    settled: Option<(std::ops::Range<usize>, u64)>,
    /// Device code may hold a pointer into it ([`escape`]): a launch's argument words pointed
    /// into it, an upload or a host write to another region carried such a pointer, or work
    /// whose reach is not known was submitted. Only such regions may be reached by work
    /// through pointers kept in memory; never unset while tracked.
    escaped: bool,
}

/// A stream not known: device work of a copy, memset or graph launch.
const ANY_STREAM: u64 = u64::MAX;

/// What a scan follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Point {
    /// A synchronisation of the whole device (context, event, legacy stream, blocking copy).
    Device,
    /// A synchronisation of one stream (its handle as the program passed it).
    Stream(u64),
}

/// Tracked regions by base address.
static REGIONS: Mutex<BTreeMap<u64, Region>> = Mutex::new(BTreeMap::new());
/// Pinned allocations not tracked (yet): base → length, promoted when the program asks for
/// their device pointer.
static PINNED: Mutex<BTreeMap<u64, usize>> = Mutex::new(BTreeMap::new());
// `HOT.hostmem_regions`: the number of tracked regions (fast path: no lock when none).
/// Number of tracked regions not [`Region::escaped`] (uploads are looked at for pointers into
/// them only while there are some).
static UNESCAPED: AtomicUsize = AtomicUsize::new(0);
/// Uploads this large or smaller are looked at for pointers into tracked regions
/// ([`uploaded`]); larger ones are not (README: what capture does not record yet).
pub const UPLOAD_SCAN_MAX: usize = 1 << 20;
/// The tracked regions' bounds: what a launch's argument words are matched against on the
/// launch path, without the regions' lock (set with `HOT.hostmem_regions` wherever regions come and go,
/// the regions' lock held).
static BOUNDS: RwLock<Bounds> = RwLock::new(Bounds {
    regions: Vec::new(),
    end: 0,
});

/// Tracked regions' `(base, end)`, by base, and the highest end of them.
struct Bounds {
    regions: Vec<(u64, u64)>,
    end: u64,
}

/// No device work submitted since the last synchronisation of the whole device.
static IDLE: AtomicBool = AtomicBool::new(true);
/// The thread (`pthread_self`) whose call is the first to submit device work since then, until
/// that call's [`submit`] (which then reads every region) or its end; 0: none. A global, not
/// a thread-local, so that a launch asks it with an atomic load.
static FIRST: AtomicU64 = AtomicU64::new(0);

fn regions() -> std::sync::MutexGuard<'static, BTreeMap<u64, Region>> {
    REGIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// `r` changed: its region count and bounds are published for the launch path.
fn publish(r: &BTreeMap<u64, Region>) {
    let regions: Vec<(u64, u64)> = r.iter().map(|(&b, g)| (b, b + g.len as u64)).collect();
    let end = regions.iter().map(|&(_, end)| end).max().unwrap_or(0);
    *BOUNDS.write().unwrap_or_else(|e| e.into_inner()) = Bounds { regions, end };
    HOT.hostmem_regions.store(r.len(), Ordering::Release);
    recount_unescaped(r);
}

fn pinned() -> std::sync::MutexGuard<'static, BTreeMap<u64, usize>> {
    PINNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether any region is tracked (one load of the hot flags: every hook's fast path).
#[inline(always)]
pub fn tracking() -> bool {
    HOT.hostmem_regions.load(Ordering::Acquire) != 0
}

/// Track `[base, base+len)` (its first contents are recorded at the next scan).
pub fn track(base: u64, len: usize) {
    if base == 0 || len == 0 || !recorder::active() {
        return;
    }
    let mut r = regions();
    r.insert(
        base,
        Region {
            len,
            known: vec![None; len.div_ceil(CHUNK)],
            touched: Vec::new(),
            writes: 0,
            settled: None,
            escaped: false,
        },
    );
    publish(&r);
}

/// Remember a pinned allocation the device may reach once its device pointer is asked.
pub fn note_pinned(base: u64, len: usize) {
    if base != 0 && len != 0 && recorder::active() {
        pinned().insert(base, len);
    }
}

/// The program asked for the device pointer of `host`: track the pinned allocation holding it,
/// and take the region holding it as [`Region::escaped`] (the program means to hand that
/// pointer to device code, in whatever way; where the device's address differs from the
/// host's, as without unified addressing, a launch's argument words would not be matched).
pub fn promote(host: u64) {
    let found = {
        let p = pinned();
        p.range(..=host)
            .next_back()
            .filter(|(&b, &l)| host < b + l as u64)
            .map(|(&b, &l)| (b, l))
    };
    if let Some((base, len)) = found {
        if !regions().contains_key(&base) {
            track(base, len);
        }
    }
    handed_over(host);
}

/// Device code is handed `addr` in a way whose words capture does not read (a texture or
/// surface object over linear memory, a tensor map's global address): the region holding it
/// is [`Region::escaped`].
pub fn handed_over(addr: u64) {
    if !tracking() {
        return;
    }
    let mut regs = regions();
    if let Some(base) = region_of(&regs, addr) {
        escape(&mut regs, [base]);
    }
}

/// How a D2H result [`result_recorded`] names was recorded.
#[derive(Clone, Copy)]
pub enum Recorded {
    /// By a blocking copy, whose own call scans the regions next ([`after`]): that scan skips
    /// the chunks hashed here (nothing was submitted in between).
    Blocking,
    /// By an async copy's completion, with the base of the region its copy writes and the
    /// region's write count as the copy's submission left it ([`copy_writes`]; `None`: not
    /// known): the next scan skips the chunks hashed here unless a later submission may have
    /// written the region.
    Async(Option<(u64, u64)>),
}

/// A D2H result of `n` bytes at `dst` was recorded (the blocking copy's event or the async
/// one's `hrrMemcpyResult` holds them): the chunks of a tracked region it covers whole are
/// known as they are now, so the next scan neither stores the same bytes again as checks (a
/// blocking 64 MiB copy into registered memory, simpleStreams' non-streamed loop, stored its
/// result twice before) nor hashes them again (simpleMultiCopy's loops synchronise an event
/// behind each async download into mapped memory: the scan after it hashed the 16 MiB the
/// result had just hashed).
pub fn result_recorded(dst: u64, n: usize, how: Recorded) {
    if !tracking() || n < CHUNK {
        return;
    }
    let mut regs = regions();
    let Some((base, first, last)) = chunks_covered(&regs, dst, n) else {
        return;
    };
    let r = regs.get_mut(&base).expect("the region just found");
    // SAFETY: whole chunks of a live tracked region (untracked before it is freed).
    let covered = unsafe {
        std::slice::from_raw_parts(
            (base as usize + first * CHUNK) as *const u8,
            (last - first) * CHUNK,
        )
    };
    for (known, h) in r.known[first..last].iter_mut().zip(pieces_of(covered)) {
        *known = Some(h);
    }
    match how {
        Recorded::Blocking => this_call(|c| c.just_known = Some((base, first..last))),
        Recorded::Async(Some((b, writes))) if b == base && writes == r.writes => {
            r.settled = Some((first..last, writes));
        }
        Recorded::Async(_) => {}
    }
}

/// The chunks of a tracked region that `n` bytes at `dst` cover whole: the region's base and
/// the range of its chunks (a partial first or last chunk is not covered).
fn chunks_covered(regs: &BTreeMap<u64, Region>, dst: u64, n: usize) -> Option<(u64, usize, usize)> {
    let (&base, r) = regs.range(..=dst).next_back()?;
    let end = dst.saturating_add(n as u64).min(base + r.len as u64);
    if dst >= end {
        return None;
    }
    let first = ((dst - base) as usize).div_ceil(CHUNK);
    let last = (((end - base) as usize) / CHUNK).min(r.known.len());
    (first < last).then_some((base, first, last))
}

/// The whole chunks of a tracked region a D2H result of `n` bytes at `dst` is about to cover
/// ([`result_recorded`]): the address of the first and their number, for their fingerprints
/// to be taken where the result's bytes came from (`super::digest`; handed over with
/// `crate::fingerprint::remember_pieces`). `None`: it covers none.
pub fn chunks_to_cover(dst: u64, n: usize) -> Option<(u64, usize)> {
    if !tracking() || n < CHUNK {
        return None;
    }
    let (base, first, last) = chunks_covered(&regions(), dst, n)?;
    Some((base + (first * CHUNK) as u64, last - first))
}

/// The base and write count ([`Recorded::Async`]) of the region the copy this thread's call
/// submitted writes, as its submission left it (`None`: it writes no tracked region).
pub fn copy_writes() -> Option<(u64, u64)> {
    this_call(|c| c.copy_writes)
}

/// Whether `ptr` lies in a tracked region (memory the device may write without a copy).
pub fn tracks(ptr: u64) -> bool {
    if !tracking() {
        return false;
    }
    regions()
        .range(..=ptr)
        .next_back()
        .is_some_and(|(&base, r)| ptr < base + r.len as u64)
}

/// `base` is freed or unregistered: stop tracking it (before the real call frees it). Its
/// length, where it was known.
pub fn untrack(base: u64) -> Option<usize> {
    let pinned_len = pinned().remove(&base);
    let mut r = regions();
    let region_len = r.remove(&base).map(|g| g.len);
    publish(&r);
    region_len.or(pinned_len)
}

/// A context goes (destroyed, reset, or a primary context released — which frees its memory
/// when it was the last reference): stop tracking everything, since what it held may be gone.
/// Regions of another context still alive are then no longer recorded (README).
pub fn untrack_all() {
    pinned().clear();
    let mut r = regions();
    r.clear();
    publish(&r);
}

/// Device work a call of `kind` submits, or synchronisation it waits for.
fn submits(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Launch
            | Kind::GraphLaunch
            | Kind::H2d
            | Kind::D2h
            | Kind::D2d
            | Kind::Copy
            | Kind::Memset
    )
}

/// What device work about to be submitted may reach ([`submit`]).
pub enum Target<'a> {
    /// Work that reaches no tracked memory now (a launch into a stream being captured: it
    /// runs later, as part of a graph).
    Nothing,
    /// Not known (a graph launch, a copy whose hook does not say): every region.
    All,
    /// A launch on `stream` with its packed argument buffer (`None`: not known, every
    /// region): the regions an 8-byte word of it points into.
    Launch { args: Option<&'a [u8]>, stream: u64 },
    /// A copy or memset writing `n` bytes at `dst` and reading `src` (a host or device
    /// address; `None`: host memory whose bytes the copy records itself).
    Copy {
        dst: u64,
        src: Option<u64>,
        n: usize,
    },
}

/// What the hook call being made on this thread told the tracker (one thread-local, taken
/// whole once the call returned: [`after`]).
#[derive(Default)]
struct CallState {
    /// The call submits device work and its hook has not said what the work reaches yet
    /// ([`submit`]; else [`before_real_call`] takes every region).
    pending: bool,
    /// The stream the synchronisation being made waits for ([`synchronising_stream`]).
    synced: Option<u64>,
    /// The D2H call being made leaves its copy running ([`async_copy`]).
    async_copy: bool,
    /// The copy being made is a blocking download its call's kind does not tell
    /// ([`blocking_download`]).
    blocking_download: bool,
    /// The chunks (region base, chunk range) a blocking copy's result made known during the
    /// call ([`result_recorded`]): the scan after it skips them.
    just_known: Option<(u64, std::ops::Range<usize>)>,
    /// The write count of the region the copy this call submitted writes ([`copy_writes`]).
    copy_writes: Option<(u64, u64)>,
}

thread_local! {
    static CALL: std::cell::RefCell<CallState> = const {
        std::cell::RefCell::new(CallState {
            pending: false,
            synced: None,
            async_copy: false,
            blocking_download: false,
            just_known: None,
            copy_writes: None,
        })
    };
}

/// `f` on the state of the hook call being made on this thread.
fn this_call<R>(f: impl FnOnce(&mut CallState) -> R) -> R {
    CALL.with(|c| f(&mut c.borrow_mut()))
}

/// The regions of `bounds` that 8-byte words of `args` point into, by base. One pass the
/// compiler vectorises first asks whether any word lies between the lowest base and the highest
/// end at all (most launches point into no tracked region: device memory only); only then is
/// each word looked up.
fn regions_pointed_into(bounds: &Bounds, args: &[u8]) -> Vec<u64> {
    let regions = &bounds.regions[..];
    let Some(&(low, _)) = regions.first() else {
        return Vec::new();
    };
    let span = bounds.end.saturating_sub(low);
    let words = args
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
    if !words
        .clone()
        .fold(false, |any, v| any | (v.wrapping_sub(low) < span))
    {
        return Vec::new();
    }
    let mut hit: Vec<u64> = Vec::new();
    for v in words {
        let i = regions.partition_point(|&(base, _)| base <= v);
        if let Some(&(base, end)) = i.checked_sub(1).map(|i| &regions[i]) {
            if v < end && !hit.contains(&base) {
                hit.push(base);
            }
        }
    }
    hit
}

/// A region work reaches (by base) and the chunks of it the work overwrites whole (not read
/// before it).
type Reached = (u64, std::ops::Range<usize>);

/// The tracked region holding `addr`, by base.
fn region_of(regs: &BTreeMap<u64, Region>, addr: u64) -> Option<u64> {
    regs.range(..=addr)
        .next_back()
        .filter(|(&b, r)| addr < b + r.len as u64)
        .map(|(&b, _)| b)
}

/// Device work described by `target` is about to be submitted by this thread (called by the
/// hook before the real call, not under the recorder's lock). Each region it may reach that no
/// device work in flight may be writing is read first: what changed since hrr last knew it is
/// the host's, recorded as **host writes** before the call. The regions it may write are then
/// taken as written by device work in flight on its stream (every stream for copies, memsets
/// and graphs) until a synchronisation that completes it reads them ([`after`]). A launch
/// whose arguments point into no region, the most common case, reads and notes nothing
/// (matched against the published bounds, without the regions' lock), and neither does a copy
/// between device memory and host memory hrr does not track.
pub fn submit(target: Target) {
    if !tracking() {
        return;
    }
    if !matches!(target, Target::Launch { .. } | Target::Nothing) {
        this_call(|c| c.pending = false); // (launches are never pending: `before`)
    }
    let first = take_first();
    let hits: Option<Vec<u64>> = match &target {
        Target::Nothing => {
            if first {
                IDLE.store(true, Ordering::Release); // nothing runs now: still the first
            }
            return;
        }
        Target::Launch { args: Some(a), .. } => {
            let hit = regions_pointed_into(&BOUNDS.read().unwrap_or_else(|e| e.into_inner()), a);
            if hit.is_empty() && !first {
                return;
            }
            Some(hit)
        }
        _ => None,
    };
    let mut regs = regions();
    // (only escapes below change it: read once)
    let unescaped = UNESCAPED.load(Ordering::Acquire) != 0;
    match (&target, &hits) {
        // work whose reach is not known may hold a pointer into any region from now on
        (Target::All | Target::Launch { args: None, .. }, _) if unescaped => {
            let all: Vec<u64> = regs.keys().copied().collect();
            escape(&mut regs, all);
        }
        (_, Some(hit)) if unescaped => {
            escape(&mut regs, hit.iter().copied());
        }
        _ => {}
    }
    let mut copy_dst = None;
    let (reached, written, stream): (Vec<Reached>, Vec<u64>, u64) = match target {
        Target::Nothing => return,
        Target::All | Target::Launch { args: None, .. } => {
            let stream = match target {
                Target::Launch { stream, .. } => stream,
                _ => ANY_STREAM,
            };
            let all: Vec<u64> = regs.keys().copied().collect();
            (all.iter().map(|&b| (b, 0..0)).collect(), all, stream)
        }
        Target::Launch { stream, .. } => {
            let hit = hits.unwrap_or_default();
            (hit.iter().map(|&b| (b, 0..0)).collect(), hit, stream)
        }
        Target::Copy { dst, src, n } => {
            copy_dst = region_of(&regs, dst);
            let mut reached = Vec::new();
            let mut written = Vec::new();
            if let Some(b) = copy_dst {
                // chunks the copy overwrites whole need not be read first
                let r = &regs[&b];
                let end = dst.saturating_add(n as u64).min(b + r.len as u64);
                let first = ((dst - b) as usize).div_ceil(CHUNK);
                let last = ((end - b) as usize / CHUNK).max(first);
                reached.push((b, first..last));
                written.push(b);
            }
            if let Some(b) = src.and_then(|s| region_of(&regs, s)) {
                if !reached.iter().any(|(r, _)| *r == b) {
                    reached.push((b, 0..0));
                }
            }
            (reached, written, ANY_STREAM)
        }
    };
    let mut reached = if first && !crate::hook::profile::hostmem_read_all() {
        // the first work since the device was idle may reach, through pointers kept in memory
        // (NCCL's flags), any region device code was handed a pointer into: those are read, as
        // the work's own are
        let mut all = reached;
        all.extend(
            regs.iter()
                .filter(|(b, r)| r.escaped && !all.iter().any(|(a, _)| a == *b))
                .map(|(&b, _)| (b, 0..0))
                .collect::<Vec<_>>(),
        );
        all
    } else if first {
        // (`HRR_CAPTURE_HOSTMEM_READ_ALL=1`: every region, escaped or not)
        let skip_of = |b: u64| {
            reached
                .iter()
                .find(|(r, _)| *r == b)
                .map_or(0..0, |(_, s)| s.clone())
        };
        regs.keys().map(|&b| (b, skip_of(b))).collect()
    } else {
        reached
    };
    let mut i = 0;
    while i < reached.len() {
        let (base, skip) = reached[i].clone();
        i += 1;
        let Some(r) = regs.get_mut(&base) else {
            continue;
        };
        if !r.touched.is_empty() {
            continue; // device work in flight may be writing it: whose change is unknown
        }
        // SAFETY: the region is live (untracked before it is freed) and `len` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(base as usize as *const u8, r.len) };
        let runs = HOSTMEM_BEFORE_WORK.time(|| changed_runs(&mut r.known, bytes, skip));
        for (off, len) in runs {
            if unescaped {
                // a pointer the host wrote here reaches device code with it: the region it
                // points into is read now too (the work may follow it)
                for b in escape(&mut regs, pointed_into(&bytes[off..off + len])) {
                    if !reached.iter().any(|(a, _)| *a == b) {
                        reached.push((b, 0..0));
                    }
                }
            }
            emit(base, off, len, false);
        }
    }
    for base in written {
        if let Some(r) = regs.get_mut(&base) {
            if !r.touched.contains(&stream) {
                r.touched.push(stream);
            }
            r.writes += 1;
            if copy_dst == Some(base) {
                this_call(|c| c.copy_writes = Some((base, r.writes)));
            }
        }
    }
}

/// Mark the regions `bases` names [`Region::escaped`]: those that were not before (the count
/// of unescaped regions updated).
fn escape(regs: &mut BTreeMap<u64, Region>, bases: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let newly: Vec<u64> = bases
        .into_iter()
        .filter(|b| {
            regs.get_mut(b)
                .is_some_and(|r| !std::mem::replace(&mut r.escaped, true))
        })
        .collect();
    if !newly.is_empty() {
        recount_unescaped(regs);
    }
    newly
}

fn recount_unescaped(regs: &BTreeMap<u64, Region>) {
    UNESCAPED.store(
        regs.values().filter(|g| !g.escaped).count(),
        Ordering::Release,
    );
}

/// The tracked regions 8-byte words of `bytes` (aligned as they will be on the device) point
/// into, by base.
fn pointed_into(bytes: &[u8]) -> Vec<u64> {
    regions_pointed_into(&BOUNDS.read().unwrap_or_else(|e| e.into_inner()), bytes)
}

/// `n` bytes at host address `src` are about to be uploaded to `dst` (an H2D copy): where they
/// hold a pointer into a tracked region device code was not handed one into before, that
/// region is [`Region::escaped`] from now on (work may reach it through the uploaded pointer:
/// NCCL's tables of its flags' addresses). Uploads over [`UPLOAD_SCAN_MAX`] are not looked at.
///
/// # Safety
/// `src` must be readable for `n` bytes (the copy reads them).
pub unsafe fn uploaded(src: *const u8, n: usize, dst: u64) {
    if UNESCAPED.load(Ordering::Acquire) == 0 || src.is_null() || n > UPLOAD_SCAN_MAX {
        return;
    }
    // the words as the device will see them: 8-byte aligned at the destination
    let lead = ((8 - dst % 8) % 8) as usize;
    if n <= lead {
        return;
    }
    // SAFETY: the caller's.
    let bytes = unsafe { std::slice::from_raw_parts(src.add(lead), n - lead) };
    let hit = pointed_into(bytes);
    if !hit.is_empty() {
        escape(&mut regions(), hit);
    }
}

/// The real call of a hook is about to be made: device work whose hook did not say what it
/// reaches ([`submit`]) may reach every region.
pub fn before_real_call() {
    if tracking() && this_call(|c| std::mem::take(&mut c.pending)) {
        submit(Target::All);
    }
}

/// The synchronisation about to be made on this thread waits for stream `stream` only (as
/// the program passed it: the legacy default stream, 0 or 1, waits for the whole device).
pub fn synchronising_stream(stream: u64) {
    if tracking() && stream > 1 {
        this_call(|c| c.synced = Some(stream));
    }
}

/// Before a call of `kind`: a call submitting device work is pending until its hook says what
/// the work reaches ([`submit`]) or its real call is made ([`before_real_call`]). Launches
/// are not: every launch hook says what its launch reaches (`custom/launch.rs`), which spares
/// the launch path this thread-local's accesses.
#[inline(always)]
pub fn before(kind: Kind) {
    if tracking() && submits(kind) {
        before_tracked(kind);
    }
}

/// [`before`] a call of `kind`, which submits device work, while host memory is tracked.
#[inline(never)]
fn before_tracked(kind: Kind) {
    if IDLE.swap(false, Ordering::AcqRel) {
        // SAFETY: pthread_self has no preconditions.
        FIRST.store(unsafe { libc::pthread_self() } as u64, Ordering::Release);
    }
    if kind != Kind::Launch {
        this_call(|c| c.pending = true);
    }
}

/// Whether the call this thread is making is the first to submit device work since a
/// synchronisation of the whole device (taken: asked once per call).
fn take_first() -> bool {
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as u64;
    FIRST.load(Ordering::Acquire) == me
        && FIRST
            .compare_exchange(me, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
}

/// The D2H call being made returns with its copy still running (an async copy into
/// page-locked memory): it is neither a synchronisation nor a point where the device is idle,
/// so [`after`] it records nothing (the region may be half written) and does not take the
/// device for idle.
pub fn async_copy() {
    this_call(|c| c.async_copy = true);
}

/// The copy being made on this thread is a blocking download whose call's kind does not say so
/// (`cuMemcpy`, `cuMemcpy2D`/`3D`: their direction comes from the pointers): like
/// `cuMemcpyDtoH`, it returns once the work before it completed, a synchronisation of the
/// device ([`after`]).
pub fn blocking_download() {
    this_call(|c| c.blocking_download = true);
}

/// Whether the D2H call being made on this thread leaves its copy running ([`async_copy`]):
/// then it is no synchronisation.
pub fn copy_left_running() -> bool {
    this_call(|c| c.async_copy)
}

/// After a call of `kind`: a synchronisation records what the device wrote as checks.
#[inline(always)]
pub fn after(kind: Kind) {
    if kind == Kind::Launch && !tracking() {
        return; // (a launch hook writes no call state: `before`; the most common call)
    }
    after_call(kind)
}

/// [`after`] a call that may have left this thread's call state.
#[inline(never)]
fn after_call(kind: Kind) {
    // taken whole: a hook that never made its real call submitted nothing
    let call = this_call(std::mem::take);
    if tracking() && take_first() {
        IDLE.store(true, Ordering::Release); // its hook submitted nothing after all
    }
    if !(matches!(kind, Kind::Sync | Kind::D2h) || call.blocking_download) || call.async_copy {
        return;
    }
    if tracking() {
        scan(
            call.synced.map_or(Point::Device, Point::Stream),
            call.just_known,
        );
    }
    IDLE.store(true, Ordering::Release);
}

/// After a synchronisation: record as **checks** the chunks that changed since hrr last knew
/// them in each region device work may have written and this synchronisation completed. A
/// region launches on other streams than the one synchronised may still be writing is left for
/// a later scan (nothing of it is read now); a region no device work was noted writing is not
/// read (what the host changed there is read before device work next reaches it: [`submit`]).
/// The chunks `just_known` names (a region's base and a chunk range) were hashed by this call
/// already, and those an async result recorded since no later submission may have written
/// the region ([`Region::settled`]): both are taken as unchanged.
fn scan(at: Point, just_known: Option<(u64, std::ops::Range<usize>)>) {
    let mut regs = regions();
    for (&base, r) in regs.iter_mut() {
        if r.touched.is_empty() {
            continue;
        }
        match at {
            Point::Device => r.touched.clear(),
            Point::Stream(s) => r.touched.retain(|&t| t != s && t != ANY_STREAM),
        }
        if r.touched.iter().any(|&t| t != ANY_STREAM) {
            continue; // launches on streams not synchronised yet may be writing it
        }
        // SAFETY: the region is live (untracked before it is freed) and `len` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(base as usize as *const u8, r.len) };
        let skip = match (&just_known, r.settled.take()) {
            (Some((b, chunks)), _) if *b == base => chunks.clone(),
            (_, Some((chunks, writes))) if writes == r.writes => chunks,
            _ => 0..0,
        };
        let runs = HOSTMEM_AFTER_SYNC.time(|| changed_runs(&mut r.known, bytes, skip));
        for (off, len) in runs {
            emit(base, off, len, true);
        }
    }
}

/// The runs of consecutive chunks of `bytes` whose hash differs from `known` (at most
/// [`MAX_RUN`] chunks each), as (offset, length); `known` is updated. The chunks `skip` names
/// are not hashed and taken as unchanged.
fn changed_runs(
    known: &mut [Option<Fingerprint>],
    bytes: &[u8],
    skip: std::ops::Range<usize>,
) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut run_chunks = 0;
    let chunks = known.len();
    let start = skip.start.min(chunks);
    let skip = start..skip.end.clamp(start, chunks);
    let head = &bytes[..(skip.start * CHUNK).min(bytes.len())];
    let tail = &bytes[(skip.end * CHUNK).min(bytes.len())..];
    let mut hashes = chunk_fingerprints(head)
        .into_iter()
        .map(Some)
        .collect::<Vec<_>>();
    hashes.extend(std::iter::repeat_n(None, skip.len()));
    hashes.extend(chunk_fingerprints(tail).into_iter().map(Some));
    for ((i, chunk), h) in bytes.chunks(CHUNK).enumerate().zip(hashes) {
        let Some(h) = h else {
            run_chunks = 0; // a chunk this call already knows: unchanged
            continue;
        };
        if known[i] == Some(h) {
            run_chunks = 0;
            continue;
        }
        known[i] = Some(h);
        match runs.last_mut() {
            Some((off, len))
                if run_chunks > 0 && run_chunks < MAX_RUN && *off + *len == i * CHUNK =>
            {
                *len += chunk.len();
                run_chunks += 1;
            }
            _ => {
                runs.push((i * CHUNK, chunk.len()));
                run_chunks = 1;
            }
        }
    }
    runs
}

/// The fingerprint of each [`CHUNK`] of `bytes` (on several threads for large regions).
/// [`chunk_fingerprints`] of bytes a result just stored: those its store fingerprinted, or
/// the GPU took from the copy's source (`super::digest`: a result recorded as digests), when
/// they are the same pieces (`crate::fingerprint::recent_pieces`), else read again.
fn pieces_of(bytes: &[u8]) -> Vec<Fingerprint> {
    const _: () = assert!(CHUNK == crate::fingerprint::PIECE);
    let n = bytes.len() / CHUNK;
    crate::fingerprint::recent_pieces(bytes.as_ptr() as usize, n)
        .unwrap_or_else(|| chunk_fingerprints(bytes))
}

fn chunk_fingerprints(bytes: &[u8]) -> Vec<Fingerprint> {
    crate::fingerprint::chunks(bytes, CHUNK)
}

/// Store `len` bytes at `base + off` and record the event.
fn emit(base: u64, off: usize, len: usize, check: bool) {
    // SAFETY: inside a live tracked region.
    let blob =
        unsafe { recorder::put_host_blob(&API, (base as usize + off) as *const c_void, len) };
    let (ptr, offset, bytes) = (base, off as u64, len as u64);
    if check {
        super::freecheck::results_copied();
        crate::hook::record(&API, Export::hrrHostMemCheck.id(), None, |_| HostMemCheck {
            ptr,
            offset,
            bytes,
            d2h_blob: blob,
        });
    } else {
        crate::hook::record(&API, Export::hrrHostMemWrite.id(), None, |_| HostMemWrite {
            ptr,
            offset,
            bytes,
            h2d_blob: blob,
        });
    }
}

#[cfg(test)]
mod tests;
