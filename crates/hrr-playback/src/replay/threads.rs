//! `--multi-thread`: one replay thread per captured thread, so the concurrency of a
//! multi-threaded program is replayed instead of one interleaving of it.
//!
//! Events are read and decoded ahead as in the single-threaded replay (`engine::decode_ahead`),
//! then handed, in recorded order, to the replay thread of the thread that recorded them (the
//! record header's `thread_id`). Each replay thread issues its events in their recorded order.
//! Across threads, the [`Gate`] orders two classes of events (see [`is_barrier`]):
//!
//! - a **barrier** — a call capture ran under its ordering lock (creates, destroys, frees,
//!   allocations), and every synchronisation, D2H result, context, stream, event, graph, code
//!   and memory call — is issued only once every event recorded before it has been issued;
//! - any other event (kernel launches, graph launches, H2D and D2D copies, memsets, look-ups)
//!   waits only for the barriers recorded before it, so the launches and copies that different
//!   threads issued between two barriers are issued concurrently.
//!
//! The event recorded first among those not yet issued can always be issued, so the gate
//! cannot deadlock; the events in flight (handed out, not yet issued) are bounded
//! ([`MAX_IN_FLIGHT`], [`MAX_IN_FLIGHT_BYTES`] of blobs read ahead).
//!
//! Driver calls themselves are issued one at a time: the backend is shared behind a lock. A
//! stream or event synchronisation (`Backend::detached_wait`) is a barrier for its turn, but
//! once every event recorded before it was issued it counts as issued and its thread waits
//! without the lock: the other threads issue their later events while it waits, as the
//! program's threads did (a device-wide synchronisation, and every wait under
//! `--sync-after-launch` or a watchdog, still holds the lock). What runs concurrently is the GPU
//! work the threads enqueue, their waits and their host work between calls. Every outcome is
//! accounted for by the same `engine::account` as in the single-threaded replay.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{anyhow, Context, Result};
use hrr_archive::schema::CallDef;
use hrr_archive::ObjectId;
use hrr_calls::Kind;

use super::backend::{base_name, table_facts, Backend, Family, Outcome};
use super::blob_bytes::BlobBytes;
use super::engine::{account, decode_ahead, read_blob, Cx, Decoded, Progress, DECODE_AHEAD};
use super::fields;
use super::report::Summary;

/// Events handed to replay threads and not yet issued, at most.
pub const MAX_IN_FLIGHT: usize = 16_384;
/// Times a replay thread yields before it sleeps waiting for its turn.
const SPIN_YIELDS: u32 = 32;
/// Bytes of blobs read ahead for events in flight, at most (one event may hold more).
pub const MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;

/// Is a call of record type `call` a barrier across replay threads (see the module doc)? A
/// call this build's table does not know is one.
pub fn is_barrier(family: Family, call: &CallDef) -> bool {
    let name = base_name(&call.name).0;
    let fields = call.fields.iter().map(|f| f.name.as_str());
    let Some((kind, ordered)) = table_facts(family, name, fields) else {
        return true;
    };
    let concurrent = matches!(
        kind,
        Kind::Launch
            | Kind::GraphLaunch
            | Kind::H2d
            | Kind::D2d
            | Kind::Memset
            | Kind::Query
            | Kind::Lookup
            | Kind::Attribute
            | Kind::Configure
            | Kind::HostFunc
    );
    ordered || !concurrent
}

/// Which events in flight may be issued now (see the module doc).
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    /// Sequence numbers of the events handed out and not yet issued.
    pending: BTreeSet<u64>,
    /// Those of them that are barriers.
    barriers: BTreeSet<u64>,
    /// Blob bytes they hold, read ahead.
    bytes: u64,
    /// A replay thread stopped the replay: every wait ends.
    stopped: bool,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, g: MutexGuard<'g, GateState>) -> MutexGuard<'g, GateState> {
        self.changed.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    /// Hand out event `seq` (events are handed out in recorded order), once fewer than the
    /// bounds are in flight; `false`: the replay stopped.
    fn admit(&self, seq: u64, barrier: bool, bytes: u64) -> bool {
        let mut g = self.lock();
        while !g.stopped
            && !g.pending.is_empty()
            && (g.pending.len() >= MAX_IN_FLIGHT || g.bytes + bytes > MAX_IN_FLIGHT_BYTES)
        {
            g = self.wait(g);
        }
        g.pending.insert(seq);
        if barrier {
            g.barriers.insert(seq);
        }
        g.bytes += bytes;
        !g.stopped
    }

    /// Wait until event `seq` may be issued; `false`: the replay stopped.
    fn turn(&self, seq: u64, barrier: bool) -> bool {
        let mut g = self.lock();
        // A turn usually comes within microseconds (another thread issuing one call): yield a
        // few times before sleeping on the condition variable, whose wake-up costs more.
        let mut yields = 0;
        loop {
            if g.stopped {
                return false;
            }
            let ready = match barrier {
                true => g.pending.first() == Some(&seq),
                false => g.barriers.first().is_none_or(|&b| b > seq),
            };
            if ready {
                return true;
            }
            if yields < SPIN_YIELDS {
                yields += 1;
                drop(g);
                std::thread::yield_now();
                g = self.lock();
                continue;
            }
            g = self.wait(g);
        }
    }

    /// Event `seq` was issued (or passed over).
    fn issued(&self, seq: u64, bytes: u64) {
        let mut g = self.lock();
        g.pending.remove(&seq);
        g.barriers.remove(&seq);
        g.bytes = g.bytes.saturating_sub(bytes);
        drop(g);
        self.changed.notify_all();
    }

    /// Stop the replay: every thread ends at its next event.
    fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    fn stopped(&self) -> bool {
        self.lock().stopped
    }
}

