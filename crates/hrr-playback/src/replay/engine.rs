//! The generic replay loop, the same for every API: the prescan (`super::prescan`: code
//! objects, device ranges and devices the backend needs before the first call), then the
//! events in recorded order into the backend, every recorded device-to-host result compared
//! with what the GPU produces now, and the [`Summary`] filled and rendered (`super::report`).
//!
//! Policy for recorded failures: a call that failed during capture is not reissued (its failure
//! changed nothing replay depends on) — unless it failed with a GPU fault (an illegal address
//! reported by a synchronisation, say): then it is reissued, and failing the same way at the same
//! event is `REPRODUCED`. A call that succeeded during capture and fails now stops the replay,
//! naming the event: `FAULT` when the GPU failed, `HANG` when the watchdog gave up, `ERROR`
//! otherwise (`super::verdict`). On a `FAULT`, unless `--no-localize`, the replay is rerun with
//! `--sync-after-launch` in a fresh process to name the launch behind it (`super::fault`).

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::digest::ResultDigest;
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{decode_fields, CallDef, Value};
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::{summary, ObjectId};
use hrr_calls::shapes::Launch;

use super::backend::{base_name, table_facts, Event, Family, Outcome};
use super::batch::{self};
use super::blob_bytes::{self, BlobBytes, Preloaded};
use super::check::{mask, Tolerance};
use super::fault;
use super::fields;
use super::host_ranges::HostRanges;
use super::options::Options;
use super::prescan::{has_launch_shape, passed_through_writes, prescan, H2D_BLOB};
use super::recheck::{self, Failed, Kept};
use super::report::{self, Summary};
use super::verdict::{self, Stop, Verdict};

/// The pseudo-call that checks what an allocation held when the program freed it (capture's
/// `freecheck`), counted apart on the D2H checks line.
const FREE_CHECK: &str = "hrrFreeCheck";

/// Batches of decoded events the reading thread may be ahead of the replaying one.
pub(super) const DECODE_AHEAD: usize = 4;

/// Events a batch.
const DECODE_BATCH: usize = 1024;
/// Blob bytes a batch may hold read ahead (a batch holding more is handed over at once): at
/// most about (DECODE_AHEAD + 2) × this in memory, besides the largest blob mapped.
const READ_AHEAD_BYTES: u64 = 64 << 20;
/// The largest blob read (mapped, its pages read in) ahead.
const MAP_AHEAD_MAX: u64 = 1 << 30;

/// What the decoding thread reads: the archive's folder, its events file, the late sources
/// ([`Scan::late_sources`]), the prepared runs of launches (first and last event) and the
/// sources mapped before the clock.
pub(super) type DecodeFrom<'a> = (
    &'a Path,
    &'a Path,
    &'a HashMap<u64, ObjectId>,
    &'a [(u64, u64)],
    &'a Preloaded,
);

/// A decoded event, its call, and the blobs it names, read ahead.
pub(super) type Decoded<'s> = (&'s CallDef, Event<'s>, Vec<(ObjectId, BlobBytes)>);

/// The blobs an event names (its H2D source and D2H result), read or mapped (up to
/// [`MAP_AHEAD_MAX`] each): what is not read here (too large, unreadable) is read when replay
/// asks for it, and errors are reported then.
fn read_ahead(dir: &Path, ev: &Event, pre: &Preloaded) -> Vec<(ObjectId, BlobBytes)> {
    let mut out = Vec::new();
    for (name, v) in &ev.fields {
        let (true, Value::Blob(Some(id))) = (name.ends_with("_blob"), v) else {
            continue;
        };
        if let Some(bytes) = pre.get(id) {
            out.push((*id, bytes));
            continue;
        }
        let path = hrr_archive::blobs::blob_path(dir, id);
        if std::fs::symlink_metadata(&path).map_or(true, |m| m.len() > MAP_AHEAD_MAX) {
            continue;
        }
        if let Ok(bytes) = blob_bytes::load(dir, id, None) {
            out.push((*id, bytes));
        }
    }
    out
}

