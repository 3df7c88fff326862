//! `hrr-playback`: `--version`, `--repair`, `--list`, `--info`, `--events` and replay.

use serde::{Deserialize, Serialize};

/// What `--version` reports (`--json`: the `hrr.version/1` object of docs/json.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionJson {
    /// `hrr.version/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// `hrr-playback`.
    pub tool: String,
    /// The tool version.
    pub version: String,
    /// The events.bin format version this build reads.
    pub format_version: u16,
    /// Source revision it was built from.
    pub revision: String,
    /// The CUDA driver it would load (`<path>[ (-> <real path>)]` or `none found (…)`).
    pub runtime: String,
    /// The HIP runtime it would load, described the same way.
    pub hip_runtime: String,
}

/// One process in `--repair --json` (schema `hrr.repair/1`, docs/json.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairedJson {
    /// The `pid-<pid>/` folder as reached from the path given.
    pub path: String,
    /// `already_complete`, `repaired` or `failed`.
    pub outcome: String,
    /// Events in the capture after the repair (null when it failed).
    pub events: Option<u64>,
    /// Bytes cut from a torn tail.
    pub dropped_bytes: u64,
    /// Where those bytes were saved, or null.
    pub saved_tail: Option<String>,
    /// Why the capture is still incomplete (writer marks), empty when it is complete now.
    pub still_incomplete: Vec<String>,
    /// Objects written back from the capture's blob journal (`blobs.journal`: small objects a
    /// synchronisation made durable before their files were written; FORMAT.md §6).
    #[serde(default)]
    pub journal_restored: u64,
    /// Why the repair failed, or null.
    pub error: Option<String>,
}

/// `--repair --json`: one object.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairJson {
    /// `hrr.repair/1`.
    pub schema: String,
    /// No process failed and the root index (on a root) was rebuilt.
    pub ok: bool,
    /// The path as given.
    pub path: String,
    /// `root` or `process`.
    pub kind: String,
    /// One entry per process capture.
    pub processes: Vec<RepairedJson>,
    /// Why the root index could not be rebuilt (null on success, and for a process folder).
    pub root_index_error: Option<String>,
    /// Captures repaired.
    pub repaired: u64,
    /// Captures that were complete already.
    pub already_complete: u64,
    /// Captures whose repair failed.
    pub failed: u64,
}

/// One process row: `hrr-playback --list` and the `processes` of a root's `--info`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessRowJson {
    /// Process id.
    pub pid: u32,
    /// Parent process id (null when the manifest cannot be read).
    pub parent_pid: Option<u32>,
    /// The capture ended cleanly and everything agrees.
    pub complete: bool,
    /// Events (see the module docs), null when events.bin cannot be read.
    pub events: Option<u64>,
    /// Blob files, null when they cannot be counted.
    pub blobs: Option<u64>,
    /// The `pid-<pid>/` folder as reached from the path given.
    pub path: String,
    /// Why it is incomplete (empty when complete).
    pub incomplete_reasons: Vec<String>,
    /// Why it could not be read, or null.
    pub error: Option<String>,
}

/// `hrr-playback --list --json` (`hrr.processes/1`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessesJson {
    /// `hrr.processes/1`.
    pub schema: String,
    /// Every capture could be read.
    pub ok: bool,
    /// The root (or process folder) as given.
    pub path: String,
    /// One row per process, by pid.
    pub processes: Vec<ProcessRowJson>,
}

/// One call name of `--info`'s `calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCountJson {
    /// The call, by its schema name.
    pub name: String,
    /// How often it was recorded.
    pub count: u64,
}

/// One kernel of `--info`'s `kernels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCountJson {
    /// As recorded (mangled).
    pub name: String,
    /// As a person reads it (the text view's).
    pub demangled: String,
    /// Launches of it.
    pub launches: u64,
}

