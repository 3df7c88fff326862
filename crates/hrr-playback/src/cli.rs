//! Command line: `hrr-playback [ARCHIVE] [flags]`, parsed with clap derive.
//!
//! The offline modes (`--version`, `--info`, `--events`, `--repair`) need no GPU library. Without
//! any of them the archive is replayed with [`ReplayOptions`], converted into the library's
//! [`crate::replay::Options`] by [`ReplayOptions::to_options`]: clap stays in this file.

use std::path::PathBuf;

use clap::{Args, Parser};

/// The exit codes, as every `--help` lists them.
pub const EXIT_CODES: &str = "Exit status: 0 ok; 1 failure; 2 usage (also: a root or pack holding \
several processes, replayed without --pid). A replay ends with its verdict:\n  \
    0 PASS (every D2H comparison passed; the line says when nothing was compared, work was skipped, \
or bytes differed only as they do between two replays: the program's own nondeterminism)\n  \
    0 REPRODUCED (the recorded run failed, and replay fails the same way at the same event)\n  \
    1 MISMATCH (a D2H result differs; with --strict also nondeterministically), or NOT REPRODUCED \
(the recorded failure did not happen)\n  \
    3 FAULT (the GPU raised an error: illegal address, misaligned access, ...; the kernel is named)\n  \
    4 HANG (a wait outlasted --sync-watchdog-ms)\n  \
    5 ERROR (replay could not reissue a call)\n\
Errors: one `hrr-playback: error: <what>: <why>` line on stderr (a format version mismatch: \
`[HRR] Version mismatch in <path>/events.bin: file=<f> reader=<r>`), then an optional `hint:` \
line; with --json also {\"schema\":\"hrr.error/1\",\"ok\":false,\"error\":…,\"hint\":…,\"exit_code\":N} on \
stdout (docs/json.md). --info, --events, --list and --repair need no GPU.";

/// Inspect, repair and replay hrr archives (GPU API call recordings).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "hrr-playback",
    disable_version_flag = true,
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// Archive root (holding pid-<pid>/ folders), one pid-<pid>/ process capture, or a packed
    /// `.hrr.tar.zst` (read from a private temp copy; never repaired in place).
    #[arg(
        value_name = "ARCHIVE",
        required_unless_present_any = ["version", "completions", "generate_man"]
    )]
    pub archive: Option<PathBuf>,

    /// Print the tool version, the archive format version it reads, its source revision and the
    /// GPU runtime it would load; needs neither an archive nor a GPU.
    #[arg(short = 'V', long)]
    pub version: bool,

    /// Summarise the archive (no GPU needed): processes, completeness, event and kernel breakdown.
    #[arg(long)]
    pub info: bool,

    /// Print the whole recorded call sequence, decoded by name (no GPU needed).
    #[arg(long)]
    pub events: bool,

    /// Rewrite crashed captures with a clean trailer and manifest; on a root, every process and
    /// the root index.
    #[arg(long, conflicts_with_all = ["info", "events", "list", "pid"])]
    pub repair: bool,

    /// On a root or a pack: the process to inspect or replay (its pid-<pid>/ folder).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// On a root or a pack: replay every process together, one replay process each (IPC
    /// handles re-paired between them, calls issued in the recorded order across them); a
    /// verdict per process and the worst one's exit code.
    #[arg(long, conflicts_with_all = ["pid", "info", "events", "list", "repair", "extract"])]
    pub all: bool,

    /// List the processes of a root, a pack or a pid-<pid>/ folder (no GPU needed).
    #[arg(long, conflicts_with_all = ["info", "events"])]
    pub list: bool,

    /// Print only errors and the results asked for (no progress, no notices).
    #[arg(short, long)]
    pub quiet: bool,

    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) and exit.
    #[arg(long, value_name = "SHELL", exclusive = true)]
    pub completions: Option<hrr_cli::Shell>,

    /// Write the man page hrr-playback.1 into DIR and exit (`--json`: say which files).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["archive", "completions", "version"])]
    pub generate_man: Option<PathBuf>,

    /// Replay options (also `--json` for `--info` and `--events`).
    #[command(flatten)]
    pub replay: ReplayOptions,
}

/// Options of a replay. Agnostic of the GPU API: every backend reads the same set.
#[derive(Debug, Clone, Args)]
pub struct ReplayOptions {
    /// Machine-readable output (docs/json.md): the replay summary, `--info`, `--list`,
    /// `--repair`, `--version` and errors as one JSON object, `--events` as JSON Lines.
    #[arg(long)]
    pub json: bool,