/// The fields of an async H2D copy whose source was recorded after it (`id`), with that source.
fn with_late_source<'s>(
    mut fields: Vec<(&'s str, Value)>,
    id: Option<&ObjectId>,
) -> Vec<(&'s str, Value)> {
    if let Some(id) = id {
        for (name, v) in fields.iter_mut() {
            // the copy's source field, as the CopyH2d and CopyAny shapes name it
            if *name == H2D_BLOB && matches!(v, Value::Blob(None)) {
                *v = Value::Blob(Some(*id));
            }
        }
    }
    fields
}

/// Read and decode the events of `path` (calls of `schema`), in batches into `tx`, until the end,
/// an error (sent after the events before it) or the receiver hanging up. Batches replayed come
/// back through `done` and are freed here: their many small allocations are not the replaying
/// thread's to free between two calls.
///
/// Events inside `runs` (first and last event of each, ascending), all but the first, are
/// passed over: the backend issues a prepared run at its first event.
pub(super) fn decode_ahead<'s>(
    (dir, path, late, runs, pre): DecodeFrom,
    schema: &'s hrr_archive::schema::Schema,
    tx: std::sync::mpsc::SyncSender<Result<Vec<Decoded<'s>>>>,
    done: std::sync::mpsc::Receiver<Vec<Decoded<'s>>>,
) {
    let send_err = |batch: Vec<Decoded<'s>>, e: anyhow::Error| {
        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
            return;
        }
        let _ = tx.send(Err(e));
    };
    let reader = match EventReader::open(path) {
        Ok(r) => r,
        Err(e) => return send_err(Vec::new(), e.into()),
    };
    let mut batch = Vec::with_capacity(DECODE_BATCH);
    let mut batch_bytes = 0u64;
    // a call's base name, and whether it has the launch shape, once per record type (not at
    // every event)
    let mut names: Vec<Option<(&'s str, bool, bool)>> = Vec::new();
    let mut runs = runs.iter().peekable();
    for rec in reader {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => return send_err(batch, e.into()),
        };
        let seq = rec.header.seq;
        while runs.next_if(|&&(_, last)| last < seq).is_some() {}
        if runs.peek().is_some_and(|&&(first, _)| first < seq) {
            continue; // inside a prepared run, issued at its first event
        }
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        let fields = match decode_fields(call, &rec.payload) {
            Ok(f) if late.is_empty() => f,
            Ok(f) => with_late_source(f, late.get(&rec.header.seq)),
            Err(e) => {
                let e = anyhow!("event #{} ({}): {e}", rec.header.seq, call.name);
                return send_err(batch, e);
            }
        };
        let k = usize::from(rec.header.kind);
        if names.len() <= k {
            names.resize(k + 1, None);
        }
        let (name, per_thread, is_launch) = *names[k].get_or_insert_with(|| {
            let (name, per_thread) = base_name(&call.name);
            (name, per_thread, has_launch_shape(call))
        });
        let launch = is_launch
            .then(|| <Launch as hrr_calls::shapes::Shape>::read(&fields).ok())
            .flatten();
        let ev = Event::of_record(&rec.header, (name, per_thread), fields, launch);
        let blobs = read_ahead(dir, &ev, pre);
        batch_bytes += blobs.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
        batch.push((call, ev, blobs));
        if batch.len() == DECODE_BATCH || batch_bytes >= READ_AHEAD_BYTES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(DECODE_BATCH));
            if tx.send(Ok(full)).is_err() {
                return;
            }
            batch_bytes = 0;
            while let Ok(replayed) = done.try_recv() {
                drop(replayed);
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(Ok(batch));
    }
}

/// The process id a process folder (`pid-<pid>`) was recorded with.
fn recorded_pid(dir: &Path) -> Option<u32> {
    dir.file_name()?
        .to_str()?
        .strip_prefix("pid-")?
        .parse()
        .ok()
}

/// The table kind of `ev`'s call, looked up once per record type into `cache`.
fn kind_of(
    cache: &mut Vec<Option<Option<hrr_calls::Kind>>>,
    family: Family,
    call: &CallDef,
    ev: &Event,
) -> Option<hrr_calls::Kind> {
    let k = usize::from(ev.id);
    if cache.len() <= k {
        cache.resize(k + 1, None);
    }
    *cache[k].get_or_insert_with(|| {
        let fields = call.fields.iter().map(|f| f.name.as_str());
        table_facts(family, ev.name, fields).map(|(kind, _)| kind)
    })
}

