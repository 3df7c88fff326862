//! Run-to-run differences told apart from divergence. A program can produce results that
//! differ from one run to the next by itself (a clock, an atomic ticket, a race it tolerates):
//! such bytes differ from the recording at replay, yet prove nothing. So when D2H checks fail,
//! the archive is replayed again (at least [`RECHECK_REPLAYS`] times while failures stay
//! unsettled; up to [`RECHECK_REPLAYS_MAX`] while replays are cheap or each one shows more of
//! the failed results unstable) in a fresh `hrr-playback` (`super::fault::rerun_command`
//! with the hidden `--dump-d2h DIR --dump-seqs …`, which writes the D2H results of those events
//! into DIR, and either `--perturb` or `--sync-after-launch` ([`Variant`]), which make its
//! scheduling differ from the first replay's: a program whose results depend on scheduling
//! may repeat them exactly in two undisturbed replays, yet differ from its recorded run,
//! whose launches capture slowed), and each failed result is judged again ([`super::check::Checks::settle`]): bytes
//! that differ between the two replays are the program's own nondeterminism (a `PASS` that
//! says so; `MISMATCH` with `--strict`), and so are words each of which differed from the
//! first replay in one replay or another of the recheck (results nondeterministic in a few
//! low-order bytes at other places each run, the sparse cuSOLVER samples', rarely show all of
//! them in one replay: [`super::check::Checks::settle_within`]), bytes stable across them but differing from the
//! recording stay a `MISMATCH` — unless every value in which they differ is one that differed
//! between replays in at least two other results of the same copy (the same recorded host
//! destination and size: a loop reading back a sum of floating-point atomics each iteration),
//! the same nondeterminism repeated by chance in every replay ([`Checks::settle_like_copy`]).
//!
//! Partial: the results kept for the second look are bounded ([`KEEP_BYTES`]); failed checks
//! beyond the bound stay failures, and the summary says how many were not rechecked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::check::{differing_words, Checks, How, Nondeterministic, Tolerance};
use super::fault::rerun_command;
use super::options::Options;

/// Bytes of failed D2H results (what the GPU produced, and the recording) kept for a recheck.
pub const KEEP_BYTES: usize = 256 << 20;

/// A failed D2H check kept for the second look.
pub struct Failed {
    /// Which pass of `--loop` (0-based).
    pub pass: u32,
    /// Its event.
    pub seq: u64,
    /// The host address the recorded run copied it to (0: not known): the results of one
    /// copy repeated share it.
    pub site: u64,
    /// Its call.
    pub call: String,
    /// What this replay read (redacted ranges taken from the recording).
    pub got: Vec<u8>,
    /// The recorded result.
    pub want: Vec<u8>,
}

/// The failed checks of a replay, as many as [`KEEP_BYTES`] allows.
#[derive(Default)]
pub struct Kept {
    /// Kept.
    pub failed: Vec<Failed>,
    /// Failed but not kept (over the bound).
    pub dropped: u64,
    bytes: usize,
}

impl Kept {
    /// Keep one failed check, unless over the bound.
    pub fn keep(&mut self, f: Failed) {
        let n = f.got.len() + f.want.len();
        if self.bytes + n > KEEP_BYTES {
            self.dropped += 1;
            return;
        }
        self.bytes += n;
        self.failed.push(f);
    }
}

/// The name of the file a dumping replay writes the result of event `seq` of pass `pass` to.
pub fn dump_path(dir: &Path, pass: u32, seq: u64) -> PathBuf {
    dir.join(format!("{pass}-{seq}.bin"))
}

