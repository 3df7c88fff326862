//! Every file and folder name of the format, and the grammar of the names that carry a value
//! (`pid-<pid>`, `events.bin.dropped-at-<offset>`, writer temp files, blob files). Pure: nothing
//! here touches the file system except [`list_pid_dirs`], so every other module can use it.
//! See FORMAT.md §1, §7, §9, §10.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

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
/// Small objects a synchronisation needed durable before their own files were written, in a
/// capture that has not finished (`crate::journal`; FORMAT.md §6).
pub const JOURNAL_FILE: &str = "blobs.journal";
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

/// What a folder name starting `pid-` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidName {
    /// Not a process folder name at all (no `pid-` prefix, or no digits after it: `pid-x`).
    NotPid,
    /// Exactly `pid-` and the decimal pid as [`pid_dir_name`] writes it.
    Canonical(u32),
    /// A pid written another way (`pid-02674`, `pid-+12`, `pid- 12`, `pid-99999999999`): why.
    /// Two such names could claim the same process, so they are refused, not read.
    NonCanonical(String),
}

/// Classify a folder name: a process folder is `pid-` followed by the pid in decimal, with no
/// leading zero, sign or space, that fits a u32.
pub fn classify_pid_dir_name(name: &str) -> PidName {
    let Some(rest) = name.strip_prefix(PID_DIR_PREFIX) else {
        return PidName::NotPid;
    };
    let trimmed = rest.trim_matches(|c: char| c.is_ascii_whitespace());
    let unsigned = trimmed
        .strip_prefix(['+', '-'])
        .unwrap_or(trimmed)
        .trim_start_matches(|c: char| c.is_ascii_whitespace());
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return PidName::NotPid;
    }
    if unsigned.len() != rest.len() {
        return PidName::NonCanonical("a sign or space around the pid".into());
    }
    if unsigned.len() > 1 && unsigned.starts_with('0') {
        return PidName::NonCanonical("leading zeros".into());
    }
    match unsigned.parse::<u32>() {
        Ok(pid) => PidName::Canonical(pid),
        Err(_) => PidName::NonCanonical("the pid does not fit 32 bits".into()),
    }
}

/// `pid-<pid>` folder name → pid: the canonical form only (see [`classify_pid_dir_name`]).
pub fn parse_pid_dir_name(name: &str) -> Option<u32> {
    match classify_pid_dir_name(name) {
        PidName::Canonical(pid) => Some(pid),
        _ => None,
    }
}

/// The pid a folder's name claims (`…/pid-<pid>`).
pub fn pid_of_dir_name(dir: &Path) -> Option<u32> {
    parse_pid_dir_name(&dir.file_name()?.to_string_lossy())
}

/// The `pid-*` folders under `root` (real directories only), sorted by pid. A `pid-<pid>` that
/// is a symbolic link is an error ([`Error::Symlink`]: never followed), and so is a folder or
/// link whose name writes a pid non-canonically ([`Error::NonCanonicalPid`]: `pid-02674` beside
/// `pid-2674` would be one process counted twice). Other entries are not process captures and
/// are left alone.
pub fn list_pid_dirs(root: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).at(root)? {
        let entry = entry.at(root)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let class = classify_pid_dir_name(&name);
        if class == PidName::NotPid {
            continue;
        }
        let ft = entry.file_type().at(entry.path())?;
        match class {
            _ if ft.is_symlink() => return Err(Error::Symlink(entry.path())),
            PidName::NonCanonical(why) if ft.is_dir() => {
                return Err(Error::NonCanonicalPid {
                    path: entry.path(),
                    why,
                })
            }
            PidName::Canonical(pid) if ft.is_dir() => out.push((pid, entry.path())),
            _ => {}
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
        assert_eq!(classify_pid_dir_name("pid-0"), PidName::Canonical(0));
        assert_eq!(classify_pid_dir_name("pid-x"), PidName::NotPid);
        assert_eq!(classify_pid_dir_name("pid-"), PidName::NotPid);
        assert_eq!(classify_pid_dir_name("blobs"), PidName::NotPid);
        for bad in [
            "pid-02674",
            "pid-00",
            "pid-+2674",
            "pid--2674",
            "pid- 2674",
            "pid-2674 ",
            "pid-\t7",
            "pid-4294967296",
            "pid-99999999999999999999999",
        ] {
            assert!(
                matches!(classify_pid_dir_name(bad), PidName::NonCanonical(_)),
                "{bad:?}"
            );
            assert_eq!(parse_pid_dir_name(bad), None, "{bad:?}");
        }
        assert_eq!(parse_pid_dir_name("pid-4294967295"), Some(u32::MAX));
        assert_eq!(dropped_tail_name(40), "events.bin.dropped-at-40");
        assert_eq!(blob_file_stem(&blob_file_name("ab")), Some("ab"));
        assert!(!is_blob_file_name("xblob"));
        assert!(is_temp_name(&temp_name("manifest.json", 7, 0)));
        assert_eq!(join_rel("", "a"), "a");
        assert_eq!(join_rel("pid-1", "a"), "pid-1/a");
    }
}
