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

/// `f` of each `chunk`-sized piece of `bytes` (the last may be shorter), in order, on up to
/// `threads` threads of their own (a run of consecutive pieces each); on the calling thread
/// when `threads` is below 2, or when a thread cannot start (a process limit: nothing panics).
pub fn map_chunks<T: Send + Clone + Default>(
    bytes: &[u8],
    chunk: usize,
    threads: usize,
    f: impl Fn(&[u8]) -> T + Sync,
) -> Vec<T> {
    let n = bytes.len().div_ceil(chunk);
    if threads < 2 || n < 2 {
        return bytes.chunks(chunk).map(&f).collect();
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
