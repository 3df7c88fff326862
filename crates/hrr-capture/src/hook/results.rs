//! Async D2H results recorded off the stream. The host function enqueued behind an async D2H
//! copy ([`super::common::result_at_completion`]) used to store the copy's destination bytes
//! itself, and the driver runs nothing else on that stream until a host function returns: every
//! async D2H copy stalled its stream for a hash and a staging copy. Now the host function only
//! hands the result to a recorder thread (`hrr-results`) and returns.
//!
//! The bytes must still be the copy's when that thread reads them. A program may read or reuse
//! the destination only once it knows the copy completed, so:
//! - every synchronisation waits for the results handed over so far ([`wait_recorded`], through
//!   `recorder::wait_results_recorded`): what it made visible is recorded before it returns;
//! - a new async D2H copy into a destination a pending result covers ([`claim`], before the copy
//!   is enqueued) drops that result when its host function has not run yet (the program cannot
//!   have learnt that copy completed, so nothing could see those bytes: a loop copying into one
//!   buffer before one synchronisation is recorded by its last copy), or waits until it is
//!   recorded;
//! - work that can run program code or write host memory behind a copy without a
//!   synchronisation (host functions, graph launches) claims every pending result ([`claim_all`]).
//!
//! Even a host function that returns at once holds its stream for a round trip through the
//! driver's callback thread (on the H200 VM a 16 MiB pinned D2H copy took 0.31 ms, 0.39 ms with
//! a no-op host function behind it, 0.5-0.9 ms with capture's). Where the API allows, a result
//! is [`Deferred`] instead: an event is recorded behind the copy (the stream never waits for
//! the host), and the result is handed over when a synchronisation, or a query saying work is
//! done, finds that event complete ([`wait_recorded`]); only a claim by program code that may
//! run behind the copy ([`claim_all`]) enqueues the host function then, as before.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Where a pending result stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Its copy is enqueued; its host function has not run.
    Enqueued,
    /// Program code may act on its destination without a synchronisation (a host function,
    /// a graph launch, a host-memory call came next): its host function records it on the spot.
    Inline,
    /// A later copy overwrites its destination before the program could learn this one
    /// completed: nothing can see its bytes, and its host function records nothing.
    Dropped,
    /// Its copy completed; the recorder thread has it.
    Handed,
    /// A thread took its [`Deferred`] out of the table to hand it over (its event said the
    /// copy completed, or a context or stream going waits for it) and may be reading its
    /// destination now: claims wait for it as for [`Stage::Handed`], so that program code
    /// enqueued next (a host function freeing that memory: simpleCallback) never runs while
    /// it is read.
    Firing,
}

struct Pending {
    id: u64,
    dst: usize,
    n: usize,
    /// The copy's stream.
    stream: usize,
    stage: Stage,
    /// How its copy's completion is learnt without a host function (`None`: a host function
    /// was enqueued behind it).
    deferred: Option<Deferred>,
}

/// A pending result that learns its copy completed from an event recorded behind the copy,
/// rather than from a host function enqueued there: the driver entry points to query or wait
/// for the event, and what to run once it completed (the host function it would have been,
/// called with `data`), or to enqueue as a host function when program code claims the result.
#[derive(Clone, Copy)]
pub struct Deferred {
    pub event: *mut c_void,
    pub stream: *mut c_void,
    pub data: *mut c_void,
    pub fire: unsafe extern "C" fn(*mut c_void),
    pub fns: EventFns,
}

// SAFETY: the handles are the driver's (usable from any thread); `data` is handed to `fire`
// exactly once, by whichever thread takes the `Deferred` out of the table.
unsafe impl Send for Deferred {}

/// The driver's event and host-function entry points a [`Deferred`] result uses.
#[derive(Clone, Copy)]
pub struct EventFns {
    pub query: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub synchronize: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub destroy: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub launch_host_fn:
        unsafe extern "C" fn(*mut c_void, unsafe extern "C" fn(*mut c_void), *mut c_void) -> c_int,
    /// `cuStreamIsCapturing`: (stream, status out; 0 none).
    pub is_capturing: unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int,
}