/// `hrr-playback DIR --info --json` on one process capture (`hrr.info/1`, `kind` `process`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfoProcessJson {
    /// `hrr.info/1`.
    pub schema: String,
    /// Always true (a capture that cannot be read is an error object instead).
    pub ok: bool,
    /// `process`.
    pub kind: String,
    /// The folder as given (or as reached from the root given).
    pub path: String,
    /// Process id (manifest, else the folder name; null when neither says).
    pub pid: Option<u32>,
    /// Parent process id (null without a manifest).
    pub parent_pid: Option<u32>,
    /// API family of the schema record (`cuda-driver`, `hip`), null without one.
    pub api: Option<String>,
    /// Its version, null without a schema record.
    pub api_version: Option<u64>,
    /// The capture ended cleanly and everything agrees.
    pub complete: bool,
    /// Why not (empty when complete).
    pub incomplete_reasons: Vec<String>,
    /// Events (see the module docs): writer marks included, trailer excluded.
    pub events: u64,
    /// Thread ids in first-seen order.
    pub threads: Vec<u64>,
    /// `threads.len()`.
    pub thread_count: u64,
    /// First event's timestamp (null without events).
    pub first_timestamp_ns: Option<u64>,
    /// Last event's timestamp.
    pub last_timestamp_ns: Option<u64>,
    /// Their difference.
    pub duration_ns: Option<u64>,
    /// Blob files.
    pub blobs: u64,
    /// Their size.
    pub blob_bytes: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Their size.
    pub code_object_bytes: u64,
    /// Size of events.bin.
    pub events_bin_bytes: u64,
    /// Kernel launches.
    pub kernel_launches: u64,
    /// CUDA graph launches.
    pub graph_launches: u64,
    /// Device-to-host copies with a recorded result (what replay checks).
    pub d2h_copies: u64,
    /// Calls whose recorded result was not success.
    pub failed_calls: u64,
    /// Payloads that did not match their schema entry.
    pub undecodable_payloads: u64,
    /// Calls by count descending, then name.
    pub calls: Vec<CallCountJson>,
    /// Kernels by launches descending, then name.
    pub kernels: Vec<KernelCountJson>,
    /// Why manifest.json could not be used, or null.
    pub manifest_error: Option<String>,
    /// The manifest's `metadata` object as recorded (free-form), or null.
    pub metadata: Option<serde_json::Value>,
    /// Device name picked out of `metadata`, or null.
    pub device_name: Option<String>,
    /// Compute capability / GPU architecture picked out of `metadata`, or null.
    pub compute_capability: Option<String>,
    /// Driver or runtime version (`13.0 (13000)`), or null.
    pub driver_version: Option<String>,
    /// Calls replay cannot reproduce: `{call: [reason, ...]}`.
    pub unreplayable_calls: std::collections::BTreeMap<String, Vec<String>>,
    /// Driver symbols handed out unrecorded: `{call: count}`.
    pub passthrough_calls: std::collections::BTreeMap<String, u64>,
    /// An `active` marker is present.
    pub active_marker: bool,
    /// Where an archive written by `--extract` came from (the manifest's `extracted_from`:
    /// `source`, `segment`, `first_event`, `last_event`, `kernels`, `reach`, `snapshot_bytes`,
    /// `fault`); absent for a capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted_from: Option<serde_json::Value>,
    /// The devices the capture opened contexts on, ascending (replay opens as many).
    #[serde(default)]
    pub context_devices: Vec<i64>,
}

/// `hrr-playback ROOT --info --json` on an archive root (`hrr.info/1`, `kind` `root`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfoRootJson {
    /// `hrr.info/1`.
    pub schema: String,
    /// Always true (captures that cannot be read have their `error` set, and the tool exits 1).
    pub ok: bool,
    /// `root`.
    pub kind: String,
    /// The root as given.
    pub path: String,
    /// Capture mode (root manifest, else `in-tree`).
    pub capture_mode: String,
    /// Owner pid (root manifest, else the rule applied in memory).
    pub owner_pid: u32,
    /// `ok`, `stale`, `missing` or `invalid` (then the index was rebuilt in memory).
    pub root_manifest: String,
    /// One row per process, by pid.
    pub processes: Vec<ProcessRowJson>,
    /// Further findings.
    pub notes: Vec<String>,
    /// A root holding one (readable) process: that process's object; else null.
    pub process: Option<Box<InfoProcessJson>>,
}

/// One line of `hrr-playback --events --json` (JSON Lines, no `schema`/`ok`: one object per
/// event, keys in this order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventJson {
    /// The process, only when several processes of a root are listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Sequence number.
    pub seq: u64,
    /// Timestamp.
    pub timestamp_ns: u64,
    /// Recording thread.
    pub thread_id: u64,
    /// Record type (call id of the schema).
    #[serde(rename = "type")]
    pub kind: u16,
    /// The call's name (`type-0x<id>` when the schema does not name it).
    pub name: String,
    /// Every field by name: integers as numbers; addresses, handles, bytes and object ids as hex
    /// strings; absent objects as null (empty when unknown or undecodable).
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// Payload size of a record type the schema does not name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_bytes: Option<u64>,
    /// Why a payload did not match its schema entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `d2h_checks` of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct D2hChecksJson {
    /// `exact` + `within_tol`.
    pub pass: u64,
    /// Identical bytes.
    pub exact: u64,
    /// Equal within `--rtol/--atol`.
    pub within_tol: u64,
    /// Different.
    pub fail: u64,
    /// Not compared: no recorded result, or differing only in redacted ranges.
    pub skipped: u64,
    /// Of `skipped`: differing only in ranges a scrub redacted.
    pub skipped_redacted: u64,
    /// Differing from the recording only in bytes that also differ between two replays (the
    /// program's own nondeterminism; not in `fail`).
    pub nondeterministic: u64,
    /// Of the results compared, those the recording kept as digests (absent before them).
    #[serde(default)]
    pub by_digest: u64,
    /// Of the results compared, what allocations held when the program freed them
    /// (`hrrFreeCheck`: a process that copied nothing back; absent before them).
    #[serde(default)]
    pub at_free: u64,
}

