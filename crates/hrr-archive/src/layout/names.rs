//! Every file and folder name of the format, and the grammar of the names that carry a value
//! (`pid-<pid>`, `events.bin.dropped-at-<offset>`, writer temp files, blob files). Pure: nothing
//! here touches the file system except [`list_pid_dirs`], so every other module can use it.
//! See FORMAT.md §1, §7, §9, §10.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// File name of both manifests (root and per process).
pub const MANIFEST: &str = "manifest.json";
/// File name of the event stream of a process capture.
pub const EVENTS_FILE: &str = "events.bin";
/// Marker present in a process capture while its writer runs.
pub const ACTIVE_MARKER: &str = "active";
/// Folder of host-buffer blobs inside a process capture.
pub const BLOBS_DIR: &str = "blobs";
/// Folder of code objects inside a process capture.
pub const CODE_OBJECTS_DIR: &str = "code_objects";
/// Optional folder written by tooling outside the writer.
pub const REGIONS_DIR: &str = "regions";
/// The redaction record a scrub leaves in a process capture.
pub const REDACTIONS_FILE: &str = "redactions.json";
/// Prefix of a process capture folder: `pid-<decimal pid>`.
pub const PID_DIR_PREFIX: &str = "pid-";
/// File extension of a blob (`blobs/<2 hex>/<32 hex>.blob`).
pub const BLOB_EXTENSION: &str = "blob";
/// Name of the pack index, the first member of a pack's tar.
pub const PACK_INDEX_NAME: &str = "hrr-pack-index.json";
/// Conventional file name ending of a pack.
pub const PACK_SUFFIX: &str = ".hrr.tar.zst";
/// Conventional folder name ending of an archive root (`run.hrr`).
pub const ARCHIVE_SUFFIX: &str = ".hrr";
/// Prefix of the private temp folder an unpack stages into (inside the destination).
pub const UNPACK_TEMP_PREFIX: &str = ".hrr-unpack-";
/// Ending of the staging folder a scrub builds beside the archive (`.<name>.hrr-scrub`).
pub const SCRUB_STAGING_SUFFIX: &str = ".hrr-scrub";

/// `pid-<pid>`.
pub fn pid_dir_name(pid: u32) -> String {
    format!("{PID_DIR_PREFIX}{pid}")
}

/// `pid-<pid>` folder name → pid (exactly the prefix and decimal digits).
pub fn parse_pid_dir_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PID_DIR_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The pid a folder's name claims (`…/pid-<pid>`).
pub fn pid_of_dir_name(dir: &Path) -> Option<u32> {
    parse_pid_dir_name(&dir.file_name()?.to_string_lossy())
}

/// The `pid-*` folders under `root` (real directories only), sorted by pid.
pub fn list_pid_dirs(root: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).at(root)? {
        let entry = entry.at(root)?;
        let name = entry.file_name();
        let Some(pid) = parse_pid_dir_name(&name.to_string_lossy()) else {
            continue;
        };
        if entry.file_type().at(entry.path())?.is_dir() {
            out.push((pid, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Where a repair saves the bytes it cut from events.bin at `offset`.
pub fn dropped_tail_name(offset: u64) -> String {
    format!("{EVENTS_FILE}.dropped-at-{offset}")
}

/// The file name of blob `hex` (32 hex characters).
pub fn blob_file_name(hex: &str) -> String {
    format!("{hex}.{BLOB_EXTENSION}")
}

/// Does `name` end like a blob file (`.blob`)?
pub fn is_blob_file_name(name: &str) -> bool {
    blob_file_stem(name).is_some()
}

/// `<stem>.blob` → `<stem>`.
pub fn blob_file_stem(name: &str) -> Option<&str> {
    name.strip_suffix(BLOB_EXTENSION)?.strip_suffix('.')
}

/// A writer temp file's name for `name`: `.<name>.<pid>.<n>.tmp`.
pub fn temp_name(name: &str, pid: u32, n: u64) -> String {
    format!(".{name}.{pid}.{n}.tmp")
}

/// Is this a writer temp file's name (`.<...>.tmp`)?
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// The staging folder name of a scrub of the archive folder `name`.
pub fn scrub_staging_name(name: &str) -> String {
    format!(".{name}{SCRUB_STAGING_SUFFIX}")
}

/// `prefix/name`, or `name` when `prefix` is empty: a `/`-separated path below an archive or
/// pack root.
pub fn join_rel(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_values_parse_back() {
        assert_eq!(parse_pid_dir_name(&pid_dir_name(1204)), Some(1204));
        assert_eq!(parse_pid_dir_name("pid-"), None);
        assert_eq!(parse_pid_dir_name("pid-1x"), None);
        assert_eq!(dropped_tail_name(40), "events.bin.dropped-at-40");
        assert_eq!(blob_file_stem(&blob_file_name("ab")), Some("ab"));
        assert!(!is_blob_file_name("xblob"));
        assert!(is_temp_name(&temp_name("manifest.json", 7, 0)));
        assert_eq!(join_rel("", "a"), "a");
        assert_eq!(join_rel("pid-1", "a"), "pid-1/a");
    }
}