/// Read (or map) a recorded blob whole (`None`: nothing was recorded), refusing a link, a
/// non-file, or a size other than `expected` (the byte count of the event that names it).
pub(super) fn read_blob(
    dir: &Path,
    id: Option<ObjectId>,
    expected: Option<u64>,
) -> Result<Option<BlobBytes>> {
    let Some(id) = id else { return Ok(None) };
    blob_bytes::load(dir, &id, expected).map(Some)
}

/// Replay the process capture in `dir`, the summary written to `out`; returns the exit code
/// (0 only when every check passed).
pub fn run(opts: &Options, dir: &Path, out: &mut dyn Write) -> Result<i32> {
    if let Some(req) = &opts.extract {
        return super::extract::run(opts, req, dir, out);
    }
    let sum = summary::summarize(dir)?;
    let schema = sum.schema.clone().ok_or_else(|| {
        anyhow!(
            "{}: events.bin has no schema record; cannot replay",
            dir.display()
        )
    })?;
    let Some(family) = Family::of(schema.api.as_str()) else {
        bail!(
            "{}: replay of `{}` archives is not available in this build (CUDA driver and HIP only)",
            dir.display(),
            schema.api
        );
    };
    let load_start = Instant::now();
    let mut scan = prescan(dir, family, batch::enabled(opts))?;
    if let Some(m) = &sum.manifest {
        scan.unreproducible
            .extend(passed_through_writes(family, &m.passthrough_calls));
    }
    // host memory's recorded addresses held first, before the driver maps anything
    let held = match opts.no_placement {
        true => HostRanges::default(),
        false => HostRanges::reserve(&scan.host_ranges, &family.device_spans(&scan.ranges)),
    };
    let mut backend = family.open(opts, &scan.ranges, &scan.devices, held)?;
    backend.preflight(sum.manifest.as_ref().and_then(|m| m.metadata.as_ref()))?;
    backend.exported(&scan.exported);
    backend.contexts(&scan.contexts)?;
    backend.preload(&scan.code)?;
    backend.prepare_runs(std::mem::take(&mut scan.runs));
    let runs = backend.prepared_runs();
    // Large H2D sources mapped and page-locked before the clock, where the backend can use
    // them (kept until the end: the backend's copies read them).
    let mut preloaded = Preloaded::default();
    if backend.uses_preloaded_sources() {
        preloaded = Preloaded::map(dir, &scan.h2d_sources);
        if !backend.pin_sources(&preloaded.slices()) {
            preloaded = Preloaded::default();
        }
    }
    if opts.verbose && !preloaded.0.is_empty() {
        let bytes: usize = preloaded.slices().iter().map(|s| s.len()).sum();
        eprintln!(
            "[HRR] {} H2D sources ({:.1} MiB) mapped and page-locked before the clock",
            preloaded.0.len(),
            bytes as f64 / (1 << 20) as f64
        );
    }
    let replaced = super::replace::install(&mut *backend, dir, &schema, &opts.replace_kernels)?;
    let load_ms = load_start.elapsed().as_secs_f64() * 1e3;

    let mut report = Summary {
        archive: dir.display().to_string(),
        captured: report::Captured::of(&sum),
        device: backend.device(),
        runtime: backend.runtime(),
        mode: match opts.multi_thread {
            true => "multi-threaded",
            false => "single-threaded",
        },
        incomplete: (!sum.complete()).then(|| sum.incompleteness().join("; ")),
        load_ms,
        threads_used: 1,
        recorded_failure: scan.recorded_failure.clone(),
        unreproducible: scan.unreproducible.clone(),
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
        report::write_unreproducible_note(&report, out)?;
        out.flush()?;
    }
    let progress = !opts.no_progress && !opts.json && std::io::stderr().is_terminal();
    // The blobs of the event being replayed that the reading thread read ahead.
    let ahead: std::cell::RefCell<Vec<(ObjectId, BlobBytes)>> = Default::default();
    let blobs = |id: Option<ObjectId>, expected: Option<u64>| -> Result<Option<BlobBytes>> {
        let Some(i) = id else { return Ok(None) };
        let mut ahead = ahead.borrow_mut();
        let Some(at) = ahead.iter().position(|(a, _)| *a == i) else {
            drop(ahead);
            return read_blob(dir, id, expected);
        };
        let (_, bytes) = ahead.swap_remove(at);
        if let Some(expected) = expected.filter(|&w| w != bytes.len() as u64) {
            let e = hrr_archive::Error::SizeMismatch {
                path: hrr_archive::blobs::blob_path(dir, &i),
                expected,
                found: bytes.len() as u64,
            };
            return Err(e).with_context(|| format!("blob {i} of {}", dir.display()));
        }
        Ok(Some(bytes))
    };
    let events = dir.join(EVENTS_FILE);
    let exec_start = Instant::now();
    let mut last_progress = Instant::now();
    let mut prog = Progress::default();
    let cx = Cx {
        opts,
        schema: &schema,
        events: &events,
        ranges: &scan.ranges,
        redacted: &redacted,
        tol,
        recorded_failure: scan.recorded_failure.as_ref().map(|f| f.seq),
        late_sources: &scan.late_sources,
        preloaded: &preloaded,
    };
    // replayed beside other recorded processes (`--all`): the recorded order where results
    // are read (`super::peers`)
    let mut peers = match recorded_pid(dir) {
        Some(pid) => super::peers::Peers::from_env(pid)?,
        None => None,
    };
    let mut kinds: Vec<Option<Option<hrr_calls::Kind>>> = Vec::new();
    if opts.multi_thread {
        let threads =
            super::threads::run(&cx, (dir, family), &mut *backend, &mut report, &mut prog)?;
        report.threads_used = threads;
    }
    for pass in 0..opts.loop_count {
        if opts.multi_thread {
            break;
        }
        // Events are read and decoded ahead, on a thread of their own, while this one issues
        // them (bounded: a few batches ahead).
        let stopped = std::thread::scope(|scope| -> Result<bool> {
            let (tx, rx) = std::sync::mpsc::sync_channel(DECODE_AHEAD);
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            let schema = &schema;
            let events = &events;
            let (late, runs, pre) = (&scan.late_sources, &runs[..], &preloaded);
            std::thread::Builder::new()
                .name("hrr-decode".into())
                .spawn_scoped(scope, move || {
                    decode_ahead((dir, events, late, runs, pre), schema, tx, done_rx)
                })
                .context("starting the event decoding thread")?;
            let mut n = 0u64;
            for batch in rx {
                let mut batch = batch?;
                for (call, ev, read) in batch.iter_mut() {
                    let (call, ev) = (*call, &*ev);
                    n += 1;
                    // (what the event did not take goes back with the batch, freed there)
                    std::mem::swap(&mut *ahead.borrow_mut(), read);
                    if fields::failed_in_capture(&ev.fields)
                        && scan
                            .recorded_failure
                            .as_ref()
                            .is_none_or(|f| f.seq != ev.seq)
                    {
                        continue; // failed during capture: not reissued (but the recorded GPU failure is)
                    }
                    if opts.verbose {
                        eprintln!("[HRR] #{} {}", ev.seq, call.name);
                    }
                    if let Some(p) = peers.as_mut() {
                        p.before(ev.ts, kind_of(&mut kinds, family, call, ev));
                    }
                    let outcome = backend.replay(ev, &blobs, opts);
                    let mut recycle = |b| backend.recycle(b);
                    let st = &mut (&mut report, &mut prog);
                    if account(&cx, st, (pass, call, ev), outcome, &blobs, &mut recycle)? {
                        return Ok(true);
                    }
                    std::mem::swap(&mut *ahead.borrow_mut(), read);
                    if progress && last_progress.elapsed().as_secs() >= 2 {
                        eprintln!("[HRR] progress: {n}/{} events", sum.events);
                        last_progress = Instant::now();
                    }
                }
                let _ = done_tx.send(batch);
            }
            Ok(false)
        })?;
        if stopped {
            break;
        }
    }
    let Progress {
        kept,
        last_launch,
        mut stop,
    } = prog;
    if report.error.is_none() {
        if let Err(e) = backend.finish() {
            report.error = Some(format!("final synchronisation: {e:#}"));
            stop = Some((u64::MAX, verdict::classify(&e)));
        }
    }
    report.execute_ms = exec_start.elapsed().as_secs_f64() * 1e3;
    report.replaced_kernels = super::replace::tally(&replaced, &*backend);
    report.timing = backend.timings();
    report.batching = backend.batching();
    report.perturbation = backend.perturbation();
    if stop.is_none() && report.checks.fail > 0 && !opts.no_recheck && opts.dump_d2h.is_none() {
        if human {
            writeln!(
                out,
                "[HRR] {} D2H result{} differ{}: replaying again to tell the program's own nondeterminism apart",
                report.checks.fail,
                if report.checks.fail == 1 { "" } else { "s" },
                if report.checks.fail == 1 { "s" } else { "" }
            )?;
            out.flush()?;
        }
        match recheck::recheck(dir, opts, &kept, &mut report.checks, tol) {
            Ok((n, replays)) => {
                report.nondeterministic = n;
                report.recheck_replays = replays;
            }
            Err(e) => report.recheck_note = Some(format!("{e:#}")),
        }
        if kept.dropped > 0 && report.recheck_note.is_none() {
            report.recheck_note = Some(format!(
                "{} failed D2H result{} not rechecked (over {} MiB kept)",
                kept.dropped,
                if kept.dropped == 1 { "" } else { "s" },
                recheck::KEEP_BYTES >> 20
            ));
        }
    }
    conclude(
        &mut report,
        stop,
        last_launch,
        (&events, &schema, &scan.ranges),
        dir,
        opts,
    );
    report.placement = backend.placement();
    if opts.json {
        report::write_json(&report, out)?;
    } else {
        report::write_human_closing(&report, out)?;
    }
    out.flush()?;
    Ok(report.verdict.exit_code())
}