    /// Relative tolerance of D2H comparisons (0: exact).
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = non_negative_f64)]
    pub rtol: f64,

    /// Absolute tolerance of D2H comparisons (0: exact).
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = non_negative_f64)]
    pub atol: f64,

    /// Do not place allocations at their recorded addresses (translate pointers instead).
    #[arg(long)]
    pub no_placement: bool,

    /// Wait for the GPU after every kernel launch, so a fault names the kernel that caused it.
    #[arg(long)]
    pub sync_after_launch: bool,

    /// Give up on a synchronisation that takes longer than this many milliseconds (0: never).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub sync_watchdog_ms: u64,

    /// Only launch kernels whose name matches (regular expression, or plain substring).
    #[arg(long, value_name = "PATTERN")]
    pub kernel_filter: Option<String>,

    /// Replay the sequence this many times.
    #[arg(long = "loop", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub loop_count: u32,

    /// Do not show progress on stderr.
    #[arg(long)]
    pub no_progress: bool,

    /// GPU driver library to load instead of libcuda.so.1 (or libamdhip64.so for HIP).
    #[arg(long, value_name = "PATH")]
    pub runtime: Option<PathBuf>,

    /// Trace every replayed call on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// On a FAULT, do not replay again with --sync-after-launch to name the kernel behind it.
    #[arg(long)]
    pub no_localize: bool,

    /// Count the program's own nondeterminism (D2H bytes that differ between two replays of
    /// the archive) as a failure: MISMATCH instead of PASS.
    #[arg(long)]
    pub strict: bool,

    /// Time every kernel and graph launch on the GPU (an event pair around each, on its
    /// stream) and end the summary with the kernels by total GPU time (launches, total, mean,
    /// min, max); `--json`: `timing`. HIP: kernel launches and graph launches.
    #[arg(long)]
    pub timing: bool,

    /// On a failed D2H check, do not replay a second time to tell the program's own
    /// nondeterminism apart from a divergence.
    #[arg(long)]
    pub no_recheck: bool,

    /// Replay recorded device REC on this machine's device LIVE (pairs such as 0=1,1=0; an
    /// ordinal not mapped replays on the device of that ordinal). A capture that used several
    /// devices replays on several; mapping them to one device (0=0,1=0) replays it there.
    #[arg(long, value_name = "REC=LIVE[,REC=LIVE...]",
          value_parser = crate::replay::devices::DeviceMap::parse)]
    pub device_map: Option<crate::replay::devices::DeviceMap>,

    /// One replay thread per captured thread: each thread's events in its recorded order, the
    /// threads ordered against each other only around the calls capture ordered (creates,
    /// destroys, frees), synchronisations and D2H results; launches and copies between them run
    /// concurrently. The default replays every event in recorded order on one thread.
    #[arg(long)]
    pub multi_thread: bool,

    /// Issue every recorded launch by itself. By default, runs of 64 or more consecutive plain
    /// launches of one thread on one stream are prepared as CUDA graphs before the clock
    /// starts and launched as such (the summary's `Launch batching` line says how many); off
    /// with --timing, --sync-after-launch, --sync-watchdog-ms, --kernel-filter,
    /// --replace-kernel and --multi-thread. CUDA only.
    #[arg(long)]
    pub no_batch: bool,

    /// Internal (the second replay of a recheck): write the D2H results of --dump-seqs here.
    #[arg(long, value_name = "DIR", hide = true, requires = "dump_seqs")]
    pub dump_d2h: Option<PathBuf>,

    /// Internal: the events whose D2H results --dump-d2h writes.
    #[arg(
        long,
        value_name = "SEQ,...",
        hide = true,
        value_delimiter = ',',
        requires = "dump_d2h"
    )]
    pub dump_seqs: Vec<u64>,

    /// Internal (the second replay of a recheck): a short noise kernel before each launch, so
    /// scheduling differs from the first replay.
    #[arg(long, hide = true)]
    pub perturb: bool,

    /// Internal (the replays of a recheck): fill each device allocation replay makes with
    /// this byte before the program's work reaches it, so bytes the program never wrote differ
    /// from one replay to the next.
    #[arg(long, value_name = "BYTE", hide = true)]
    pub fill_fresh: Option<u8>,

    /// Extracting one launch into a small archive, and replacing kernels.
    #[command(flatten)]
    pub extract: ExtractArgs,
}

/// `--extract` and `--replace-kernel` (`crate::replay::extract`, `crate::replay::replace`).
#[derive(Debug, Clone, Args)]
pub struct ExtractArgs {
    /// Write one launch (or a range of events) as a small archive that replays by itself,
    /// instead of replaying: N (the launch at event #N, as --events shows it), A..B (events A
    /// to B), or NAME[#k] (the k-th launch of kernel NAME, from 1; mangled or demangled).
    #[arg(long, value_name = "LAUNCH", requires = "output")]
    pub extract: Option<String>,

    /// The archive --extract writes (a new folder).
    #[arg(short = 'o', long, value_name = "OUT.hrr", requires = "extract", value_parser = absolute)]
    pub output: Option<PathBuf>,

    /// The device memory --extract snapshots: `all` live allocations, or the allocations the
    /// launch's pointer `args` point into (and one level of pointers stored in those).
    #[arg(long, value_name = "REACH", default_value = "all", value_parser = ["all", "args"])]
    pub extract_reach: String,