impl Deferred {
    /// Its copy completed: forget the event, then run what the host function would have.
    unsafe fn fire(self) {
        (self.fns.destroy)(self.event);
        (self.fire)(self.data);
    }

    /// Program code may run behind the copy: a copy that completed is handed over as it is;
    /// else the host function is enqueued now (behind the copy and before that code, on the
    /// copy's stream), or, where that fails or the stream is being captured into a graph
    /// (the host function would become a node of the program's graph), the copy waited for.
    /// Called holding [`streams_kept`], so that no stream is destroyed meanwhile
    /// ([`stream_going`]).
    unsafe fn enqueue(self) {
        let mut capturing: c_int = 0;
        let captured = (self.fns.is_capturing)(self.stream, &mut capturing) != 0 || capturing != 0;
        if (self.fns.query)(self.event) != 0
            && !captured
            && (self.fns.launch_host_fn)(self.stream, self.fire, self.data) == 0
        {
            (self.fns.destroy)(self.event);
            return;
        }
        self.wait_and_fire();
    }

    /// Wait for the copy, then hand the result over.
    unsafe fn wait_and_fire(self) {
        (self.fns.synchronize)(self.event);
        self.fire();
    }
}

impl Pending {
    /// Its [`Deferred`] is being taken out of the table to be handed over by this thread
    /// (a dropped result stays dropped: nothing reads it).
    fn firing(&mut self) {
        if self.stage == Stage::Enqueued {
            self.stage = Stage::Firing;
        }
    }
}

#[derive(Default)]
struct Table {
    next: u64,
    pending: Vec<Pending>,
}

/// A result to record on the recorder thread.
pub struct Job(Box<dyn FnOnce() + Send>);

impl Job {
    /// # Safety
    /// `f` may be run on another thread: what it reads must stay valid until it runs.
    pub unsafe fn new(f: Box<dyn FnOnce()>) -> Job {
        // SAFETY: the caller vouches for running `f` elsewhere.
        Job(std::mem::transmute::<
            Box<dyn FnOnce()>,
            Box<dyn FnOnce() + Send>,
        >(f))
    }

    /// Record the result.
    pub fn run(self) {
        (self.0)()
    }
}

struct Shared {
    table: Mutex<Table>,
    /// A pending result recorded (removed from the table).
    recorded: Condvar,
    queue: Mutex<VecDeque<(u64, Job)>>,
    queued: Condvar,
}

fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| Shared {
        table: Mutex::new(Table::default()),
        recorded: Condvar::new(),
        queue: Mutex::new(VecDeque::new()),
        queued: Condvar::new(),
    })
}

fn table() -> MutexGuard<'static, Table> {
    shared().table.lock().unwrap_or_else(|e| e.into_inner())
}

/// Results handed to the recorder thread and not yet recorded.
static HANDED: AtomicU32 = AtomicU32::new(0);
/// The process the pending results and the recorder thread belong to: a `fork` child starts
/// afresh (the parent's pending results are not its own, and the thread is not copied).
static OWNER: AtomicU32 = AtomicU32::new(0);
/// The recorder thread: not started, running, or not startable (results recorded in place).
static WORKER: AtomicU8 = AtomicU8::new(WORKER_NONE);
const WORKER_NONE: u8 = 0;
const WORKER_RUNNING: u8 = 1;
const WORKER_FAILED: u8 = 2;

/// In a `fork` child (first call there): forget the parent's pending results and thread.
fn own() {
    let pid = crate::recorder::current_pid();
    if OWNER.load(Ordering::Acquire) == pid {
        return;
    }
    let s = shared();
    s.table
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pending
        .clear();
    s.queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
    HANDED.store(0, Ordering::Release);
    WORKER.store(WORKER_NONE, Ordering::Release);
    OWNER.store(pid, Ordering::Release);
}

/// Whether the recorder thread runs (started with the first hand-over).
fn worker() -> bool {
    match WORKER.compare_exchange(
        WORKER_NONE,
        WORKER_RUNNING,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            let started = std::thread::Builder::new()
                .name("hrr-results".into())
                .spawn(work)
                .is_ok();
            if !started {
                WORKER.store(WORKER_FAILED, Ordering::Release);
            }
            started
        }
        Err(state) => state == WORKER_RUNNING,
    }
}