/// What every event's outcome is judged against: the options, the archive's events and schema,
/// the recorded device ranges (for a fault's site), the ranges a scrub redacted, the tolerance.
pub(super) struct Cx<'a> {
    pub(super) opts: &'a Options,
    pub(super) schema: &'a hrr_archive::schema::Schema,
    pub(super) events: &'a Path,
    pub(super) ranges: &'a [(u64, u64)],
    pub(super) redacted: &'a BTreeMap<ObjectId, Vec<std::ops::Range<u64>>>,
    pub(super) tol: Tolerance,
    /// The event of the recorded run's GPU failure, reissued although it failed then.
    pub(super) recorded_failure: Option<u64>,
    /// [`Scan::late_sources`].
    pub(super) late_sources: &'a HashMap<u64, ObjectId>,
    /// H2D sources mapped (and page-locked by the backend) before the clock.
    pub(super) preloaded: &'a Preloaded,
}

/// What the outcomes so far left besides the summary: failed D2H results kept for the
/// recheck, the last launch issued, and what stopped the replay (its event, why).
#[derive(Default)]
pub(super) struct Progress {
    pub(super) kept: Kept,
    pub(super) last_launch: Option<u64>,
    pub(super) stop: Option<(u64, Stop)>,
}

/// Account for the outcome of event `ev` (call `call`, loop pass `pass`) in the summary and
/// `Progress`: counts, skipped work, the D2H comparison (the result handed to `recycle` when it
/// matched), the error that stops the replay. `true`: replay stops here.
pub(super) fn account(
    cx: &Cx,
    (report, prog): &mut (&mut Summary, &mut Progress),
    (pass, call, ev): (u32, &CallDef, &Event),
    outcome: Result<Outcome>,
    blobs: &super::backend::Blobs,
    recycle: &mut dyn FnMut(Vec<u8>),
) -> Result<bool> {
    match outcome {
        Ok(Outcome::Launched) => {
            report.kernels_launched += 1;
            prog.last_launch = Some(ev.seq);
        }
        Ok(Outcome::Launches(n)) => {
            report.kernels_launched += n;
            prog.last_launch = Some(ev.seq);
        }
        Ok(Outcome::GraphLaunched) => report.graphs_launched += 1,
        Ok(Outcome::Filtered) => report.kernels_filtered += 1,
        Ok(Outcome::Skipped(why)) => {
            report.skipped_total += 1;
            if report.skipped_calls.len() < 20 {
                report
                    .skipped_calls
                    .push(format!("#{} {}: {why}", ev.seq, call.name));
            }
        }
        Ok(Outcome::D2h {
            got,
            expected,
            site,
        }) => {
            recheck::dump(cx.opts, pass, ev.seq, &got)?;
            let want = blobs(expected, None)?;
            let checks = &mut report.checks;
            let ranges = expected.and_then(|id| cx.redacted.get(&id));
            let tol = cx.tol;
            let digest = want
                .as_deref()
                .and_then(|w| ResultDigest::of_blob(w, got.len()));
            let failed = match (&digest, want.as_deref(), ranges) {
                (Some(d), ..) => checks.compare_digest(ev.seq, &call.name, &got, d),
                (None, Some(want), Some(ranges)) => {
                    checks.compare_redacted(ev.seq, &call.name, &got, want, ranges, tol)
                }
                (None, want, _) => checks.compare(ev.seq, &call.name, &got, want, tol),
            };
            if want.is_some() && call.name == FREE_CHECK {
                checks.at_free += 1;
            }
            match (failed, want) {
                (true, Some(want)) => {
                    let got = match ranges {
                        Some(r) if digest.is_none() => mask(&got, &want, r),
                        _ => got,
                    };
                    prog.kept.keep(Failed {
                        pass,
                        seq: ev.seq,
                        site,
                        call: call.name.clone(),
                        got,
                        want: want.into_vec(),
                    });
                }
                _ => recycle(got),
            }
        }
        Ok(Outcome::Done | Outcome::Ignored) => {}
        Err(e) => {
            report.error = Some(format!("event #{} {}: {e:#}", ev.seq, call.name));
            prog.stop = Some((ev.seq, verdict::classify(&e)));
            if call.class == hrr_archive::schema::CallClass::Launch {
                let n = report.kernels_launched + 1;
                report.fault_site = fault::site_of(cx.events, cx.schema, ev.seq, n, cx.ranges)
                    .ok()
                    .flatten();
            }
            return Ok(true);
        }
    }
    Ok(false)
}

