//! # hrr-archive
//!
//! The hrr archive format and nothing else: directory layout, manifests, the `events.bin`
//! framing and its self-describing schema, the content-addressed blob and code-object stores, a
//! streaming reader that recovers crashed captures, a durable writer, repair and the root index.
//! No GPU, no CLI, no printing. `FORMAT.md` beside this crate is the normative specification.
//! With the default feature `pack`: the packed form (`.hrr.tar.zst`, [`pack`]); always: verify
//! ([`verify`]) and the redaction records a scrub leaves ([`redact`]).
//!
//! ```
//! use hrr_archive::{schema::*, writer::ProcessWriter, reader::EventReader};
//! let root = tempfile::tempdir().unwrap();
//! let schema = Schema::new("cuda-driver", 13000, vec![CallDef {
//!     id: 1, name: "cuInit".into(), class: CallClass::Other,
//!     fields: vec![FieldDef { name: "result".into(), ty: FieldType::Result },
//!                  FieldDef { name: "flags".into(), ty: FieldType::U32 }],
//! }]);
//! let mut w = ProcessWriter::create(root.path(), 42, 1, &schema).unwrap();
//! let mut p = PayloadBuilder::new();
//! p.i32(0).u32(0);
//! w.events().append(1, 7, p.as_bytes()).unwrap();
//! let m = w.finish().unwrap();
//! assert!(m.status.complete);
//! let mut r = EventReader::open(&root.path().join("pid-42/events.bin")).unwrap();
//! let ev = r.next().unwrap().unwrap();
//! let call = r.schema().unwrap().call(ev.header.kind).unwrap();
//! assert_eq!(call.name, "cuInit");
//! assert!(r.next().is_none() && r.recovery().complete());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod blobs;
pub mod digest;
pub mod error;
pub mod event_sink;
pub mod framing;
pub mod fsutil;
#[doc(hidden)]
pub mod fuzz;
pub mod journal;
pub mod layout;
pub mod lock;
pub mod manifest;
#[cfg(feature = "pack")]
pub mod pack;
pub mod progress;
pub mod reader;
pub mod redact;
pub mod repair;
pub mod schema;
pub mod stream;
pub mod summary;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod verify;
pub mod writer;

pub use blobs::{CodeKind, ObjectId};
pub use error::{Error, Result};
pub use framing::FORMAT_VERSION;

/// The cores this process may use (`std::thread::available_parallelism`, 1 when unknown), asked
/// once: the standard library reads the cgroup's CPU quota from three files on every call,
/// which costs a capture's hot paths (each blob hashed, each copy fingerprinted) tens of
/// microseconds a call.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Threads the pool of [`map_chunks`] has at most.
const POOL_MAX: usize = 16;

/// The threads [`map_chunks`] and [`blobs::parallel_hash`] run on (`hrr-chunks-N`, as many as [`cores`] up to
/// [`POOL_MAX`]), started at its first use in this process and kept, instead of threads
/// started for each large buffer (H100, `scripts/samples-bench.sh`, the same run: simpleStreams'
/// non-streamed loop 0.537 of plain against 0.502, simpleMultiCopy's serialized 0.464 against
/// 0.418). `None` where they cannot start, and in a
/// fork child of a process that started them (its copy of the pool has no threads) or was
/// starting them when it forked (its copy of the pool's lock would wait forever for a starter
/// the child does not have: [`may_start`]).
pub(crate) fn pool() -> Option<&'static rayon::ThreadPool> {
    if let Some(started) = POOL.get() {
        return ours(started);
    }
    let me = std::process::id();
    if !may_start(STARTING.load(std::sync::atomic::Ordering::Acquire), me) {
        return None;
    }
    STARTING.store(me, std::sync::atomic::Ordering::Release);
    let started = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores().min(POOL_MAX))
            .thread_name(|i| format!("hrr-chunks-{i}"))
            .build()
            .ok()
            .map(|p| (std::process::id(), p))
    });
    ours(started)
}

/// Start the pool's threads ([`pool`]) now, if they are not running: a process that will hash
/// or copy large buffers calls this from a thread of its own early on, so that none of its
/// callers waits for the threads to start (up to 16 thread starts, hundreds of microseconds,
/// where a module load or a copy first needs them). Returns whether the pool runs.
pub fn start_pool() -> bool {
    pool().is_some()
}

/// The process that began starting the pool (0: none yet).
static STARTING: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether process `me` may start the pool, or wait for another of its threads to: not when
/// another process (`starting`, 0: none) began starting it, i.e. `me` is a fork child of a
/// process that forked while its pool was starting (capture starts it on a thread of its own
/// when recording opens, so a program forking then would leave its child waiting).
fn may_start(starting: u32, me: u32) -> bool {
    starting == 0 || starting == me
}