/// One of `unreproducible_calls` of the replay summary: a recorded call that changed state
/// and that replay cannot reproduce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnreproducibleCallJson {
    /// The call, as recorded.
    pub call: String,
    /// Its first event (`null` for a call capture passed through unrecorded).
    pub first_seq: Option<u64>,
    /// How often it was recorded (successfully), or passed through.
    pub count: u64,
    /// Why replay cannot reproduce it.
    pub why: String,
}

/// One of `nondeterministic` of the replay summary: a D2H result part of which differed
/// between two replays of the archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NondeterministicJson {
    /// Its event.
    pub event: u64,
    /// Its call.
    pub call: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Bytes that differed between the two replays.
    pub differing: u64,
    /// The first of them.
    pub first_offset: u64,
    /// How it was told apart: `replays`, `reordered` or `same_copy` (docs/json.md).
    pub how: String,
}

/// `allocations` of the replay summary (`hrr-playback` counts into it as it places them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocationsJson {
    /// At their recorded address.
    pub placed: u64,
    /// Elsewhere, pointers translated.
    pub translated: u64,
    /// Host-visible memory (pinned, registered) at its recorded address.
    #[serde(default)]
    pub host_placed: u64,
    /// Host-visible memory elsewhere (managed memory always), pointers translated.
    #[serde(default)]
    pub host_translated: u64,
    /// Why the first placement was refused, or null.
    pub first_refusal: Option<String>,
}

/// `stopped_at` of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedAtJson {
    /// The event.
    pub seq: u64,
    /// The status it failed with.
    pub status: String,
}

/// `recorded_failure` of the replay summary (`hrr-playback`'s prescan finds it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedFailureJson {
    /// The event.
    pub seq: u64,
    /// Its call.
    pub call: String,
    /// The recorded status.
    pub code: i32,
}

/// One argument of a [`LaunchSiteJson`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchArgJson {
    /// Offset in the argument buffer.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// Value (little endian, up to 8 bytes), hex.
    pub value: String,
    /// The recorded allocation an 8-byte argument points into (`[start, +size)`), or null.
    pub allocation: Option<String>,
    /// Looks like a device address but lies in no recorded allocation.
    pub suspicious: bool,
}

/// `fault_site` / `last_launch` of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSiteJson {
    /// Its event.
    pub seq: u64,
    /// Which launch of the replay (1-based).
    pub launch: u64,
    /// Kernel name, demangled.
    pub kernel: String,
    /// Kernel name as recorded.
    pub kernel_mangled: String,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared_mem: u32,
    /// The arguments.
    pub args: Vec<LaunchArgJson>,
    /// Found by rerunning with `--sync-after-launch`.
    pub localized_by_rerun: bool,
}