/// In the second replay of a recheck: write the D2H result of `seq` if it is one asked for.
pub fn dump(opts: &Options, pass: u32, seq: u64, got: &[u8]) -> Result<()> {
    if let Some((dir, seqs)) = &opts.dump_d2h {
        if seqs.contains(&seq) {
            let p = dump_path(dir, pass, seq);
            std::fs::write(&p, got).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    Ok(())
}

/// Perturbed replays a recheck runs at least while failures stay unsettled: rare
/// nondeterminism (one float of a sparse factorization, an atomic's order) may repeat exactly
/// in one more replay and differ in the next.
/// More (up to [`RECHECK_REPLAYS_MAX`]) run while the recheck has taken less than
/// [`RECHECK_CHEAP`], or while each replay settles some failure or shows more of a failed
/// result's words unstable (a sum of floating-point atomics per iteration: most differ in the
/// first replays, a few only in later ones).
pub const RECHECK_REPLAYS: usize = 3;
/// The most perturbed replays of a recheck.
pub const RECHECK_REPLAYS_MAX: usize = 12;
/// While the recheck has run less than this, another replay is started even when the last one
/// changed nothing. The sparse cuSOLVER samples' results differ from run to run in one or two
/// words, which take the recorded value in about half of the replays (H100, nine replays of
/// each: 4 and 5 of 9): a first replay that happened to differ there was repeated by all three
/// replays of the recheck about one time in six, a MISMATCH. Twelve make that one in a
/// thousand, and cost a failing replay of a small archive seconds. 30 s: with 15, cuSolverRf
/// (54,916 launches, about 2 s a replay) stopped after 7 and was a MISMATCH once in 9 runs.
const RECHECK_CHEAP: std::time::Duration = std::time::Duration::from_secs(30);
/// No further perturbed replay is started once the recheck has run this long.
const RECHECK_BUDGET: std::time::Duration = std::time::Duration::from_secs(120);

/// Replay `archive` again, at least [`RECHECK_REPLAYS`] times while failures remain unsettled
/// (more while replays are cheap or make progress, up to [`RECHECK_REPLAYS_MAX`], and
/// within [`RECHECK_BUDGET`]), and settle the `kept` failures against each replay's results:
/// returns the nondeterministic ones, in event order, and how many replays ran. An error: a
/// replay could not be run or produced no result for a kept check (those checks stay failures).
pub fn recheck(
    archive: &Path,
    opts: &Options,
    kept: &Kept,
    checks: &mut Checks,
    tol: Tolerance,
) -> Result<(Vec<Nondeterministic>, u32)> {
    let start = std::time::Instant::now();
    let mut open: Vec<&Failed> = kept.failed.iter().collect();
    let mut found = Vec::new();
    let mut copies = Copies::default();
    let mut unstable = Unstable::default();
    let mut replays = 0;
    for n in 1..=RECHECK_REPLAYS_MAX {
        replays = n as u32;
        let seen_before = unstable_words(&unstable);
        let settled = replay_once(
            archive,
            opts,
            (Variant::of(n), n),
            &open,
            checks,
            tol,
            (&mut copies, &mut unstable),
        )?;
        let progress = !settled.is_empty() || unstable_words(&unstable) > seen_before;
        open.retain(|f| !settled.iter().any(|n| n.seq == f.seq));
        found.extend(settled);
        let more = n < RECHECK_REPLAYS || progress || start.elapsed() < RECHECK_CHEAP;
        if open.is_empty() || !more || start.elapsed() > RECHECK_BUDGET {
            break;
        }
    }
    // What stayed stable in every replay, yet only in values other results of the same copy
    // showed unstable: the same nondeterminism, which these results happened to repeat.
    for f in open {
        let key = (f.site, f.got.len());
        if let Some(unstable) = copies.get(&key).filter(|c| f.site != 0 && c.results >= 2) {
            let words = &unstable.words;
            found.extend(checks.settle_like_copy((f.seq, &f.call), &f.got, &f.want, words));
        }
    }
    found.sort_by_key(|n| n.seq);
    Ok((found, replays))
}

/// Per copy (recorded host destination, size): how many of its results were settled by
/// differing between replays, and the aligned 4-byte words that differed.
type Copies = HashMap<(u64, usize), CopyNoise>;

/// Per failed result (pass, event): the aligned 4-byte words (by offset) in which some replay
/// of the recheck differed from the first replay.
type Unstable = HashMap<(u32, u64), std::collections::BTreeSet<usize>>;

/// How many words the recheck has seen unstable, in all failed results together.
fn unstable_words(unstable: &Unstable) -> usize {
    unstable.values().map(|w| w.len()).sum()
}

#[derive(Default)]
struct CopyNoise {
    results: u32,
    words: std::collections::BTreeSet<usize>,
}

/// How a replay of the recheck is made to run otherwise than the first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `--perturb`: noise kernels and host pauses around the launches.
    Perturbed,
    /// `--sync-after-launch`: every kernel alone on an idle device, as in a recording whose
    /// launches were each slowed (capture's cost) until the device had drained: a result that
    /// depends on what else ran beside the kernel (the order of atomic updates by blocks of
    /// back-to-back launches, a library's reduction that races its own previous kernel) can
    /// come out as recorded only then, and differ in every replay issued back to back.
    Drained,
}

impl Variant {
    /// The `n`th (1-based) replay of a recheck: perturbed, drained, then perturbed again.
    fn of(n: usize) -> Variant {
        if n == 2 {
            Variant::Drained
        } else {
            Variant::Perturbed
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Variant::Perturbed => "--perturb",
            Variant::Drained => "--sync-after-launch",
        }
    }
}

/// What the `n`th (1-based) replay of a recheck fills fresh device allocations with
/// (`--fill-fresh`): a different byte each replay, none of them 0 (what a first replay's fresh
/// memory most often holds), so bytes no recorded work wrote vary between replays.
fn fill_byte(n: usize) -> u8 {
    const FILLS: [u8; 4] = [0xa5, 0x5a, 0xc3, 0x3c];
    FILLS[(n - 1) % FILLS.len()]
}

/// One replay, run otherwise than the first (`variant`, the `n`th of the recheck), dumping the results of the `open`
/// failures, each settled against it.
fn replay_once(
    archive: &Path,
    opts: &Options,
    (variant, n): (Variant, usize),
    open: &[&Failed],
    checks: &mut Checks,
    tol: Tolerance,
    (copies, unstable): (&mut Copies, &mut Unstable),
) -> Result<Vec<Nondeterministic>> {
    let tmp = tempfile::tempdir().context("a folder for the second replay's results")?;
    let mut seqs: Vec<u64> = open.iter().map(|f| f.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let list: Vec<String> = seqs.iter().map(u64::to_string).collect();
    let mut c = rerun_command(archive, opts)?;
    c.arg(variant.flag())
        .arg("--fill-fresh")
        .arg(fill_byte(n).to_string())
        .arg("--dump-d2h")
        .arg(tmp.path())
        .arg("--dump-seqs")
        .arg(list.join(","));
    let out = c
        .stderr(std::process::Stdio::piped())
        .output()
        .context("running the second replay")?;
    let mut again: HashMap<(u32, u64), Vec<u8>> = HashMap::new();
    let mut missing = Vec::new();
    for f in open {
        match std::fs::read(dump_path(tmp.path(), f.pass, f.seq)) {
            Ok(b) => {
                again.insert((f.pass, f.seq), b);
            }
            Err(_) => missing.push(f.seq),
        }
    }
    let mut found = Vec::new();
    for f in open {
        if let Some(b) = again.get(&(f.pass, f.seq)) {
            let words = unstable.entry((f.pass, f.seq)).or_default();
            words.extend(differing_words(&f.got, b));
            let at = (f.seq, f.call.as_str());
            let settled = checks
                .settle(at, &f.got, b, &f.want, tol)
                .or_else(|| checks.settle_within(at, &f.got, &f.want, words, How::Replays));
            if let Some(n) = settled {
                if n.how == How::Replays && f.site != 0 {
                    let c = copies.entry((f.site, f.got.len())).or_default();
                    c.results += 1;
                    c.words.extend(words.iter().copied());
                }
                found.push(n);
            }
        }
    }
    if !missing.is_empty() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let verdict = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v["verdict_line"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("exit status {:?}", out.status.code()));
        bail!(
            "the second replay produced no result for event{} #{} ({verdict}{}{why})",
            if missing.len() == 1 { "" } else { "s" },
            missing
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", #"),
            if why.is_empty() { "" } else { "; " }
        );
    }
    Ok(found)
}