/// The pool of [`pool`], with the pid of the process that started it.
static POOL: std::sync::OnceLock<Option<(u32, rayon::ThreadPool)>> = std::sync::OnceLock::new();

/// The pool `started`, where this process started it (not in a fork child).
fn ours(started: &Option<(u32, rayon::ThreadPool)>) -> Option<&rayon::ThreadPool> {
    let (pid, pool) = started.as_ref()?;
    (*pid == std::process::id()).then_some(pool)
}

/// `f()` on a thread of the hashing pool (the threads of [`map_chunks`]) when one is free,
/// where this process has the pool running already: returns whether it was handed over (else
/// `f` is dropped unrun). A panic in `f` stays on the pool's side.
pub fn later(f: impl FnOnce() + Send + 'static) -> bool {
    let Some(pool) = POOL.get().and_then(ours) else {
        return false;
    };
    pool.spawn(move || {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    });
    true
}

/// Threads of the hashing pool (those of [`map_chunks`]) where this process has it running (0:
/// none).
pub fn pool_threads() -> usize {
    POOL.get()
        .and_then(ours)
        .map_or(0, |p| p.current_num_threads())
}

/// `f` of each `piece`-long range of `0..n` (the last may be shorter), on the pool's threads
/// ([`pool`]), else one after another on the calling thread; all done when it returns.
pub fn on_pool_pieces(n: usize, piece: usize, f: impl Fn(std::ops::Range<usize>) + Sync + Send) {
    use rayon::prelude::*;
    let piece = piece.max(1);
    let range = |i: usize| i * piece..((i + 1) * piece).min(n);
    match pool() {
        Some(pool) => pool.install(|| {
            (0..n.div_ceil(piece))
                .into_par_iter()
                .for_each(|i| f(range(i)))
        }),
        None => (0..n.div_ceil(piece)).for_each(|i| f(range(i))),
    }
}

/// `f` of each `chunk`-sized piece of `bytes` (the last may be shorter), in order: on the
/// calling thread when `threads` is below 2, else on the pool's threads ([`pool`]), or, where
/// there is none, on up to `threads` threads of their own (a run of consecutive pieces each),
/// or on the calling thread when those cannot start (a process limit: nothing panics).
pub fn map_chunks<T: Send + Clone + Default>(
    bytes: &[u8],
    chunk: usize,
    threads: usize,
    f: impl Fn(&[u8]) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    let n = bytes.len().div_ceil(chunk);
    if threads < 2 || n < 2 {
        return bytes.chunks(chunk).map(&f).collect();
    }
    if let Some(pool) = pool() {
        return pool.install(|| bytes.par_chunks(chunk).map(&f).collect());
    }
    let per = n.div_ceil(threads);
    let mut out = vec![T::default(); n];
    let f = &f;
    let all_started = std::thread::scope(|s| {
        out.chunks_mut(per)
            .zip(bytes.chunks(per * chunk))
            .all(|(outs, ins)| {
                let work = move || {
                    for (o, c) in outs.iter_mut().zip(ins.chunks(chunk)) {
                        *o = f(c);
                    }
                };
                std::thread::Builder::new().spawn_scoped(s, work).is_ok()
            })
    });
    if !all_started {
        return bytes.chunks(chunk).map(f).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::map_chunks;

    fn sum(c: &[u8]) -> u64 {
        c.iter()
            .enumerate()
            .map(|(i, &b)| (i as u64 + 1) * b as u64)
            .sum()
    }

    #[test]
    fn chunks_mapped_on_the_pool_come_back_in_order_from_several_callers_at_once() {
        let bytes: Vec<u8> = (0..(1 << 20) + 777).map(|i| (i * 31 % 251) as u8).collect();
        let serial: Vec<u64> = bytes.chunks(4096).map(sum).collect();
        assert_eq!(map_chunks(&bytes, 4096, 1, sum), serial);
        std::thread::scope(|s| {
            let callers: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20).all(|_| map_chunks(&bytes, 4096, 8, sum) == serial)))
                .collect();
            for c in callers {
                assert!(c.join().unwrap());
            }
        });
        assert_eq!(
            map_chunks(&bytes[..100], 4096, 8, sum),
            vec![sum(&bytes[..100])]
        );
        assert!(map_chunks(&[], 4096, 8, sum).is_empty());
    }

    #[test]
    fn a_fork_child_of_a_process_starting_the_pool_does_not_wait_for_it() {
        assert!(super::may_start(0, 42), "nobody started it");
        assert!(super::may_start(42, 42), "this process is starting it");
        assert!(
            !super::may_start(41, 42),
            "the parent was starting it when it forked"
        );
    }
}