/// Set the verdict from what stopped the replay (`seq` `u64::MAX`: the final synchronisation)
/// and the checks; find the launch behind a fault or a hang.
fn conclude(
    report: &mut Summary,
    stop: Option<(u64, Stop)>,
    last_launch: Option<u64>,
    (events, schema, ranges): (&Path, &hrr_archive::schema::Schema, &[(u64, u64)]),
    dir: &Path,
    opts: &Options,
) {
    let launches = report.kernels_launched;
    let last = || {
        last_launch.and_then(|seq| {
            fault::site_of(events, schema, seq, launches, ranges)
                .ok()
                .flatten()
        })
    };
    report.verdict = match stop {
        Some((seq, Stop::Fault { code, name })) => {
            report.stopped_at = Some((seq, format!("{name} ({code})")));
            // The same event failing with a GPU fault reproduces the recorded failure; which
            // fault (an illegal address, an address-space violation) can depend on what lies
            // around a bad address, so a different code is said, not held against it.
            let as_recorded = report
                .recorded_failure
                .as_ref()
                .is_some_and(|r| r.seq == seq || (seq == u64::MAX && r.code == code));
            if report.fault_site.is_none() && !opts.sync_after_launch && !opts.no_localize {
                report.fault_site = fault::localize(dir, opts);
            }
            if as_recorded {
                Verdict::Reproduced
            } else {
                Verdict::Fault
            }
        }
        Some((_, Stop::Hang)) => {
            report.last_launch = report.fault_site.take().or_else(last);
            Verdict::Hang
        }
        Some((_, Stop::Error)) => Verdict::Error,
        // With a kernel replaced (`--replace-kernel`, a fix under test), the recorded failure
        // not happening is the pass asked for.
        None if report.recorded_failure.is_some() && report.replaced_kernels.is_empty() => {
            Verdict::NotReproduced
        }
        None if report.checks.fail > 0 => Verdict::Mismatch,
        None if opts.strict && !report.nondeterministic.is_empty() => Verdict::Mismatch,
        None => Verdict::Pass,
    };
    if let Some((seq, _)) = &mut report.stopped_at {
        if *seq == u64::MAX {
            report.stopped_at = report.stopped_at.take().map(|(_, s)| (0, s));
        }
    }
}
