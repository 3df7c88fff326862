//! The JSON objects the tools print (`--json`), as serde types: the tools write through them
//! and the tests decode every output with them (`deny_unknown_fields`), so a key added, renamed
//! or dropped on one side fails a test. `docs/json.md` describes each one.
//!
//! One vocabulary for one fact across the tools: `events` is the number of event records in
//! `events.bin` after its schema record (trailer excluded), counted from the file when the
//! capture did not end cleanly; `blobs`/`blob_bytes`, `code_objects`/`code_object_bytes`,
//! `events_bin_bytes` (size of events.bin), `active_marker`, `complete`, `pid`, `path`.
//!
//! By tool: `playback.rs` (`hrr-playback`), `pack.rs` (`hrr-pack`); both re-exported here.

pub use crate::ErrorJson;

mod pack;
mod playback;

pub use pack::*;
pub use playback::*;

use serde::{Deserialize, Serialize};

/// The man pages a tool wrote (`hrr-playback --generate-man DIR --json`, `hrr-pack man DIR
/// --json`): the `hrr.man/1` object of docs/json.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManJson {
    /// `hrr.man/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The files written, as paths below the folder given.
    pub files: Vec<String>,
}

impl ManJson {
    /// The object for `files`.
    pub fn new(files: Vec<String>) -> Self {
        ManJson {
            schema: "hrr.man/1".into(),
            ok: true,
            files,
        }
    }
}