    /// Refuse an extraction whose snapshot is larger than this (bytes; K, M, G, T suffixes).
    #[arg(long, value_name = "N", default_value = "8G",
          value_parser = crate::replay::extract::parse_bytes)]
    pub extract_max_bytes: u64,

    /// Launch kernel NAME (mangled or demangled) from the cubin, fatbin or PTX at PATH instead
    /// of the recorded one, with the recorded arguments (repeatable).
    #[arg(long, value_name = "NAME=PATH", value_parser = name_path, conflicts_with = "extract")]
    pub replace_kernel: Vec<(String, PathBuf)>,
}

fn name_path(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok((n.to_string(), absolute(p)?)),
        _ => Err("expected NAME=PATH".into()),
    }
}

impl ReplayOptions {
    /// The replay library's options.
    pub fn to_options(&self) -> crate::replay::Options {
        crate::replay::Options {
            json: self.json,
            rtol: self.rtol,
            atol: self.atol,
            no_placement: self.no_placement,
            sync_after_launch: self.sync_after_launch,
            sync_watchdog_ms: self.sync_watchdog_ms,
            kernel_filter: self.kernel_filter.clone(),
            loop_count: self.loop_count,
            no_progress: self.no_progress,
            runtime: self.runtime.clone(),
            verbose: self.verbose,
            no_localize: self.no_localize,
            strict: self.strict,
            timing: self.timing,
            no_recheck: self.no_recheck,
            dump_d2h: self.dump_d2h.clone().map(|d| (d, self.dump_seqs.clone())),
            perturb: self.perturb,
            fill_fresh: self.fill_fresh,
            device_map: self.device_map.clone().unwrap_or_default(),
            multi_thread: self.multi_thread,
            no_batch: self.no_batch,
            extract: self.extract.request(),
            replace_kernels: self.extract.replace_kernel.clone(),
        }
    }
}

impl ExtractArgs {
    /// The extraction asked, if any.
    fn request(&self) -> Option<crate::replay::extract::Request> {
        use crate::replay::extract::{Reach, Request};
        Some(Request {
            segment: self.extract.clone()?,
            out: self.output.clone()?,
            reach: if self.extract_reach == "args" {
                Reach::Args
            } else {
                Reach::All
            },
            max_bytes: self.extract_max_bytes,
        })
    }
}

/// A path made absolute as it is parsed (a packed archive is replayed from a temp folder:
/// paths the user gave relative to where they are must not move with it).
fn absolute(s: &str) -> Result<PathBuf, String> {
    std::path::absolute(s).map_err(|e| format!("{e}"))
}

fn non_negative_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err("must be a finite number >= 0".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn replay_flags_parse() {
        let cli = Cli::try_parse_from([
            "hrr-playback",
            "a.hrr",
            "--rtol",
            "1e-3",
            "--atol=0.5",
            "--no-placement",
            "--sync-after-launch",
            "--sync-watchdog-ms",
            "500",
            "--kernel-filter",
            "gemm",
            "--loop",
            "3",
            "--no-progress",
            "--runtime",
            "/x/libcuda.so.1",
            "-v",
            "--json",
        ])
        .unwrap();
        let r = &cli.replay;
        assert_eq!(
            (r.rtol, r.atol, r.sync_watchdog_ms, r.loop_count),
            (1e-3, 0.5, 500, 3)
        );
        assert!(r.no_placement && r.sync_after_launch && r.no_progress && r.verbose && r.json);
        assert_eq!(r.kernel_filter.as_deref(), Some("gemm"));
        let o = r.to_options();
        assert_eq!(
            (o.rtol, o.atol, o.sync_watchdog_ms, o.loop_count),
            (1e-3, 0.5, 500, 3)
        );
        assert!(o.no_placement && o.sync_after_launch && o.no_progress && o.verbose && o.json);
        assert_eq!(o.kernel_filter.as_deref(), Some("gemm"));
        assert_eq!(
            o.runtime.as_deref(),
            Some(std::path::Path::new("/x/libcuda.so.1"))
        );
        let d = Cli::try_parse_from(["hrr-playback", "a.hrr"])
            .unwrap()
            .replay;
        assert_eq!((d.rtol, d.atol, d.loop_count), (0.0, 0.0, 1));
        let (o, lib) = (d.to_options(), crate::replay::Options::default());
        assert_eq!(
            (o.rtol, o.atol, o.sync_watchdog_ms, o.loop_count),
            (lib.rtol, lib.atol, lib.sync_watchdog_ms, lib.loop_count)
        );
        assert!(!(o.json || o.no_placement || o.sync_after_launch || o.no_progress || o.verbose));
        assert!(o.kernel_filter.is_none() && o.runtime.is_none());
        assert!(Cli::try_parse_from(["hrr-playback", "a", "--loop", "0"]).is_err());
        assert!(Cli::try_parse_from(["hrr-playback", "a", "--rtol", "-1"]).is_err());
        assert!(Cli::try_parse_from(["hrr-playback"]).is_err());
        assert!(Cli::try_parse_from(["hrr-playback", "--version"]).is_ok());
        assert!(Cli::try_parse_from(["hrr-playback", "a", "--repair", "--info"]).is_err());
    }
}
