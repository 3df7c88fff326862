//! The options of a replay, as a plain library struct: every backend reads the same set.
//! The command line (`crate::cli`) parses its flags and converts them into this.

use std::path::PathBuf;

/// Options of a replay. Agnostic of the GPU API.
#[derive(Debug, Clone)]
pub struct Options {
    /// Machine-readable output: the replay summary as one JSON object.
    pub json: bool,
    /// Relative tolerance of D2H comparisons (0: exact).
    pub rtol: f64,
    /// Absolute tolerance of D2H comparisons (0: exact).
    pub atol: f64,
    /// Do not place allocations at their recorded addresses (translate pointers instead).
    pub no_placement: bool,
    /// Wait for the GPU after every kernel launch, so a fault names the kernel that caused it.
    pub sync_after_launch: bool,
    /// Give up on a synchronisation that takes longer than this many milliseconds (0: never).
    pub sync_watchdog_ms: u64,
    /// Only launch kernels whose name contains this.
    pub kernel_filter: Option<String>,
    /// Replay the sequence this many times (at least 1).
    pub loop_count: u32,
    /// Do not show progress on stderr.
    pub no_progress: bool,
    /// GPU driver library to load instead of the default one of the API.
    pub runtime: Option<PathBuf>,
    /// Trace every replayed call on stderr.
    pub verbose: bool,
    /// On a fault, do not rerun with `--sync-after-launch` to name the kernel behind it.
    pub no_localize: bool,
    /// `--extract`: write the segment as a small archive instead of replaying everything.
    pub extract: Option<super::extract::Request>,
    /// `--replace-kernel NAME=PATH`: launches of kernel NAME use the one of that name in PATH.
    pub replace_kernels: Vec<(String, PathBuf)>,
    /// Hold the program's own nondeterminism (bytes differing between two replays) against it:
    /// `MISMATCH` instead of `PASS`.
    pub strict: bool,
    /// `--timing`: time every kernel and graph launch on the GPU (events around each) and add
    /// a table of kernels by total GPU time to the summary.
    pub timing: bool,
    /// On a failed D2H check, do not replay a second time to tell nondeterminism apart.
    pub no_recheck: bool,
    /// The second replay of a recheck (`super::recheck`): write the D2H results of these
    /// events into this folder.
    pub dump_d2h: Option<(PathBuf, Vec<u64>)>,
    /// The second replay of a recheck: launch a short kernel of replay's own before each
    /// launch, so scheduling differs from the first replay (CUDA; `backend/cuda/noise.rs`).
    pub perturb: bool,
    /// The replays of a recheck: fill each device allocation (`cuMemAlloc`, `cuMemAllocPitch`)
    /// with this byte when replay makes it: what the recorded run left unwritten (a buffer's
    /// tail, a library's scratch) then differs between replays and is told apart like other
    /// run-to-run differences (CUDA).
    pub fill_fresh: Option<u8>,
    /// `--device-map REC=LIVE,...`: the live device each recorded device ordinal replays on
    /// (unmapped: the same ordinal); see `super::devices`.
    pub device_map: super::devices::DeviceMap,
    /// `--multi-thread`: one replay thread per captured thread (`super::threads`).
    pub multi_thread: bool,
    /// `--no-batch`: issue every recorded launch by itself, never runs of them as prepared
    /// graphs (`super::batch`).
    pub no_batch: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            json: false,
            rtol: 0.0,
            atol: 0.0,
            no_placement: false,
            sync_after_launch: false,
            sync_watchdog_ms: 0,
            kernel_filter: None,
            loop_count: 1,
            no_progress: false,
            runtime: None,
            verbose: false,
            no_localize: false,
            extract: None,
            replace_kernels: Vec::new(),
            strict: false,
            timing: false,
            no_recheck: false,
            dump_d2h: None,
            perturb: false,
            fill_fresh: None,
            device_map: Default::default(),
            multi_thread: false,
            no_batch: false,
        }
    }
}
