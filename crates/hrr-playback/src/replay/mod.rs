//! The replay engine: streams a process capture's events in recorded order into the backend of
//! its API, compares every recorded device-to-host result with what the GPU produces now, and
//! prints the summary block of the user guide.
//!
//! Policy for recorded failures: a call that failed during capture is not reissued (its failure
//! changed nothing replay depends on). A call that succeeded during capture and fails now stops
//! the replay, naming the event; the run is a FAIL.

mod check;
mod cuda;
mod driver;
mod fields;
mod hip;
mod hip_runtime;
mod memory;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::blobs::{blob_path, find_code_object};
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{decode_fields, field, Value};
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::{summary, ObjectId};

use crate::cli::ReplayOptions;
use check::{Checks, Tolerance};

/// One decoded event handed to a backend.
pub struct Event<'a> {
    /// Sequence number.
    pub seq: u64,
    /// Call name without ABI suffixes (`cuMemcpyHtoDAsync_v2_ptsz` → `cuMemcpyHtoDAsync`).
    pub name: &'a str,
    /// Per-thread default stream semantics (`_ptsz`/`_ptds`).
    pub per_thread: bool,
    /// Decoded fields.
    pub fields: Vec<(&'a str, Value)>,
}

/// What replaying one event did.
pub enum Outcome {
    /// Reissued.
    Done,
    /// A kernel was launched.
    Launched,
    /// A CUDA graph was launched.
    GraphLaunched,
    /// Filtered out by `--kernel-filter`.
    Filtered,
    /// Not reissued, with the reason.
    Skipped(String),
    /// Nothing to do for this call.
    Ignored,
    /// A device-to-host copy: the bytes read now, and the recorded result.
    D2h {
        /// Bytes the GPU produced now.
        got: Vec<u8>,
        /// The recorded blob.
        expected: Option<ObjectId>,
    },
}

/// A GPU API backend.
pub trait Backend {
    /// Device description for the summary.
    fn device(&self) -> String;
    /// Runtime library path for the summary.
    fn runtime(&self) -> String;
    /// Refuse archives from another architecture or a newer driver.
    fn preflight(&self, metadata: Option<&serde_json::Value>) -> Result<()>;
    /// Load code objects before the first call: (id, file, loaded as a library).
    fn preload(&mut self, code: &[(ObjectId, PathBuf, bool)]) -> Result<()>;
    /// Reissue one event.
    fn replay(
        &mut self,
        ev: &Event,
        blobs: &dyn Fn(Option<ObjectId>) -> Result<Option<Vec<u8>>>,
        opts: &ReplayOptions,
    ) -> Result<Outcome>;
    /// Wait for all work.
    fn finish(&mut self) -> Result<()>;
    /// Allocations placed at their recorded address, and translated.
    fn placement(&self) -> Placement;
}

/// How recorded allocations landed.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Placed at their recorded address.
    pub placed: u64,
    /// Placed elsewhere, pointers translated.
    pub translated: u64,
    /// Why the first refused placement was refused.
    pub first_refusal: Option<String>,
}

/// Strip `_ptsz`/`_ptds` and `_vN` suffixes.
pub fn base_name(name: &str) -> (&str, bool) {
    let (name, per_thread) = match name
        .strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
    {
        Some(n) => (n, true),
        None => (name, false),
    };
    let base = match name.rfind("_v") {
        Some(i) if name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < name.len() => {
            &name[..i]
        }
        _ => name,
    };
    (base, per_thread)
}

/// What replay must know before the driver loads.
struct Prescan {
    /// Code objects loaded by the capture: (id, file, loaded as a library).
    code: Vec<(ObjectId, PathBuf, bool)>,
    /// Device address ranges the capture allocated or reserved.
    ranges: Vec<(u64, u64)>,
}

