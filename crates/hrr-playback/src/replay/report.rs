//! The replay summary: one [`Summary`] holding everything the summary block prints, filled by
//! the engine, and its two renderings, human ([`write_human_opening`], [`write_scrub_note`],
//! [`write_human_closing`]) and JSON ([`write_json`]), both writing to a `&mut dyn Write`.
//! Nothing else prints the summary.

use std::io::{self, Write};

use hrr_cli::json::{
    BatchingJson, D2hChecksJson, KernelTimingJson, NondeterministicJson, ReplacedKernelJson,
    ReplayJson, StoppedAtJson, UnreproducibleCallJson,
};

use super::check::{Checks, How, Nondeterministic};
use super::fault::Site;
use super::placement::Tally;
use super::verdict::{RecordedFailure, Verdict};

/// A recorded call that changed state and that replay cannot reproduce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreproducible {
    /// The call, as recorded.
    pub call: String,
    /// Its first event (`None`: capture passed it through without recording it, and counted
    /// its calls only: the manifest's `passthrough_calls`).
    pub first_seq: Option<u64>,
    /// How often it was recorded (successfully), or passed through.
    pub count: u64,
    /// Why replay cannot reproduce it.
    pub why: &'static str,
}

/// What the capture replayed holds, counted before replay starts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    /// Events.
    pub events: u64,
    /// Kernel launches.
    pub kernels: u64,
    /// Blobs.
    pub blobs: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Threads recorded.
    pub threads: u64,
}

impl Captured {
    /// The counts of the archive's summary.
    pub fn of(sum: &hrr_archive::summary::ProcessSummary) -> Self {
        Captured {
            events: sum.events,
            kernels: sum.launches,
            blobs: sum.objects.blobs,
            code_objects: sum.objects.code_objects,
            threads: sum.threads.len() as u64,
        }
    }
}

/// Everything the replay summary prints.
#[derive(Debug, Default)]
pub struct Summary {
    /// The process capture replayed (its path as given).
    pub archive: String,
    /// What it holds.
    pub captured: Captured,
    /// The device replaying.
    pub device: String,
    /// The runtime library loaded.
    pub runtime: String,
    /// How events are replayed (`single-threaded`, `multi-threaded`).
    pub mode: &'static str,
    /// Why the capture is incomplete (`None`: complete).
    pub incomplete: Option<String>,
    /// Blobs a scrub redacted ranges of.
    pub redacted_blobs: usize,
    /// Loading the runtime and the code objects, in milliseconds.
    pub load_ms: f64,
    /// Replaying the events, in milliseconds.
    pub execute_ms: f64,
    /// Threads replaying.
    pub threads_used: u32,
    /// Kernels launched.
    pub kernels_launched: u64,
    /// Kernels left out by `--kernel-filter`.
    pub kernels_filtered: u64,
    /// CUDA graphs launched.
    pub graphs_launched: u64,
    /// D2H comparisons.
    pub checks: Checks,
    /// The first calls not reissued, with the reason (`#<seq> <call>: <why>`).
    pub skipped_calls: Vec<String>,
    /// Calls not reissued, all of them (`skipped_calls` keeps the first 20).
    pub skipped_total: u64,
    /// Recorded calls that changed state and that replay cannot reproduce (the prescan's).
    pub unreproducible: Vec<Unreproducible>,
    /// D2H results part of which differed between two replays (`super::recheck`).
    pub nondeterministic: Vec<Nondeterministic>,
    /// Why failed D2H checks could not (all) be rechecked by a second replay.
    pub recheck_note: Option<String>,
    /// Replays the recheck ran (0: none ran).
    pub recheck_replays: u32,
    /// How recorded allocations landed.
    pub placement: Tally,
    /// The failure that stopped the replay (`event #<seq> <call>: <error>`).
    pub error: Option<String>,
    /// What the replay concluded (set by the engine at the end).
    pub verdict: Verdict,
    /// The event that stopped the replay and the status it failed with (`None` when the
    /// replay ran to its end, or stopped without a status).
    pub stopped_at: Option<(u64, String)>,
    /// The GPU failure the recorded run itself hit, if any.
    pub recorded_failure: Option<RecordedFailure>,
    /// The launch a fault is attributed to.
    pub fault_site: Option<Site>,
    /// The last kernel launched before a hang (`--sync-watchdog-ms`), if any.
    pub last_launch: Option<Site>,
    /// `--replace-kernel`: (kernel, replacement file, launches that used it).
    pub replaced_kernels: Vec<(String, String, u64)>,
    /// `--timing`: GPU time by kernel (and graph), largest total first.
    pub timing: Vec<crate::replay::timing::KernelTiming>,
    /// `--perturb` (a recheck's second replay): what perturbed it.
    pub perturbation: Option<String>,
    /// Launch batching (`super::batch`): `None` when no launch was batched.
    pub batching: Option<super::batch::Batching>,
}