/// An event handed to a replay thread: its call, the event, the blobs read ahead, whether it is
/// a barrier, and the bytes those blobs hold.
type Item<'s> = (Decoded<'s>, bool, u64);

/// The backend, shared by the replay threads behind a lock.
struct Shared<'b>(&'b mut dyn Backend);
// SAFETY: the backend holds driver handles (contexts, streams, modules as raw pointers) that the
// CUDA driver and HIP runtime accept from any thread once a context is current there
// (`Backend::enter_thread`, called by every replay thread first); the lock serialises every use.
unsafe impl Send for Shared<'_> {}

/// What the replay threads account into: the summary and the progress.
type Books<'r> = Mutex<(&'r mut Summary, &'r mut Progress)>;

/// Replay every event of `dir` with one thread per recorded thread, `cx.opts.loop_count` times,
/// accounting the outcomes into `report` and `prog`: the number of replay threads.
pub fn run(
    cx: &Cx,
    (dir, family): (&Path, Family),
    backend: &mut dyn Backend,
    report: &mut Summary,
    prog: &mut Progress,
) -> Result<u32> {
    let backend = Mutex::new(Shared(backend));
    let books: Books = Mutex::new((report, prog));
    let mut most = 0u32;
    for pass in 0..cx.opts.loop_count {
        let gate = Gate::default();
        let threads = std::thread::scope(|scope| -> Result<u32> {
            let (tx, rx) = std::sync::mpsc::sync_channel(DECODE_AHEAD);
            // (batches are not handed back: their events go to several threads)
            let (_done_tx, done_rx) = channel();
            let schema = cx.schema;
            let events = cx.events;
            let (late, pre) = (cx.late_sources, cx.preloaded);
            std::thread::Builder::new()
                .name("hrr-decode".into())
                .spawn_scoped(scope, move || {
                    decode_ahead((dir, events, late, &[], pre), schema, tx, done_rx)
                })
                .context("starting the event decoding thread")?;
            let mut senders = HashMap::new();
            let mut barrier_of: Vec<Option<bool>> = Vec::new();
            'events: for batch in rx {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        stop_with(&books, &gate, format!("{e:#}"));
                        break;
                    }
                };
                for (call, ev, read) in batch {
                    let k = usize::from(ev.id);
                    if barrier_of.len() <= k {
                        barrier_of.resize(k + 1, None);
                    }
                    let barrier = *barrier_of[k].get_or_insert_with(|| is_barrier(family, call));
                    let bytes = read.iter().map(|(_, b)| b.len() as u64).sum();
                    let (seq, thread) = (ev.seq, ev.thread);
                    if !gate.admit(seq, barrier, bytes) {
                        break 'events;
                    }
                    let to = match senders.entry(thread) {
                        std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                        std::collections::hash_map::Entry::Vacant(v) => {
                            let (t, r) = channel::<Item>();
                            let (gate, backend, books) = (&gate, &backend, &books);
                            std::thread::Builder::new()
                                .name(format!("hrr-replay-{thread}"))
                                .spawn_scoped(scope, move || {
                                    replay_thread(cx, (dir, pass), r, gate, backend, books)
                                })
                                .context("starting a replay thread")?;
                            v.insert(t)
                        }
                    };
                    if to.send(((call, ev, read), barrier, bytes)).is_err() {
                        // that thread stopped the replay; its gate wait ends the others
                        gate.issued(seq, bytes);
                    }
                }
            }
            Ok(senders.len() as u32)
        })?;
        most = most.max(threads);
        if gate.stopped() {
            break;
        }
    }
    Ok(most)
}

/// Stop the replay with `error` (when none was recorded yet).
fn stop_with(books: &Books, gate: &Gate, error: String) {
    let mut b = books.lock().unwrap_or_else(PoisonError::into_inner);
    if b.0.error.is_none() {
        b.0.error = Some(error);
    }
    drop(b);
    gate.stop();
}

