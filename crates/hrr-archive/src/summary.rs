//! One streaming pass over a process capture that answers `--info`: calls and kernels by name,
//! threads, objects, bytes, completeness and why. Memory is bounded by the number of distinct
//! names and threads, not by the number of events.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use crate::blobs::{count_objects, ObjectCounts};
use crate::error::Result;
use crate::layout::{self, EVENTS_FILE};
use crate::manifest::{self, ProcessManifest};
use crate::reader::{EventReader, Recovery};
use crate::schema::{field, CallClass, Schema, Value};

/// Everything `--info` reports about one process capture.
#[derive(Debug, Clone)]
pub struct ProcessSummary {
    /// The manifest, when it could be read.
    pub manifest: Option<ProcessManifest>,
    /// Why the manifest could not be read.
    pub manifest_error: Option<String>,
    /// The schema of events.bin.
    pub schema: Option<Schema>,
    /// Events (records after the schema, marks included).
    pub events: u64,
    /// Event counts by call name (unknown types as `type-0x....`).
    pub calls: BTreeMap<String, u64>,
    /// Launch counts by kernel name.
    pub kernels: BTreeMap<String, u64>,
    /// Kernel launches.
    pub launches: u64,
    /// Graph launches.
    pub graph_launches: u64,
    /// Calls whose recorded result was not success.
    pub failed_calls: u64,
    /// Device-to-host copies with a recorded result (what replay can check).
    pub d2h_copies: u64,
    /// Distinct thread ids in first-seen order.
    pub threads: Vec<u64>,
    /// Blob and code-object counts and bytes.
    pub objects: ObjectCounts,
    /// Size of events.bin.
    pub events_bytes: u64,
    /// First and last event timestamps.
    pub time_span_ns: Option<(u64, u64)>,
    /// End-of-stream findings.
    pub recovery: Recovery,
    /// Whether an `active` marker is present (capture running or killed).
    pub active_marker: bool,
    /// Payloads that did not match their schema entry.
    pub undecodable: u64,
    /// The devices the capture opened contexts on (the `device` of successful calls that
    /// return a `ctx` from a `device`: a primary context retained, a context created),
    /// ascending.
    pub context_devices: Vec<i64>,
}

impl ProcessSummary {
    /// Complete: clean trailer, no writer marks, nothing dropped.
    pub fn complete(&self) -> bool {
        self.recovery.complete()
    }

    /// Reasons the capture is not complete.
    pub fn incompleteness(&self) -> Vec<String> {
        self.recovery.incompleteness()
    }
}

/// A hasher for the u64 ids of a summary (thread ids): one multiply, where the default SipHash
/// was most of `--info`'s time with hundreds of thousands of threads. Ids come from the archive,
/// so a crafted set could collide; that costs time (bounded by the events), never correctness.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, id: u64) {
        // Fibonacci hashing: spreads consecutive ids over the high bits hashbrown uses.
        self.0 = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 ^= self.0 >> 29;
    }
}

/// Summarise the capture in `dir` in one pass over events.bin. A capture holding a symbolic
/// link (at `events.bin`, `manifest.json`, `blobs/`, `code_objects/`, ...) is refused
/// ([`layout::check_no_links`]). Time is linear in the events (threads are tracked in a hash
/// set).
pub fn summarize(dir: &Path) -> Result<ProcessSummary> {
    layout::check_no_links(dir)?;
    let events_path = dir.join(EVENTS_FILE);
    let mut reader = EventReader::open(&events_path)?;
    let (manifest, manifest_error) = match manifest::read_process_manifest(dir) {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let schema = reader.schema().cloned();
    let mut s = ProcessSummary {
        manifest,
        manifest_error,
        schema: schema.clone(),
        events: 0,
        calls: BTreeMap::new(),
        kernels: BTreeMap::new(),
        launches: 0,
        graph_launches: 0,
        failed_calls: 0,
        d2h_copies: 0,
        threads: Vec::new(),
        objects: count_objects(dir)?,
        events_bytes: reader.file_len(),
        time_span_ns: None,
        recovery: Recovery::default(),
        active_marker: layout::has_active_marker(dir),
        undecodable: 0,
        context_devices: Vec::new(),
    };
    let mut seen_threads: HashSet<u64, BuildHasherDefault<IdHasher>> = HashSet::default();
    // Counted by record type (no name allocated per event), named at the end.
    let mut by_type: HashMap<u16, (String, u64)> = HashMap::new();
    // whether a record type opens a context, asked once per type
    let mut opens: HashMap<u16, bool> = HashMap::new();
    for ev in reader.decoded(schema.as_ref()) {
        let ev = ev?;
        let h = ev.header;
        if seen_threads.insert(h.thread_id) {
            s.threads.push(h.thread_id);
        }
        s.time_span_ns = Some(match s.time_span_ns {
            None => (h.timestamp_ns, h.timestamp_ns),
            Some((a, b)) => (a.min(h.timestamp_ns), b.max(h.timestamp_ns)),
        });
        by_type
            .entry(h.kind)
            .or_insert_with(|| (ev.name().into_owned(), 0))
            .1 += 1;
        let Some(call) = ev.call else {
            continue;
        };
        if ev.failed() {
            s.failed_calls += 1;
        }
        match call.class {
            CallClass::Launch => {
                s.launches += 1;
                let kernel = match ev.fields().expect("the call is known") {
                    Ok(f) => match field(&f, "kernel") {
                        Some(Value::Str(k)) if !k.is_empty() => k.clone(),
                        _ => "<unnamed>".into(),
                    },
                    Err(_) => {
                        s.undecodable += 1;
                        "<undecodable>".into()
                    }
                };
                *s.kernels.entry(kernel).or_default() += 1;
            }
            CallClass::GraphLaunch => s.graph_launches += 1,
            _ if !ev.failed() && *opens.entry(h.kind).or_insert_with(|| opens_a_context(call)) => {
                if let Ok(f) = ev.fields().expect("the call is known") {
                    if let (Some(Value::Handle(_)), Some(&Value::I64(d))) =
                        (field(&f, "ctx"), field(&f, "device"))
                    {
                        if let Err(at) = s.context_devices.binary_search(&d) {
                            s.context_devices.insert(at, d);
                        }
                    }
                }
            }
            CallClass::D2h => {
                // Only copies that left a result to check: a generic copy (`cuMemcpy`,
                // `hipMemcpy`) is classed D2H but may have gone another way, or failed.
                let checked = match ev.fields().expect("the call is known") {
                    Ok(f) => !matches!(field(&f, "d2h_blob"), Some(Value::Blob(None))),
                    Err(_) => true,
                };
                s.d2h_copies += checked as u64;
            }
            _ => {}
        }
    }
    for (name, n) in by_type.into_values() {
        *s.calls.entry(name).or_default() += n;
    }
    s.recovery = reader.recovery().clone();
    s.events = s.recovery.records;
    Ok(s)
}

/// Does `call` return a context opened on a device (its fields hold `ctx` and `device`: a
/// primary context retained, a context created)?
fn opens_a_context(call: &crate::schema::CallDef) -> bool {
    let has = |n: &str| call.fields.iter().any(|f| f.name == n);
    has("ctx") && has("device")
}