impl Summary {
    /// Every comparison passed and nothing failed (or it failed as recorded).
    pub fn pass(&self) -> bool {
        self.verdict.exit_code() == 0
    }

    /// `PASS` or `FAIL`, for `--json`'s `result` (the verdict says more).
    fn result(&self) -> &'static str {
        if self.pass() {
            "PASS"
        } else {
            "FAIL"
        }
    }

    /// The verdict line after `[HRR] `: the verdict and what it rests on.
    pub fn verdict_line(&self) -> String {
        let word = self.verdict.word();
        let site = self
            .fault_site
            .as_ref()
            .map(|s| format!("; kernel {}", super::fault::describe(s)))
            .unwrap_or_default();
        let at = self
            .stopped_at
            .as_ref()
            .map(|(seq, what)| format!("{what} at event #{seq}"))
            .unwrap_or_default();
        match self.verdict {
            Verdict::Pass => {
                let nd = self
                    .nondeterminism()
                    .map(|n| format!(", {n}"))
                    .unwrap_or_default();
                match self.pass_note() {
                    Some(n) => format!("{word}{nd} ({n})"),
                    None => format!("{word}{nd}"),
                }
            }
            Verdict::Reproduced => {
                let recorded = self.recorded_failure.as_ref().map(|r| r.code);
                let now = self
                    .stopped_at
                    .as_ref()
                    .map(|(_, s)| s.as_str())
                    .unwrap_or("");
                let same = recorded.is_some_and(|c| now.ends_with(&format!("({c})")));
                let how = match recorded {
                    Some(c) if !same => format!(", as recorded (there with status {c})"),
                    _ => ", as recorded".to_string(),
                };
                format!("{word}: {at}{how}{site}")
            }
            Verdict::Mismatch => {
                let c = &self.checks;
                let n = c.fail;
                let all = n + c.exact + c.within_tol + c.nondeterministic;
                let nd = self.nondeterminism();
                match (n, nd) {
                    (0, Some(nd)) => format!("{word} (--strict): {nd}"),
                    (_, nd) => format!(
                        "{word}: {n} of {all} D2H result{} differ{} from the recording{}",
                        plural(all),
                        if n == 1 { "s" } else { "" },
                        nd.map(|nd| format!("; {nd}")).unwrap_or_default()
                    ),
                }
            }
            Verdict::NotReproduced => {
                let r = self.recorded_failure.as_ref();
                let (code, seq, call) = r.map_or((0, 0, ""), |r| (r.code, r.seq, r.call.as_str()));
                format!("{word}: the recording failed with status {code} at event #{seq} {call}; replay did not")
            }
            Verdict::Fault => format!("{word}: {at}{site}"),
            Verdict::Hang => {
                let last = self
                    .last_launch
                    .as_ref()
                    .map(|s| format!("; last kernel launched: {}", super::fault::describe(s)))
                    .unwrap_or_default();
                format!("{word}: {}{last}", self.error.as_deref().unwrap_or(""))
            }
            Verdict::Error => format!("{word}: {}", self.error.as_deref().unwrap_or("")),
        }
    }

    /// `512 of 1024 bytes nondeterministic at event #135` (and how many more results were).
    fn nondeterminism(&self) -> Option<String> {
        let first = self.nondeterministic.first()?;
        let more = self.nondeterministic.len() - 1;
        Some(format!(
            "{} of {} bytes nondeterministic{} at event #{}{}",
            first.differing,
            first.bytes,
            match first.how {
                How::Replays => "",
                How::Reordered => " (the recorded values in another order)",
                How::SameCopy => " (as in other results of the same copy)",
            },
            first.seq,
            if more > 0 {
                format!(" and {more} more D2H result{}", plural(more as u64))
            } else {
                String::new()
            }
        ))
    }

    /// Why a `PASS` is not a bare one: nothing was compared, or recorded work was skipped.
    fn pass_note(&self) -> Option<String> {
        let c = &self.checks;
        // a result judged nondeterministic was compared (the rest of its bytes matched)
        let compared = c.exact + c.within_tol + c.nondeterministic;
        let mut notes = Vec::new();
        if compared == 0 && c.skipped == 0 {
            notes.push("nothing to compare: the recording copied no result back".to_string());
        } else if compared == 0 {
            notes.push(format!(
                "nothing compared: {} D2H result{} skipped",
                c.skipped,
                plural(c.skipped)
            ));
        }
        if let (Some(r), false) = (&self.recorded_failure, self.replaced_kernels.is_empty()) {
            notes.push(format!(
                "the recorded failure (status {} at event #{} {}) did not happen with the replaced kernel{}",
                r.code,
                r.seq,
                r.call,
                plural(self.replaced_kernels.len() as u64)
            ));
        }
        if !self.skipped_calls.is_empty() {
            let n = self.skipped_total.max(self.skipped_calls.len() as u64);
            notes.push(format!(
                "{n} call{} not replayed, first: {}",
                plural(n),
                self.skipped_calls[0]
            ));
        }
        // Calls replay cannot reproduce that no runtime skip already named.
        let unnamed: Vec<&Unreproducible> = self
            .unreproducible
            .iter()
            .filter(|u| {
                !self.skipped_calls.iter().any(|s| {
                    s.split(": ")
                        .next()
                        .is_some_and(|h| h.ends_with(&format!(" {}", u.call)))
                })
            })
            .collect();
        if let Some(u) = unnamed.first() {
            let n: u64 = unnamed.iter().map(|u| u.count).sum();
            notes.push(format!(
                "{n} state-changing call{} not reproducible, first: {}{}: {}",
                plural(n),
                u.first_seq.map(|s| format!("#{s} ")).unwrap_or_default(),
                u.call,
                u.why
            ));
        }
        if self.kernels_filtered > 0 {
            notes.push(format!(
                "{} launch{} left out by --kernel-filter",
                self.kernels_filtered,
                if self.kernels_filtered == 1 { "" } else { "es" }
            ));
        }
        if compared > 0 && c.skipped > 0 {
            notes.push(format!(
                "{} D2H result{} not compared",
                c.skipped,
                plural(c.skipped)
            ));
        }
        if let Some(r) = &self.recheck_note {
            notes.push(r.clone());
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The lines printed before the events replay: the capture, the device, the runtime, the mode,
/// and a note when the capture is incomplete.
pub fn write_human_opening(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "[HRR] {:<16}: {} events, {} kernels, {} blobs, {} code objects",
        "Archive", s.captured.events, s.captured.kernels, s.captured.blobs, s.captured.code_objects
    )?;
    writeln!(
        w,
        "[HRR] {:<16}: {} captured",
        "Threads", s.captured.threads
    )?;
    writeln!(w, "[HRR] {:<16}: {}", "Device", s.device)?;
    writeln!(w, "[HRR] {:<16}: {}", "Runtime", s.runtime)?;
    writeln!(w, "[HRR] {:<16}: {}", "Mode", s.mode)?;
    if let Some(why) = &s.incomplete {
        writeln!(
            w,
            "[HRR] Note: capture incomplete ({why}); it holds {} events, the tail after them was lost; replaying those",
            s.captured.events
        )?;
    }
    Ok(())
}

/// The note on a scrubbed archive (after the opening, once its redactions are read).
pub fn write_scrub_note(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    if s.redacted_blobs > 0 {
        writeln!(
            w,
            "[HRR] Note: scrubbed archive: {} blob(s) have redacted ranges; D2H results differing only there count as skipped",
            s.redacted_blobs
        )?;
    }
    Ok(())
}

/// Before the events replay: the recorded calls that changed state and that replay cannot
/// reproduce (the prescan's), one line each.
pub fn write_unreproducible_note(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    for u in &s.unreproducible {
        writeln!(
            w,
            "[HRR] Not reproducible: {} ({} call{}{}): {}",
            u.call,
            u.count,
            plural(u.count),
            u.first_seq
                .map(|s| format!(", first at event #{s}"))
                .unwrap_or_default(),
            u.why
        )?;
    }
    Ok(())
}

/// The lines printed after the replay: skipped calls, mismatches, the error, the summary block
/// and `[HRR] PASS` / `[HRR] FAIL`.
/// `--timing`'s table: the kernels (and graphs) by total GPU time, the first 20.
fn write_timing(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    if s.timing.is_empty() {
        return Ok(());
    }
    let total: f64 = s.timing.iter().map(|t| t.total_ms).sum();
    writeln!(w, "[HRR] {:<16}: {total:.3} ms in all", "GPU time")?;
    writeln!(
        w,
        "[HRR]   {:<60} {:>9} {:>11} {:>10} {:>10} {:>10}",
        "Kernel", "Launches", "Total ms", "Mean ms", "Min ms", "Max ms"
    )?;
    const ROWS: usize = 20;
    for t in s.timing.iter().take(ROWS) {
        let mut name = crate::demangle::demangle(&t.name);
        if name.chars().count() > 60 {
            name = name.chars().take(59).collect::<String>() + "…";
        }
        writeln!(
            w,
            "[HRR]   {name:<60} {:>9} {:>11.3} {:>10.4} {:>10.4} {:>10.4}",
            t.launches,
            t.total_ms,
            t.mean_ms(),
            t.min_ms,
            t.max_ms
        )?;
    }
    if s.timing.len() > ROWS {
        writeln!(w, "[HRR]   ({} more in --json)", s.timing.len() - ROWS)?;
    }
    Ok(())
}

/// How a failed check of host-visible memory the host reads is named in `mismatches`.
const HOST_SHARED: &str = " hrrHostMemCheck:";

pub fn write_human_closing(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    for c in &s.skipped_calls {
        writeln!(w, "[HRR] Skipped {c}")?;
    }
    for m in &s.checks.mismatches {
        writeln!(w, "[HRR] Mismatch {m}")?;
    }
    for n in &s.nondeterministic {
        let (seq, call, differing, bytes, first) =
            (n.seq, &n.call, n.differing, n.bytes, n.first_offset);
        match n.how {
            How::Replays => writeln!(
                w,
                "[HRR] Nondeterministic event #{seq} {call}: {differing} of {bytes} bytes differ between two replays, first at offset {first}; the other bytes match the recording"
            )?,
            How::Reordered => writeln!(
                w,
                "[HRR] Nondeterministic event #{seq} {call}: the result holds the recorded 4-byte values in another order ({differing} of {bytes} bytes moved, first at offset {first}), an order set by scheduling (atomics, a work queue)"
            )?,
            How::SameCopy => writeln!(
                w,
                "[HRR] Nondeterministic event #{seq} {call}: {differing} of {bytes} bytes differ from the recording, first at offset {first}, all in values that differed between replays in other results of the same copy"
            )?,
        }
    }
    if s.recheck_replays > 0 && s.checks.fail > 0 {
        writeln!(
            w,
            "[HRR] Rechecked: {} more replay{}; {} result{} still differ{} from the recording where no replay varied",
            s.recheck_replays,
            if s.recheck_replays == 1 { "" } else { "s" },
            s.checks.fail,
            if s.checks.fail == 1 { "" } else { "s" },
            if s.checks.fail == 1 { "s" } else { "" },
        )?;
    }
    if let Some(m) = s.checks.mismatches.iter().find(|m| m.contains(HOST_SHARED)) {
        let at = m.split(':').next().unwrap_or(m);
        writeln!(
            w,
            "[HRR] Note: {at} compares host-visible memory (managed, mapped or pageable) that the \
             program's host code can write too; host code is not replayed, so what it wrote \
             there while the GPU worked (CPU atomics beside system-scope GPU atomics) is in the \
             recording only"
        )?;
    }
    if let Some(r) = &s.recheck_note {
        writeln!(w, "[HRR] Recheck: {r}")?;
    }
    if let Some(f) = &s.error {
        writeln!(w, "[HRR] Error at {f}")?;
    }
    if let Some(site) = s.fault_site.as_ref().or(s.last_launch.as_ref()) {
        let how = if site.localized_by_rerun {
            " (found by replaying again with --sync-after-launch)"
        } else {
            ""
        };
        let label = if s.fault_site.is_some() {
            "Faulting kernel"
        } else {
            "Last kernel"
        };
        writeln!(
            w,
            "[HRR] {label:<16}: {}{how}",
            super::fault::describe(site)
        )?;
        for (i, a) in site.args.iter().enumerate() {
            let place = match (&a.allocation, a.suspicious) {
                (Some(r), _) => format!(" points into allocation {r}"),
                (None, true) => " points into no recorded allocation (the likely culprit)".into(),
                _ => String::new(),
            };
            writeln!(
                w,
                "[HRR]   arg {i} (+{}, {} bytes) = {}{place}",
                a.offset, a.size, a.value
            )?;
        }
    }
    let c = &s.checks;
    writeln!(w, "[HRR] -- Replay summary ------------------------------")?;
    writeln!(
        w,
        "[HRR] {:<16}: {:.1} ms (load {:.1} ms, execute {:.1} ms)",
        "Wall time",
        s.load_ms + s.execute_ms,
        s.load_ms,
        s.execute_ms
    )?;
    writeln!(w, "[HRR] {:<16}: {}", "Threads used", s.threads_used)?;
    if let Some(p) = &s.perturbation {
        writeln!(w, "[HRR] {:<16}: {p}", "Perturbation")?;
    }
    writeln!(
        w,
        "[HRR] {:<16}: {}",
        "Kernels launched", s.kernels_launched
    )?;
    writeln!(w, "[HRR] {:<16}: {}", "Graphs launched", s.graphs_launched)?;
    if let Some(b) = &s.batching {
        writeln!(w, "[HRR] {:<16}: {}", "Launch batching", batching_line(b))?;
    }
    write_timing(s, w)?;
    for (k, path, n) in &s.replaced_kernels {
        writeln!(
            w,
            "[HRR] {:<16}: {k} by {path} ({n} launch{})",
            "Replaced kernel",
            if *n == 1 { "" } else { "es" }
        )?;
    }
    writeln!(
        w,
        "[HRR] {:<16}: {} pass ({} exact, {} within tol), {} fail, {} skipped{}",
        "D2H checks",
        c.exact + c.within_tol,
        c.exact,
        c.within_tol,
        c.fail,
        c.skipped,
        [
            (c.nondeterministic, "nondeterministic"),
            (c.by_digest, "by digest"),
            (c.at_free, "at frees")
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(", {n} {what}"))
        .collect::<String>()
    )?;
    let p = &s.placement;
    if p.translated > 0 {
        writeln!(
            w,
            "[HRR] Placement       : {} allocations at their recorded address, {} translated",
            p.placed, p.translated
        )?;
    }
    if p.host_translated > 0 {
        writeln!(
            w,
            "[HRR] Host memory     : {} regions at their recorded address, {} translated (pointers to them stored in memory are not)",
            p.host_placed, p.host_translated
        )?;
    }
    if let Some(why) = p
        .first_refusal
        .as_ref()
        .filter(|_| p.translated + p.host_translated > 0)
    {
        writeln!(w, "[HRR] First refusal   : {why}")?;
    }
    writeln!(w, "[HRR] {}", s.verdict_line())
}

/// The `Launch batching` line: how many launches went as prepared graphs, and what did not.
fn batching_line(b: &super::batch::Batching) -> String {
    let mut line = format!(
        "{} launches in {} run{} issued as {} graph{} prepared before the clock (--no-batch: one by one)",
        b.launches,
        b.runs,
        if b.runs == 1 { "" } else { "s" },
        b.graphs,
        if b.graphs == 1 { "" } else { "s" },
    );
    if b.fell_back > 0 {
        let why = b.first_fallback.as_deref().unwrap_or("");
        line += &format!(
            "; {} run{} issued launch by launch ({why})",
            b.fell_back,
            if b.fell_back == 1 { "" } else { "s" }
        );
    }
    if let Some((n, why)) = &b.unprepared {
        line += &format!(
            "; {n} run{} not prepared ({why})",
            if *n == 1 { "" } else { "s" }
        );
    }
    line
}

/// `--json`: the whole summary as one JSON object on one line, keys in this order:
///
/// | key | type | meaning |
/// | --- | --- | --- |
/// | `schema` | string | `hrr.replay/1` |
/// | `ok` | bool | the verdict's exit code is 0 (`result` is `PASS`) |
/// | `archive` | string | the process capture replayed, its path as given |
/// | `events` | integer | events in the capture |
/// | `kernels` | integer | kernel launches in the capture |
/// | `blobs` | integer | blobs in the capture |
/// | `code_objects` | integer | code objects in the capture |
/// | `threads_captured` | integer | threads the capture recorded |
/// | `device` | string | the device replaying (`name (sm_XY)` for CUDA, `name (gfx…)` for HIP), then `, device L replaying recorded device(s) R…` when `--device-map` moved them |
/// | `runtime` | string | the driver or runtime library loaded, links resolved |
/// | `mode` | string | `single-threaded`, or `multi-threaded` (`--multi-thread`) |
/// | `wall_time_ms` | number | `load_ms` + `execute_ms` |
/// | `load_ms` | number | loading the runtime and the code objects, milliseconds |
/// | `execute_ms` | number | replaying the events (every `--loop`), milliseconds |
/// | `threads_used` | integer | threads replaying (1; with `--multi-thread` one per recorded thread, the most of any `--loop` pass) |
/// | `kernels_launched` | integer | kernels launched (graph launches not counted) |
/// | `kernels_filtered` | integer | launches left out by `--kernel-filter` |
/// | `graphs_launched` | integer | CUDA graphs launched |
/// | `d2h_checks` | object | D2H comparisons: `pass` (= `exact` + `within_tol`), `exact`, `within_tol`, `fail`, `skipped` (no recorded result, or differing only in redacted ranges), `skipped_redacted` (of `skipped`, the latter), `nondeterministic` (differing from the recording only in bytes that also differ between two replays; not in `fail`), `by_digest` (of those compared, results the recording kept as digests), `at_free` (of those compared, what allocations held when a program that copied nothing back freed them); all integers |
/// | `mismatches` | array of strings | the first 10 failed comparisons, `event #<seq> <call>: <n> of <len> bytes differ, first at offset <o>` |
/// | `skipped_calls` | array of strings | the first 20 calls not reissued, `#<seq> <call>: <why>` |
/// | `skipped_calls_total` | integer | calls not reissued, all of them |
/// | `unreproducible_calls` | array of objects | recorded state-changing calls replay cannot reproduce (named before replay starts): `call`, `first_seq`, `count`, `why` |
/// | `nondeterministic` | array of objects | D2H results part of which differed between two replays: `event`, `call`, `bytes` (its size), `differing` (bytes differing between the replays), `first_offset`, `how` (`replays`: its differing bytes differed between two replays; `reordered`: every replay held the recorded 4-byte values in another order; `same_copy`: stable across replays, but every differing 4-byte value is one that differed between replays in other results of the same copy; for the last two `differing` counts bytes differing from the recording) |
/// | `recheck_error` | string or null | why failed D2H checks could not (all) be rechecked by a second replay |
/// | `recheck_replays` | number | replays the recheck ran (0: no check failed, or `--no-recheck`) |
/// | `allocations` | object | `placed` (integer: at their recorded address), `translated` (integer: elsewhere, pointers translated), `first_refusal` (string or null: why the first placement was refused) |
/// | `error` | string or null | the failure that stopped the replay, `event #<seq> <call>: <error>` or `final synchronisation: <error>` |
/// | `result` | string | `PASS` (the verdict's exit code is 0) or `FAIL` |
/// | `verdict` | string | `PASS`, `REPRODUCED`, `MISMATCH`, `NOT REPRODUCED`, `FAULT`, `HANG` or `ERROR` (`super::verdict`) |
/// | `verdict_line` | string | the human verdict line (what the verdict rests on) |
/// | `exit_code` | integer | the exit status: 0 `PASS`/`REPRODUCED`, 1 `MISMATCH`/`NOT REPRODUCED`, 3 `FAULT`, 4 `HANG`, 5 `ERROR` |
/// | `stopped_at` | object or null | `seq` (integer), `status` (string): the event that stopped the replay |
/// | `recorded_failure` | object or null | `seq`, `call`, `code`: the GPU failure the recorded run hit |
/// | `fault_site` | object or null | the launch a fault is attributed to: `seq`, `launch`, `kernel` (demangled), `kernel_mangled`, `grid`, `block`, `shared_mem`, `args` (`offset`, `size`, `value` hex, `allocation` or null, `suspicious`), `localized_by_rerun` |
/// | `last_launch` | object or null | on a hang, the last kernel launched (same fields as `fault_site`) |
/// | `timing` | array of objects | `--timing`: kernels (and `graph 0x…` launches) by total GPU time: `kernel` (demangled), `launches`, `total_ms`, `mean_ms`, `min_ms`, `max_ms`; empty without `--timing` |
/// | `replaced_kernels` | array of objects | `--replace-kernel`: `kernel` (demangled), `path`, `launches` (integer: launches that used the replacement) |
/// | `perturbation` | string or null | only in a recheck's second replay (hidden `--perturb`): the noise kernels launched, or why none could be |
/// | `batching` | object or null | launch batching (`super::batch`; null when nothing was batched): `runs`, `launches`, `graphs` (prepared before the clock), `fell_back` (runs issued launch by launch after all, every `--loop` pass), `first_fallback` (string or null: why), `unprepared` (integer: runs not prepared), `unprepared_why` (string or null) |
pub fn write_json(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    let line = serde_json::to_string(&s.json()).expect("the replay summary serialises");
    writeln!(w, "{line}")
}

impl Summary {
    /// The [`write_json`] object: the `hrr.replay/1` type of `hrr_cli::json` (docs/json.md).
    fn json(&self) -> ReplayJson {
        let c = &self.checks;
        ReplayJson {
            schema: "hrr.replay/1".into(),
            ok: self.pass(),
            archive: self.archive.clone(),
            events: self.captured.events,
            kernels: self.captured.kernels,
            blobs: self.captured.blobs,
            code_objects: self.captured.code_objects,
            threads_captured: self.captured.threads,
            device: self.device.clone(),
            runtime: self.runtime.clone(),
            mode: self.mode.into(),
            wall_time_ms: self.load_ms + self.execute_ms,
            load_ms: self.load_ms,
            execute_ms: self.execute_ms,
            threads_used: self.threads_used,
            kernels_launched: self.kernels_launched,
            kernels_filtered: self.kernels_filtered,
            graphs_launched: self.graphs_launched,
            d2h_checks: D2hChecksJson {
                pass: c.exact + c.within_tol,
                exact: c.exact,
                within_tol: c.within_tol,
                fail: c.fail,
                skipped: c.skipped,
                skipped_redacted: c.redacted,
                nondeterministic: c.nondeterministic,
                by_digest: c.by_digest,
                at_free: c.at_free,
            },
            mismatches: c.mismatches.clone(),
            skipped_calls: self.skipped_calls.clone(),
            skipped_calls_total: self.skipped_total.max(self.skipped_calls.len() as u64),
            unreproducible_calls: self
                .unreproducible
                .iter()
                .map(|u| UnreproducibleCallJson {
                    call: u.call.clone(),
                    first_seq: u.first_seq,
                    count: u.count,
                    why: u.why.into(),
                })
                .collect(),
            nondeterministic: self
                .nondeterministic
                .iter()
                .map(|n| NondeterministicJson {
                    event: n.seq,
                    call: n.call.clone(),
                    bytes: n.bytes,
                    differing: n.differing,
                    first_offset: n.first_offset,
                    how: n.how.key().into(),
                })
                .collect(),
            recheck_error: self.recheck_note.clone(),
            recheck_replays: self.recheck_replays,
            allocations: self.placement.clone(),
            error: self.error.clone(),
            result: self.result().into(),
            verdict: self.verdict.word().into(),
            verdict_line: self.verdict_line(),
            exit_code: self.verdict.exit_code() as u8,
            stopped_at: self.stopped_at.as_ref().map(|(seq, status)| StoppedAtJson {
                seq: *seq,
                status: status.clone(),
            }),
            recorded_failure: self.recorded_failure.clone(),
            fault_site: self.fault_site.clone(),
            last_launch: self.last_launch.clone(),
            replaced_kernels: self
                .replaced_kernels
                .iter()
                .map(|(kernel, path, launches)| ReplacedKernelJson {
                    kernel: kernel.clone(),
                    path: path.clone(),
                    launches: *launches,
                })
                .collect(),
            timing: self
                .timing
                .iter()
                .map(|t| KernelTimingJson {
                    kernel: crate::demangle::demangle(&t.name),
                    launches: t.launches,
                    total_ms: t.total_ms,
                    mean_ms: t.mean_ms(),
                    min_ms: t.min_ms,
                    max_ms: t.max_ms,
                })
                .collect(),
            perturbation: self.perturbation.clone(),
            batching: self.batching.as_ref().map(|b| BatchingJson {
                runs: b.runs,
                launches: b.launches,
                graphs: b.graphs,
                fell_back: b.fell_back,
                first_fallback: b.first_fallback.clone(),
                unprepared: b.unprepared.as_ref().map_or(0, |u| u.0),
                unprepared_why: b.unprepared.as_ref().map(|u| u.1.clone()),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