fn work() {
    let s = shared();
    loop {
        let (id, job) = {
            let mut q = s.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(j) = q.pop_front() {
                    break j;
                }
                q = s.queued.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        job.run();
        HANDED.fetch_sub(1, Ordering::AcqRel);
        done(id);
    }
}

/// A result of `n` bytes at `dst` about to be enqueued behind its copy on `stream`: its id.
pub fn register(dst: usize, n: usize, stream: usize) -> u64 {
    own();
    let mut t = table();
    t.next += 1;
    let id = t.next;
    t.pending.push(Pending {
        id,
        dst,
        n,
        stream,
        stage: Stage::Enqueued,
        deferred: None,
    });
    id
}

/// Result `id` (registered, not yet enqueued) learns its copy's completion from the event
/// `d` names, recorded behind the copy: handed over by the synchronisation or query that finds
/// it complete ([`wait_recorded`]).
pub fn defer(id: u64, d: Deferred) {
    let mut t = table();
    match t.pending.iter_mut().find(|p| p.id == id) {
        Some(p) => p.deferred = Some(d),
        None => {
            drop(t);
            // SAFETY: not in the table: nobody else can take it.
            unsafe { d.fire() }
            return;
        }
    }
    // A program that never synchronises (it polls memory the device writes, say) would pile
    // up events: past a bound, those whose copies completed are handed over here.
    let deferred = t.pending.iter().filter(|p| p.deferred.is_some()).count();
    drop(t);
    if deferred > MAX_DEFERRED {
        fire_completed(false);
    }
}

/// Deferred results beyond which [`defer`] hands over those whose copies completed.
const MAX_DEFERRED: usize = 256;

/// A context goes (destroyed, reset, its primary context released), and its events with it:
/// every deferred result is waited for (its copy completes first, as the teardown itself would
/// make it) and handed over now, so that no event of a gone context is asked about later.
pub fn settle_deferred() {
    settle_where(|_| true);
}

/// A stream goes (`cuStreamDestroy`): the deferred results of copies on it are waited for and
/// handed over now, so that no host function is ever enqueued on it once it is gone (a
/// program freeing host memory on one thread while another destroys its stream: each
/// worker of simpleCallback).
pub fn stream_going(stream: *mut c_void) -> MutexGuard<'static, ()> {
    let kept = streams_kept();
    settle_where(|d| d.stream == stream);
    // Results of copies on it that another thread took out to record: recorded before the
    // stream goes, so the archive holds them ahead of its destruction.
    wait_while(|p| p.stream == stream as usize && p.stage == Stage::Firing);
    kept
}