/// Replay's `--json` summary (`hrr.replay/1`): the keys `crates/hrr-playback/src/replay/report.rs`
/// (`write_json`) documents, in its order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayJson {
    /// `hrr.replay/1`.
    pub schema: String,
    /// The verdict's exit code is 0 (`result` is `PASS`).
    pub ok: bool,
    /// The process capture replayed, its path as given.
    pub archive: String,
    /// Events in the capture.
    pub events: u64,
    /// Kernel launches in the capture.
    pub kernels: u64,
    /// Blobs in the capture.
    pub blobs: u64,
    /// Code objects in the capture.
    pub code_objects: u64,
    /// Threads the capture recorded.
    pub threads_captured: u64,
    /// The device replaying.
    pub device: String,
    /// The driver or runtime library loaded.
    pub runtime: String,
    /// `single-threaded`.
    pub mode: String,
    /// `load_ms` + `execute_ms`.
    pub wall_time_ms: f64,
    /// Loading the runtime and the code objects.
    pub load_ms: f64,
    /// Replaying the events (every `--loop`).
    pub execute_ms: f64,
    /// Threads replaying.
    pub threads_used: u32,
    /// Kernels launched (graph launches not counted).
    pub kernels_launched: u64,
    /// Launches left out by `--kernel-filter`.
    pub kernels_filtered: u64,
    /// CUDA graphs launched.
    pub graphs_launched: u64,
    /// D2H comparisons.
    pub d2h_checks: D2hChecksJson,
    /// The first failed comparisons, described.
    pub mismatches: Vec<String>,
    /// The first calls not reissued, `#<seq> <call>: <why>`.
    pub skipped_calls: Vec<String>,
    /// Calls not reissued, all of them.
    pub skipped_calls_total: u64,
    /// Recorded state-changing calls replay cannot reproduce (named before replay starts).
    pub unreproducible_calls: Vec<UnreproducibleCallJson>,
    /// D2H results part of which differed between two replays.
    pub nondeterministic: Vec<NondeterministicJson>,
    /// Why failed D2H checks could not (all) be rechecked by a second replay, or null.
    pub recheck_error: Option<String>,
    /// Replays the recheck ran (0: no check failed, or `--no-recheck`).
    #[serde(default)]
    pub recheck_replays: u32,
    /// How recorded allocations landed.
    pub allocations: AllocationsJson,
    /// The failure that stopped the replay, or null.
    pub error: Option<String>,
    /// `PASS` (exit code 0) or `FAIL`.
    pub result: String,
    /// `PASS`, `REPRODUCED`, `MISMATCH`, `NOT REPRODUCED`, `FAULT`, `HANG` or `ERROR`.
    pub verdict: String,
    /// The human verdict line.
    pub verdict_line: String,
    /// The exit status (0, 1, 3, 4, 5).
    pub exit_code: u8,
    /// The event that stopped the replay, or null.
    pub stopped_at: Option<StoppedAtJson>,
    /// The GPU failure the recorded run hit, or null.
    pub recorded_failure: Option<RecordedFailureJson>,
    /// The launch a fault is attributed to, or null.
    pub fault_site: Option<LaunchSiteJson>,
    /// On a hang, the last kernel launched, or null.
    pub last_launch: Option<LaunchSiteJson>,
    /// `--replace-kernel`: each replaced kernel and the launches that used its replacement.
    #[serde(default)]
    pub replaced_kernels: Vec<ReplacedKernelJson>,
    /// `--timing`: kernels (and graph launches) by total GPU time.
    #[serde(default)]
    pub timing: Vec<KernelTimingJson>,
    /// Only in a recheck's second replay (hidden `--perturb`): what perturbed it.
    #[serde(default)]
    pub perturbation: Option<String>,
    /// Launch batching: runs of launches issued as graphs prepared before the clock, or null
    /// when nothing was batched.
    #[serde(default)]
    pub batching: Option<BatchingJson>,
}

/// The `batching` object of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingJson {
    /// Runs prepared as graphs before the clock.
    pub runs: u64,
    /// Their launches.
    pub launches: u64,
    /// The graphs they were prepared as.
    pub graphs: u64,
    /// Runs issued launch by launch after all (every `--loop` pass).
    pub fell_back: u64,
    /// Why the first of those fell back, or null.
    pub first_fallback: Option<String>,
    /// Runs that could not be prepared.
    pub unprepared: u64,
    /// Why the first could not, or null.
    pub unprepared_why: Option<String>,
}

/// One `timing` entry of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelTimingJson {
    /// The kernel (demangled), or `graph 0x…` for the launches of one graph.
    pub kernel: String,
    /// Launches timed.
    pub launches: u64,
    /// Their GPU time in all, in milliseconds.
    pub total_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Smallest.
    pub min_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// One `replaced_kernels` entry of the replay summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplacedKernelJson {
    /// The kernel (demangled).
    pub kernel: String,
    /// The file its replacement was loaded from, as given.
    pub path: String,
    /// Launches that used the replacement.
    pub launches: u64,
}

/// `hrr-playback ROOT --all --json` (`hrr.replay-all/1`): every process replayed together
/// (`crates/hrr-playback/src/all.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayAllJson {
    /// `hrr.replay-all/1`.
    pub schema: String,
    /// Per process, in pid order.
    pub processes: Vec<ReplayedProcessJson>,
    /// The worst process's verdict (`ERROR` when one printed no summary).
    pub verdict: String,
    /// The worst process's exit code.
    pub exit_code: u8,
    /// Every process passed (`exit_code` 0).
    pub ok: bool,
}

/// One process of `hrr.replay-all/1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedProcessJson {
    /// The recorded pid (its `pid-<pid>/` folder).
    pub pid: u32,
    /// Its replay's exit code.
    pub exit_code: u8,
    /// Its replay summary; null when it printed none (it crashed, or was stopped).
    pub replay: Option<ReplayJson>,
    /// Why `--all` stopped it (no progress after another process failed), or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}