/// One pass over the capture for its code objects and device address ranges.
fn prescan(dir: &Path) -> Result<Prescan> {
    let mut reader = EventReader::open(&dir.join(EVENTS_FILE))?;
    let schema = reader
        .schema()
        .cloned()
        .ok_or_else(|| anyhow!("events.bin has no schema record"))?;
    let mut out: Vec<(ObjectId, PathBuf, bool)> = Vec::new();
    let mut ranges = Vec::new();
    for rec in reader.by_ref() {
        let rec = rec?;
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        let (name, _) = base_name(&call.name);
        let as_library = name.starts_with("cuLibraryLoad");
        let is_load = as_library
            || name.starts_with("cuModuleLoad")
            || name.starts_with("hipModuleLoad")
            || name == "__hipRegisterFatBinary";
        let is_alloc = matches!(
            name,
            "cuMemAlloc"
                | "cuMemAllocAsync"
                | "cuMemAllocFromPoolAsync"
                | "cuMemAllocPitch"
                | "cuMemAddressReserve"
                | "hipMalloc"
                | "hipExtMallocWithFlags"
                | "hipMallocAsync"
                | "hipMallocPitch"
                | "hipMemAddressReserve"
        );
        if !is_load && !is_alloc {
            continue;
        }
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{}: {e}", rec.header.seq))?;
        if field(&fields, "result").is_some_and(|r| *r != Value::I64(0)) {
            continue; // failed (calls without a status, like registrations, count as done)
        }
        if is_alloc {
            let get = |n: &str| field(&fields, n).and_then(Value::as_u64).unwrap_or(0);
            ranges.push(match name {
                "cuMemAddressReserve" | "hipMemAddressReserve" => (get("ptr"), get("size")),
                "cuMemAllocPitch" | "hipMallocPitch" => {
                    (get("dptr"), get("pitch").saturating_mul(get("height")))
                }
                _ => (get("dptr"), get("bytesize")),
            });
            continue;
        }
        if let Some(Value::Code(Some(id))) = field(&fields, "code") {
            if !out.iter().any(|(i, _, l)| i == id && *l == as_library) {
                let (path, _) = find_code_object(dir, id).ok_or_else(|| {
                    anyhow!(
                        "code object {id} is referenced by event #{} but missing from {}",
                        rec.header.seq,
                        dir.join(hrr_archive::layout::CODE_OBJECTS_DIR).display()
                    )
                })?;
                out.push((*id, path, as_library));
            }
        }
    }
    Ok(Prescan { code: out, ranges })
}