/// One replay thread: the events of one recorded thread, each issued when the gate lets it.
fn replay_thread(
    cx: &Cx,
    (dir, pass): (&Path, u32),
    events: Receiver<Item>,
    gate: &Gate,
    backend: &Mutex<Shared>,
    books: &Books,
) {
    let lock = || backend.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = lock().0.enter_thread() {
        return stop_with(books, gate, format!("making the context current: {e:#}"));
    }
    for ((call, ev, read), barrier, bytes) in events {
        if !gate.turn(ev.seq, barrier) {
            return;
        }
        if fields::failed_in_capture(&ev.fields) && cx.recorded_failure != Some(ev.seq) {
            gate.issued(ev.seq, bytes);
            continue; // failed during capture: not reissued (but the recorded GPU failure is)
        }
        if cx.opts.verbose {
            eprintln!("[HRR] #{} {} (thread {})", ev.seq, call.name, ev.thread);
        }
        let ahead = Mutex::new(read);
        let blobs = |id: Option<ObjectId>, expected: Option<u64>| taken(dir, &ahead, id, expected);
        // A stream or event synchronisation is issued once everything recorded before it was,
        // then waited for without the backend: the other threads go on meanwhile, as they did
        // while the program's thread waited.
        let detached = lock().0.detached_wait(&ev);
        let issued_early = matches!(detached, Some(Ok(_)));
        let outcome = match detached {
            None => lock().0.replay(&ev, &blobs, cx.opts),
            Some(Err(e)) => Err(e),
            Some(Ok(wait)) => {
                gate.issued(ev.seq, bytes);
                wait.run().map(|()| Outcome::Done)
            }
        };
        let stop = {
            let mut b = books.lock().unwrap_or_else(PoisonError::into_inner);
            let (report, prog) = &mut *b;
            let st = &mut (&mut **report, &mut **prog);
            account(cx, st, (pass, call, &ev), outcome, &blobs, &mut drop)
        };
        if !issued_early {
            gate.issued(ev.seq, bytes);
        }
        match stop {
            Ok(false) => {}
            Ok(true) => return gate.stop(),
            Err(e) => {
                let e = format!("event #{} {}: {e:#}", ev.seq, call.name);
                return stop_with(books, gate, e);
            }
        }
    }
}

/// Blob `id` of an event: the bytes read ahead when they were (checked against `expected`),
/// else read now.
fn taken(
    dir: &Path,
    ahead: &Mutex<Vec<(ObjectId, BlobBytes)>>,
    id: Option<ObjectId>,
    expected: Option<u64>,
) -> Result<Option<BlobBytes>> {
    let Some(i) = id else { return Ok(None) };
    let mut ahead = ahead.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(at) = ahead.iter().position(|(a, _)| *a == i) else {
        drop(ahead);
        return read_blob(dir, id, expected);
    };
    let (_, bytes) = ahead.swap_remove(at);
    match expected.filter(|&w| w != bytes.len() as u64) {
        None => Ok(Some(bytes)),
        Some(w) => Err(anyhow!(
            "blob {i} of {}: expected {w} bytes, found {}",
            dir.display(),
            bytes.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_wait_for_everything_before_and_the_rest_only_for_barriers() {
        let gate = Gate::default();
        // 1 launch (thread A), 2 free (barrier, thread B), 3 launch (A), 4 launch (B)
        assert!(gate.admit(1, false, 0));
        assert!(gate.admit(2, true, 0));
        assert!(gate.admit(3, false, 0));
        assert!(gate.admit(4, false, 0));
        let ready = |seq, barrier| {
            let g = gate.lock();
            match barrier {
                true => g.pending.first() == Some(&seq),
                false => g.barriers.first().is_none_or(|&b| b > seq),
            }
        };
        assert!(ready(1, false));
        assert!(!ready(2, true), "the barrier waits for launch 1");
        assert!(
            !ready(3, false) && !ready(4, false),
            "launches wait for the barrier"
        );
        gate.issued(1, 0);
        assert!(ready(2, true));
        gate.issued(2, 0);
        assert!(
            ready(3, false) && ready(4, false),
            "then both threads run at once"
        );
        gate.issued(4, 0);
        assert!(ready(3, false));
        gate.stop();
        assert!(!gate.turn(3, false), "a stopped replay ends every wait");
    }

    #[test]
    fn launches_and_copies_run_concurrently_the_rest_is_a_barrier() {
        let call = |name: &str| {
            let schema = hrr_calls::cuda::schema();
            schema
                .calls
                .iter()
                .find(|c| c.name == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name} not in the table"))
        };
        for name in ["cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuMemsetD8_v2"] {
            assert!(!is_barrier(Family::Cuda, &call(name)), "{name}");
        }
        for name in [
            "cuMemAlloc_v2",
            "cuMemFree_v2",
            "cuStreamSynchronize",
            "cuMemcpyDtoH_v2",
            "cuModuleLoadData",
            "cuEventRecord",
        ] {
            assert!(is_barrier(Family::Cuda, &call(name)), "{name}");
        }
        let mut unknown = call("cuLaunchKernel");
        unknown.name = "cuSomethingNew".into();
        assert!(is_barrier(Family::Cuda, &unknown));
    }
}
