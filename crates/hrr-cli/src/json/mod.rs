//! The JSON objects the tools print (`--json`), as serde types: the tools write through them
//! and the tests decode every output with them (`deny_unknown_fields`), so a key added, renamed
//! or dropped on one side fails a test. `docs/json.md` describes each one.
//!
//! One vocabulary for one fact across the tools: `events` is the number of event records in
//! `events.bin` after its schema record (trailer excluded), counted from the file when the
//! capture did not end cleanly; `blobs`/`blob_bytes`, `code_objects`/`code_object_bytes`,
//! `events_bin_bytes` (size of events.bin), `active_marker`, `complete`, `pid`, `path`.
//!
//! By tool: `--version`, `--repair` and the process rows of `hrr-playback --list` here,
//! `playback.rs` (`--info`, `--events`, replay), `pack.rs` (`hrr-pack`); all are re-exported
//! here.

use serde::{Deserialize, Serialize};

pub use crate::ErrorJson;

mod pack;
mod playback;

pub use pack::*;
pub use playback::*;

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