/// Replay the process capture in `dir`; returns the exit code (0 only when every check passed).
pub fn run(opts: &ReplayOptions, dir: &Path) -> Result<i32> {
    let sum = summary::summarize(dir)?;
    let schema = sum.schema.clone().ok_or_else(|| {
        anyhow!(
            "{}: events.bin has no schema record; cannot replay",
            dir.display()
        )
    })?;
    if schema.api != "cuda-driver" && schema.api != "hip" {
        bail!(
            "{}: replay of `{}` archives is not available in this build (CUDA driver and HIP only)",
            dir.display(),
            schema.api
        );
    }
    let load_start = Instant::now();
    let scan = prescan(dir)?;
    let mut backend: Box<dyn Backend> = if schema.api == "hip" {
        Box::new(hip::Hip::open(opts, &scan.ranges)?)
    } else {
        Box::new(cuda::Cuda::open(opts, &scan.ranges)?)
    };
    backend.preflight(sum.manifest.as_ref().and_then(|m| m.metadata.as_ref()))?;
    backend.preload(&scan.code)?;
    let load_ms = load_start.elapsed().as_secs_f64() * 1e3;

    let human = !opts.json;
    if human {
        println!(
            "[HRR] {:<16}: {} events, {} kernels, {} blobs, {} code objects",
            "Archive", sum.events, sum.launches, sum.objects.blobs, sum.objects.code_objects
        );
        println!("[HRR] {:<16}: {} captured", "Threads", sum.threads.len());
        println!("[HRR] {:<16}: {}", "Device", backend.device());
        println!("[HRR] {:<16}: {}", "Runtime", backend.runtime());
        println!("[HRR] {:<16}: single-threaded", "Mode");
        if !sum.complete() {
            println!(
                "[HRR] Note: capture incomplete ({}); replaying the recovered events",
                sum.incompleteness().join("; ")
            );
        }
    }
    let tol = Tolerance {
        rtol: opts.rtol,
        atol: opts.atol,
    };
    let mut checks = Checks::default();
    // Byte ranges a scrub overwrote in recorded blobs: not held against D2H results.
    let redacted = hrr_archive::redact::redacted_ranges(dir)
        .with_context(|| format!("reading {}", dir.join("redactions.json").display()))?;
    if human && !redacted.is_empty() {
        println!(
            "[HRR] Note: scrubbed archive: {} blob(s) have redacted ranges; D2H results differing only there count as skipped",
            redacted.len()
        );
    }
    let mut launched = 0u64;
    let mut graphs = 0u64;
    let mut filtered = 0u64;
    let mut skipped: Vec<String> = Vec::new();
    let mut failure: Option<String> = None;
    let progress = !opts.no_progress && !opts.json && std::io::stderr().is_terminal();
    let blobs = |id: Option<ObjectId>| -> Result<Option<Vec<u8>>> {
        match id {
            None => Ok(None),
            Some(id) => {
                let p = blob_path(dir, &id);
                let f = hrr_archive::fsutil::open_read(&p)?;
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut &f, &mut v)
                    .with_context(|| format!("reading {}", p.display()))?;
                Ok(Some(v))
            }
        }
    };
    let exec_start = Instant::now();
    let mut last_progress = Instant::now();
    'loops: for _ in 0..opts.loop_count {
        let reader = EventReader::open(&dir.join(EVENTS_FILE))?;
        let mut n = 0u64;
        for rec in reader {
            let rec = rec?;
            n += 1;
            let Some(call) = schema.call(rec.header.kind) else {
                continue;
            };
            let fields = decode_fields(call, &rec.payload)
                .map_err(|e| anyhow!("event #{} ({}): {e}", rec.header.seq, call.name))?;
            if let Some(Value::I64(r)) = field(&fields, "result") {
                if *r != 0 {
                    continue; // failed during capture: not reissued
                }
            }
            let (name, per_thread) = base_name(&call.name);
            let ev = Event {
                seq: rec.header.seq,
                name,
                per_thread,
                fields,
            };
            if opts.verbose {
                eprintln!("[HRR] #{} {}", ev.seq, call.name);
            }
            match backend.replay(&ev, &blobs, opts) {
                Ok(Outcome::Launched) => launched += 1,
                Ok(Outcome::GraphLaunched) => graphs += 1,
                Ok(Outcome::Filtered) => filtered += 1,
                Ok(Outcome::Skipped(why)) => {
                    if skipped.len() < 20 {
                        skipped.push(format!("#{} {}: {why}", ev.seq, call.name));
                    }
                }
                Ok(Outcome::D2h { got, expected }) => {
                    let want = blobs(expected)?;
                    match (want.as_deref(), expected.and_then(|id| redacted.get(&id))) {
                        (Some(want), Some(ranges)) => {
                            checks.compare_redacted(ev.seq, &call.name, &got, want, ranges, tol)
                        }
                        (want, _) => checks.compare(ev.seq, &call.name, &got, want, tol),
                    }
                }
                Ok(Outcome::Done | Outcome::Ignored) => {}
                Err(e) => {
                    failure = Some(format!("event #{} {}: {e:#}", ev.seq, call.name));
                    break 'loops;
                }
            }
            if progress && last_progress.elapsed().as_secs() >= 2 {
                eprintln!("[HRR] progress: {n}/{} events", sum.events);
                last_progress = Instant::now();
            }
        }
    }
    if failure.is_none() {
        if let Err(e) = backend.finish() {
            failure = Some(format!("final synchronisation: {e:#}"));
        }
    }
    let exec_ms = exec_start.elapsed().as_secs_f64() * 1e3;
    let pass = failure.is_none() && checks.fail == 0;
    let Placement {
        placed,
        translated,
        first_refusal,
    } = backend.placement();
    if opts.json {
        let v = serde_json::json!({
            "archive": dir.display().to_string(),
            "events": sum.events, "kernels": sum.launches, "blobs": sum.objects.blobs,
            "code_objects": sum.objects.code_objects, "threads_captured": sum.threads.len(),
            "device": backend.device(), "runtime": backend.runtime(), "mode": "single-threaded",
            "wall_time_ms": load_ms + exec_ms, "load_ms": load_ms, "execute_ms": exec_ms,
            "threads_used": 1, "kernels_launched": launched, "kernels_filtered": filtered,
            "graphs_launched": graphs,
            "d2h_checks": {"pass": checks.exact + checks.within_tol, "exact": checks.exact,
                           "within_tol": checks.within_tol, "fail": checks.fail, "skipped": checks.skipped,
                           "skipped_redacted": checks.redacted},
            "mismatches": checks.mismatches, "skipped_calls": skipped,
            "allocations": {"placed": placed, "translated": translated, "first_refusal": first_refusal},
            "error": failure, "result": if pass { "PASS" } else { "FAIL" },
        });
        println!("{v}");
    } else {
        for s in &skipped {
            println!("[HRR] Skipped {s}");
        }
        for m in &checks.mismatches {
            println!("[HRR] Mismatch {m}");
        }
        if let Some(f) = &failure {
            println!("[HRR] Error at {f}");
        }
        println!("[HRR] -- Replay summary ------------------------------");
        println!(
            "[HRR] {:<16}: {:.1} ms (load {:.1} ms, execute {:.1} ms)",
            "Wall time",
            load_ms + exec_ms,
            load_ms,
            exec_ms
        );
        println!("[HRR] {:<16}: 1", "Threads used");
        println!("[HRR] {:<16}: {launched}", "Kernels launched");
        println!("[HRR] {:<16}: {graphs}", "Graphs launched");
        println!(
            "[HRR] {:<16}: {} pass ({} exact, {} within tol), {} fail, {} skipped",
            "D2H checks",
            checks.exact + checks.within_tol,
            checks.exact,
            checks.within_tol,
            checks.fail,
            checks.skipped
        );
        if translated > 0 {
            println!("[HRR] Placement       : {placed} allocations at their recorded address, {translated} translated");
            if let Some(why) = &first_refusal {
                println!("[HRR] First refusal   : {why}");
            }
        }
        println!("[HRR] {}", if pass { "PASS" } else { "FAIL" });
    }
    Ok(if pass { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn abi_suffixes_are_stripped() {
        assert_eq!(
            base_name("cuMemcpyHtoDAsync_v2_ptsz"),
            ("cuMemcpyHtoDAsync", true)
        );
        assert_eq!(base_name("cuMemAlloc_v2"), ("cuMemAlloc", false));
        assert_eq!(base_name("cuLaunchKernel"), ("cuLaunchKernel", false));
        assert_eq!(base_name("cuMemcpy_ptds"), ("cuMemcpy", true));
    }
}