/// Wait (30 s at most, should the archive's disk stall) until no pending result `which` picks
/// is left.
fn wait_while(which: impl Fn(&Pending) -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    let mut t = table();
    while t.pending.iter().any(&which) && Instant::now() < until {
        t = shared()
            .recorded
            .wait_timeout(t, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Held while host functions are enqueued for claimed results, and by a stream's destruction
/// (the guard [`stream_going`] returns, kept until the driver destroyed it): a result taken out
/// of the table by one thread is never enqueued on a stream another thread is destroying.
fn streams_kept() -> MutexGuard<'static, ()> {
    static KEPT: Mutex<()> = Mutex::new(());
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait for the deferred results `which` picks and hand them over, then for every result
/// handed over.
fn settle_where(which: impl Fn(&Deferred) -> bool) {
    own();
    let picked: Vec<Deferred> = table()
        .pending
        .iter_mut()
        .filter_map(|p| {
            let d = p.deferred.take_if(|d| which(d))?;
            p.firing();
            Some(d)
        })
        .collect();
    for d in picked {
        // SAFETY: taken out of the table under its lock: this thread alone has it; the event
        // is live (its context and stream are not gone yet).
        unsafe { d.wait_and_fire() }
    }
    wait_recorded();
}

thread_local! {
    /// Results whose copies completed are recorded on this thread, not handed to the recorder
    /// thread ([`fire_completed`] for a caller that waits for them anyway).
    static RECORD_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Hand over the deferred results whose copies completed (their event says so): after a
/// synchronisation or a query that may have told the program so. `here`: the caller waits for
/// them to be recorded ([`wait_recorded`]), so they are recorded on its thread: handing them
/// to the recorder thread and waiting for it cost a synchronisation two thread wake-ups
/// (simpleMultiCopy's serialized loop, where the GPU idles until its event synchronisation
/// returns).
fn fire_completed(here: bool) {
    let ready: Vec<Deferred> = {
        let mut t = table();
        t.pending
            .iter_mut()
            .filter_map(|p| {
                let d = p.deferred?;
                // SAFETY: the event is live until fired or enqueued (then taken out).
                if unsafe { (d.fns.query)(d.event) } != 0 {
                    return None;
                }
                p.firing();
                p.deferred.take()
            })
            .collect()
    };
    let was = RECORD_HERE.with(|r| r.replace(here));
    for d in ready {
        // SAFETY: taken out of the table under its lock: this thread alone has it.
        unsafe { d.fire() }
    }
    RECORD_HERE.with(|r| r.set(was));
}

/// Result `id` recorded (or given up): forget it.
pub fn done(id: u64) {
    let mut t = table();
    t.pending.retain(|p| p.id != id);
    drop(t);
    shared().recorded.notify_all();
}

/// Result `id` can be read now (its copy completed; an H2D source at once): `job` records it on
/// the recorder thread, or here when it must (program code may act on its bytes next, or no
/// recorder thread runs); nothing when a later copy overwrites its bytes unseen.
pub fn hand_over(id: u64, job: Job) {
    if let Some(job) = completed(id, job) {
        job.run();
        done(id);
    }
}

/// [`hand_over`]'s decision: `Some(job)` back when it must be recorded by the caller.
fn completed(id: u64, job: Job) -> Option<Job> {
    let mut t = table();
    let Some(p) = t.pending.iter_mut().find(|p| p.id == id) else {
        return Some(job);
    };
    if p.stage == Stage::Dropped {
        t.pending.retain(|p| p.id != id);
        drop(t);
        shared().recorded.notify_all();
        return None;
    }
    if p.stage == Stage::Inline || RECORD_HERE.with(|r| r.get()) || !worker() {
        return Some(job);
    }
    p.stage = Stage::Handed;
    HANDED.fetch_add(1, Ordering::AcqRel);
    drop(t);
    let s = shared();
    s.queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push_back((id, job));
    s.queued.notify_one();
    None
}

/// Before an async copy into `n` host bytes at `dst` is enqueued: pending results there whose
/// copies the program cannot know completed are dropped, those being recorded are waited for.
pub fn claim(dst: usize, n: usize) {
    let hits = |p: &Pending| p.dst < dst.saturating_add(n) && dst < p.dst.saturating_add(p.n);
    claim_where(hits, Stage::Dropped);
}

/// Before work that may run program code or write host memory behind pending copies without a
/// synchronisation: every pending result is recorded before it.
pub fn claim_all() {
    claim_where(|_| true, Stage::Inline);
}

/// Pending results `hits` picks: those not handed over yet go to `stage`; the call returns once
/// none handed over is left among them.
fn claim_where(hits: impl Fn(&Pending) -> bool, stage: Stage) {
    own();
    // Taken before the table: a result this claim takes out of the table stays on a live
    // stream until its host function is enqueued ([`stream_going`] waits for it).
    let _kept = (stage == Stage::Inline).then(streams_kept);
    let mut t = table();
    if t.pending.is_empty() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(30);
    // Deferred results program code claims get their host function now (behind their copy).
    let mut enqueue = Vec::new();
    loop {
        let mut handed = false;
        for p in t.pending.iter_mut().filter(|p| hits(p)) {
            match p.stage {
                Stage::Enqueued => {
                    p.stage = stage;
                    if stage == Stage::Inline {
                        enqueue.extend(p.deferred.take());
                    }
                }
                Stage::Dropped => {}
                // Program code claiming every result: one another claim gave a host function
                // (or is recording) is recorded before that code runs, in stream order.
                Stage::Inline if stage == Stage::Inline => {}
                // A destination freed or overwritten: whoever records it must be done first.
                Stage::Inline | Stage::Handed | Stage::Firing => handed = true,
            }
        }
        if !enqueue.is_empty() {
            drop(t);
            for d in enqueue.drain(..) {
                // SAFETY: taken out of the table under its lock: this thread alone has it; its
                // stream is live (destroying one waits for `kept`, held since before the
                // table was read, and settles its results first).
                unsafe { d.enqueue() }
            }
            t = table();
            continue;
        }
        if !handed || Instant::now() >= until {
            return;
        }
        t = shared()
            .recorded
            .wait_timeout(t, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// After a synchronisation: wait until every result handed to the recorder thread so far is
/// recorded (30 s at most, should the archive's disk stall).
pub fn wait_recorded() {
    super::profile::RESULT_WAITS.time(wait_recorded_now)
}

fn wait_recorded_now() {
    own();
    fire_completed(true);
    if HANDED.load(Ordering::Acquire) == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_secs(30);
    let mut t = table();
    while HANDED.load(Ordering::Acquire) != 0 && Instant::now() < until {
        t = shared()
            .recorded
            .wait_timeout(t, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    static READING: AtomicBool = AtomicBool::new(false);
    static READ: AtomicBool = AtomicBool::new(false);

    unsafe extern "C" fn ok(_: *mut c_void) -> c_int {
        0
    }
    unsafe extern "C" fn no_host_fn(
        _: *mut c_void,
        _: unsafe extern "C" fn(*mut c_void),
        _: *mut c_void,
    ) -> c_int {
        1
    }
    unsafe extern "C" fn not_capturing(_: *mut c_void, status: *mut c_int) -> c_int {
        *status = 0;
        0
    }

    /// What the host function of an async D2H result does: read the destination (slowly
    /// here), then hand the result over.
    unsafe extern "C" fn read_slowly(data: *mut c_void) {
        READING.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        READ.store(true, Ordering::SeqCst);
        hand_over(data as u64, Job::new(Box::new(|| {})));
    }

    /// A deferred result whose copy completed, taken by `reader` on another thread (a
    /// synchronisation, or program code claiming every result) and being read there when
    /// `claim` runs: `claim` must return only once it was read.
    fn claimed_while_read_elsewhere(reader: fn(), claim: impl FnOnce()) -> bool {
        READING.store(false, Ordering::SeqCst);
        READ.store(false, Ordering::SeqCst);
        let id = register(0x1000, 64, 2);
        let fns = EventFns {
            query: ok,
            synchronize: ok,
            destroy: ok,
            launch_host_fn: no_host_fn,
            is_capturing: not_capturing,
        };
        defer(
            id,
            Deferred {
                event: std::ptr::dangling_mut(),
                stream: 2 as *mut c_void,
                data: id as *mut c_void,
                fire: read_slowly,
                fns,
            },
        );
        let sync = std::thread::spawn(reader);
        while !READING.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        claim();
        let read_first = READ.load(Ordering::SeqCst);
        sync.join().unwrap();
        read_first
    }

    #[test]
    fn claims_wait_for_results_another_thread_is_reading() {
        // read by a synchronisation: a host function enqueued next (it may free the
        // destination), a free of the destination, or a copy overwriting it
        assert!(claimed_while_read_elsewhere(wait_recorded, claim_all));
        assert!(claimed_while_read_elsewhere(wait_recorded, || claim(
            0x1020, 8
        )));
        // read by another thread's host-memory call (program code behind the copy): a free
        // of the destination on this one (simpleCallback's workers)
        assert!(claimed_while_read_elsewhere(claim_all, || claim(0x1020, 8)));
        // read by a synchronisation while the copy's stream is destroyed: recorded first
        let going = || drop(stream_going(2 as *mut c_void));
        assert!(claimed_while_read_elsewhere(wait_recorded, going));
        assert!(table().pending.is_empty());
    }
}
