//! The generic replay loop, the same for every API: a prescan for the code objects and device
//! ranges the backend needs before the first call (it asks the API's [`Family::classify`]
//! which calls those are: no call name is spelled here), then the events in recorded order into
//! the backend, every recorded device-to-host result compared with what the GPU produces now,
//! and the [`Summary`] filled and rendered (`super::report`).
//!
//! Policy for recorded failures: a call that failed during capture is not reissued (its failure
//! changed nothing replay depends on). A call that succeeded during capture and fails now stops
//! the replay, naming the event; the run is a FAIL.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::blobs::{blob_path, find_code_object};
use hrr_archive::reader::EventReader;
use hrr_archive::schema::decode_fields;
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::{summary, ObjectId};

use super::backend::{base_name, CodeObject, Event, Family, Outcome, Prescan};
use super::check::Tolerance;
use super::fields;
use super::options::Options;
use super::report::{self, Summary};

/// What replay must know before the driver loads.
struct Scan {
    /// Code objects loaded by the capture.
    code: Vec<CodeObject>,
    /// Device address ranges the capture allocated or reserved.
    ranges: Vec<(u64, u64)>,
}

/// One pass over the capture for its code objects and device address ranges.
fn prescan(dir: &Path, family: Family) -> Result<Scan> {
    let mut reader = EventReader::open(&dir.join(EVENTS_FILE))?;
    let schema = reader
        .schema()
        .cloned()
        .ok_or_else(|| anyhow!("events.bin has no schema record"))?;
    let mut code: Vec<CodeObject> = Vec::new();
    let mut ranges = Vec::new();
    for rec in reader.by_ref() {
        let rec = rec?;
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        let Some(kind) = family.classify(base_name(&call.name).0) else {
            continue;
        };
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{}: {e}", rec.header.seq))?;
        if fields::status_not_zero(&fields) {
            continue; // failed (calls without a status, like registrations, count as done)
        }
        match kind {
            Prescan::Alloc(extent) => ranges.push(fields::extent(&fields, extent)),
            Prescan::CodeLoad { as_library } => {
                let Some(id) = fields::code_object(&fields) else {
                    continue;
                };
                if !code
                    .iter()
                    .any(|c| c.id == id && c.as_library == as_library)
                {
                    let (path, _) = find_code_object(dir, &id).ok_or_else(|| {
                        anyhow!(
                            "code object {id} is referenced by event #{} but missing from {}",
                            rec.header.seq,
                            dir.join("code_objects").display()
                        )
                    })?;
                    code.push(CodeObject {
                        id,
                        path,
                        as_library,
                    });
                }
            }
        }
    }
    Ok(Scan { code, ranges })
}

/// Read a recorded blob whole (`None`: nothing was recorded).
fn read_blob(dir: &Path, id: Option<ObjectId>) -> Result<Option<Vec<u8>>> {
    let Some(id) = id else { return Ok(None) };
    let p = blob_path(dir, &id);
    let f = hrr_archive::fsutil::open_read(&p)?;
    let mut v = Vec::new();
    std::io::Read::read_to_end(&mut &f, &mut v)
        .with_context(|| format!("reading {}", p.display()))?;
    Ok(Some(v))
}

/// Replay the process capture in `dir`, the summary written to `out`; returns the exit code
/// (0 only when every check passed).
pub fn run(opts: &Options, dir: &Path, out: &mut dyn Write) -> Result<i32> {
    let sum = summary::summarize(dir)?;
    let schema = sum.schema.clone().ok_or_else(|| {
        anyhow!(
            "{}: events.bin has no schema record; cannot replay",
            dir.display()
        )
    })?;
    let Some(family) = Family::of(&schema.api) else {
        bail!(
            "{}: replay of `{}` archives is not available in this build (CUDA driver and HIP only)",
            dir.display(),
            schema.api
        );
    };
    let load_start = Instant::now();
    let scan = prescan(dir, family)?;
    let mut backend = family.open(opts, &scan.ranges)?;
    backend.preflight(sum.manifest.as_ref().and_then(|m| m.metadata.as_ref()))?;
    backend.preload(&scan.code)?;
    let load_ms = load_start.elapsed().as_secs_f64() * 1e3;

    let mut report = Summary {
        archive: dir.display().to_string(),
        events: sum.events,
        kernels: sum.launches,
        blobs: sum.objects.blobs,
        code_objects: sum.objects.code_objects,
        threads_captured: sum.threads.len() as u64,
        device: backend.device(),
        runtime: backend.runtime(),
        mode: "single-threaded",
        incomplete: (!sum.complete()).then(|| sum.incompleteness().join("; ")),
        load_ms,
        threads_used: 1,
        ..Summary::default()
    };
    let human = !opts.json;
    if human {
        report::write_human_opening(&report, out)?;
    }
    let tol = Tolerance {
        rtol: opts.rtol,
        atol: opts.atol,
    };
    // Byte ranges a scrub overwrote in recorded blobs: not held against D2H results.
    let redacted = hrr_archive::redact::redacted_ranges(dir)
        .with_context(|| format!("reading {}", dir.join("redactions.json").display()))?;
    report.redacted_blobs = redacted.len();
    if human {
        report::write_scrub_note(&report, out)?;
        out.flush()?;
    }
    let progress = !opts.no_progress && !opts.json && std::io::stderr().is_terminal();
    let blobs = |id: Option<ObjectId>| read_blob(dir, id);
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
            if fields::failed_in_capture(&fields) {
                continue; // failed during capture: not reissued
            }
            let (name, per_thread) = base_name(&call.name);
            let ev = Event {
                seq: rec.header.seq,
                id: rec.header.kind,
                name,
                per_thread,
                fields,
            };
            if opts.verbose {
                eprintln!("[HRR] #{} {}", ev.seq, call.name);
            }
            match backend.replay(&ev, &blobs, opts) {
                Ok(Outcome::Launched) => report.kernels_launched += 1,
                Ok(Outcome::GraphLaunched) => report.graphs_launched += 1,
                Ok(Outcome::Filtered) => report.kernels_filtered += 1,
                Ok(Outcome::Skipped(why)) => {
                    if report.skipped_calls.len() < 20 {
                        report
                            .skipped_calls
                            .push(format!("#{} {}: {why}", ev.seq, call.name));
                    }
                }
                Ok(Outcome::D2h { got, expected }) => {
                    let want = blobs(expected)?;
                    let checks = &mut report.checks;
                    match (want.as_deref(), expected.and_then(|id| redacted.get(&id))) {
                        (Some(want), Some(ranges)) => {
                            checks.compare_redacted(ev.seq, &call.name, &got, want, ranges, tol)
                        }
                        (want, _) => checks.compare(ev.seq, &call.name, &got, want, tol),
                    }
                }
                Ok(Outcome::Done | Outcome::Ignored) => {}
                Err(e) => {
                    report.error = Some(format!("event #{} {}: {e:#}", ev.seq, call.name));
                    break 'loops;
                }
            }
            if progress && last_progress.elapsed().as_secs() >= 2 {
                eprintln!("[HRR] progress: {n}/{} events", sum.events);
                last_progress = Instant::now();
            }
        }
    }
    if report.error.is_none() {
        if let Err(e) = backend.finish() {
            report.error = Some(format!("final synchronisation: {e:#}"));
        }
    }
    report.execute_ms = exec_start.elapsed().as_secs_f64() * 1e3;
    report.placement = backend.placement();
    if opts.json {
        report::write_json(&report, out)?;
    } else {
        report::write_human_closing(&report, out)?;
    }
    out.flush()?;
    Ok(if report.pass() { 0 } else { 1 })
}
