//! The pack index (the first member of every pack: every folder, every file with its size and
//! BLAKE3, a listing of every process capture), the constants of the packed form, its errors, and
//! the path rules the writer and the reader share. See FORMAT.md §9.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::blobs::count_objects;
use crate::error::Error;
use crate::layout::{self, Target, EVENTS_FILE};
use crate::manifest;

/// Name of the pack index, the first member of the tar.
pub use crate::layout::names::PACK_INDEX_NAME as INDEX_NAME;

/// `schema` value of the index this library writes; it reads any `hrr.pack-index/1`.
pub const INDEX_SCHEMA: &str = "hrr.pack-index/1";

/// Largest pack index accepted.
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

/// Largest GNU long name accepted.
pub const MAX_NAME_BYTES: u64 = 4096;

/// Modification time of every tar header (tar's customary deterministic timestamp, 2006-07-24).
pub const TAR_MTIME: u64 = 1_153_704_088;

/// Conventional file name ending of a pack.
pub use crate::layout::names::PACK_SUFFIX;

/// zstd levels a pack may be written with (decoding them needs at most an 8 MiB window).
pub const LEVELS: std::ops::RangeInclusive<i32> = 1..=19;

/// Largest zstd window (log2) the reader accepts: 16 MiB, so a hostile pack cannot make it
/// allocate more.
pub const WINDOW_LOG_MAX: u32 = 24;
/// Size of the I/O buffers of the writer and the reader.
pub(crate) const BUF: usize = 1 << 20;

/// What the pack holds: an archive root, or one process capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackKind {
    /// An archive root with `pid-*/` folders.
    Root,
    /// One `pid-<pid>/` folder.
    Process,
}

/// One file of the pack, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackFile {
    /// Path below the pack's root folder, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Full BLAKE3 hash of the content, 64 lower-case hex characters.
    pub blake3: String,
}

/// Summary of one process capture (in a pack index, or listed from a folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessListing {
    /// Folder below the root (`pid-1204`), empty when the pack is that folder.
    pub dir: String,
    /// Process id (manifest, else folder name; 0 when neither says).
    pub pid: u32,
    /// The manifest says the capture ended cleanly.
    pub complete: bool,
    /// An `active` marker is present (capture running, or killed before its clean shutdown).
    pub active: bool,
    /// The capture was scrubbed of secrets (`hrr-pack scrub`).
    pub scrubbed: bool,
    /// Events: the records of events.bin after the schema record, trailer excluded (the count
    /// `hrr-playback --info` shows). The manifest's count when it says the capture ended
    /// cleanly, else counted from events.bin (a crashed capture's manifest predates its last
    /// records).
    pub event_count: u64,
    /// Size of events.bin.
    pub events_bytes: u64,
    /// Blob files.
    pub blobs: u64,
    /// Their total size.
    pub blob_bytes: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Their total size.
    pub code_object_bytes: u64,
    /// Why the manifest could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_error: Option<String>,
}

/// The pack index: the first member of every pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackIndex {
    /// `hrr.pack-index/1`.
    pub schema: String,
    /// events.bin format version of the packer.
    pub format_version: u16,
    /// Name of the top folder in the tar (and of the folder unpack creates).
    pub root: String,
    /// Whether that folder is an archive root or one process capture.
    pub kind: PackKind,
    /// Packed with `--force` although a capture was running or left writer state behind.
    #[serde(default)]
    pub forced: bool,
    /// Sum of the file sizes.
    pub total_bytes: u64,
    /// One entry per process capture.
    pub processes: Vec<ProcessListing>,
    /// Every folder below the root, in tar order.
    pub dirs: Vec<String>,
    /// Every file, in tar order.
    pub files: Vec<PackFile>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a tar member is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsafeEntry {
    /// A symbolic link.
    Symlink,
    /// A hard link.
    HardLink,
    /// A character or block device.
    Device,
    /// A FIFO.
    Fifo,
    /// A GNU sparse file.
    Sparse,
    /// PAX extended headers (this writer never emits them).
    Pax,
    /// A GNU long link name (this writer never emits links).
    LongLink,
    /// Another member type (the type byte).
    OtherType(u8),
    /// setuid, setgid or sticky bits (the mode).
    SetId(u32),
    /// An absolute path.
    Absolute,
    /// A `..` component.
    ParentDir,
    /// An empty, `.`, non-UTF-8 or otherwise malformed name.
    BadName(String),
    /// Not below the pack's root folder.
    OutsideRoot,
    /// The same path twice.
    Duplicate,
    /// Not listed in the pack index.
    NotInIndex,
    /// Its size differs from the index.
    SizeMismatch {
        /// Size in the tar header.
        tar: u64,
        /// Size in the index.
        index: u64,
    },
    /// A GNU long name longer than [`MAX_NAME_BYTES`].
    LongName(u64),
}

impl fmt::Display for UnsafeEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsafeEntry::Symlink => f.write_str("symbolic links are refused"),
            UnsafeEntry::HardLink => f.write_str("hard links are refused"),
            UnsafeEntry::Device => f.write_str("device files are refused"),
            UnsafeEntry::Fifo => f.write_str("FIFOs are refused"),
            UnsafeEntry::Sparse => f.write_str("sparse files are refused"),
            UnsafeEntry::Pax => f.write_str("PAX extended headers are refused"),
            UnsafeEntry::LongLink => f.write_str("link names are refused"),
            UnsafeEntry::OtherType(t) => write!(f, "member type {:?} is refused", *t as char),
            UnsafeEntry::SetId(m) => write!(f, "setuid/setgid/sticky mode {m:o} is refused"),
            UnsafeEntry::Absolute => f.write_str("absolute paths are refused"),
            UnsafeEntry::ParentDir => f.write_str("`..` in a path is refused"),
            UnsafeEntry::BadName(why) => write!(f, "bad name: {why}"),
            UnsafeEntry::OutsideRoot => f.write_str("outside the pack's root folder"),
            UnsafeEntry::Duplicate => f.write_str("appears twice"),
            UnsafeEntry::NotInIndex => f.write_str("not listed in the pack index"),
            UnsafeEntry::SizeMismatch { tar, index } => {
                write!(f, "size {tar} differs from the index ({index})")
            }
            UnsafeEntry::LongName(n) => {
                write!(f, "long name of {n} bytes (limit {MAX_NAME_BYTES})")
            }
        }
    }
}

/// Errors packing and unpacking.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// An archive error (layout, manifest, link in the way...).
    #[error(transparent)]
    Archive(#[from] Error),
    /// An operating-system error on a path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The capture is running, or left writer state behind.
    #[error("{}: {why}; wait for the capture to end or run `hrr-playback {} --repair` (or pack anyway with --force)", dir.display(), dir.display())]
    Active {
        /// The process capture.
        dir: PathBuf,
        /// What was found.
        why: String,
    },
    /// Something in the archive folder is neither a regular file nor a folder.
    #[error("{}: not a regular file or folder; packs hold only files and folders", .0.display())]
    Special(PathBuf),
    /// A name that is not UTF-8.
    #[error("{}: file name is not UTF-8", .0.display())]
    NonUtf8(PathBuf),
    /// A file changed between hashing and packing.
    #[error("{}: changed while being packed", .0.display())]
    Changed(PathBuf),
    /// Not a pack at all.
    #[error("{}: not an hrr pack: {reason}", path.display())]
    NotAPack {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The pack index is malformed.
    #[error("{}: bad pack index: {reason}", path.display())]
    BadIndex {
        /// The pack.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A member that must not be unpacked.
    #[error("{}: member `{entry}`: {kind}", path.display())]
    Unsafe {
        /// The pack.
        path: PathBuf,
        /// The member's name as stored.
        entry: String,
        /// What is wrong.
        kind: UnsafeEntry,
    },
    /// A file's content does not match the index.
    #[error("{}: `{entry}` is corrupt: its BLAKE3 hash {found} differs from the pack index ({expected})", path.display())]
    HashMismatch {
        /// The pack.
        path: PathBuf,
        /// The file.
        entry: String,
        /// Hash in the index.
        expected: String,
        /// Hash of what was read.
        found: String,
    },
    /// The compressed stream or the tar is damaged.
    #[error("{}: damaged {} `{entry}`: {source}", path.display(), if *after { "after" } else { "while reading" })]
    Corrupt {
        /// The pack.
        path: PathBuf,
        /// The member being read (or, with `after`, the last good one).
        entry: String,
        /// The damage was found between members, after `entry`.
        after: bool,
        /// The decoder's error.
        source: io::Error,
    },
    /// Files or folders of the index never came.
    #[error("{}: {} listed in the pack index missing from the pack: {}", path.display(), if missing.len() == 1 { "entry" } else { "entries" }, missing.join(", "))]
    Missing {
        /// The pack.
        path: PathBuf,
        /// Their paths.
        missing: Vec<String>,
    },
    /// The destination already exists.
    #[error("{}: already exists; hrr-pack never overwrites (remove it or choose another destination)", .0.display())]
    Exists(PathBuf),
}

impl PackError {
    /// The member of the pack the error is about, when it is about one.
    pub fn entry(&self) -> Option<&str> {
        match self {
            PackError::Unsafe { entry, .. }
            | PackError::HashMismatch { entry, .. }
            | PackError::Corrupt { entry, .. } => Some(entry),
            PackError::Missing { missing, .. } => missing.first().map(String::as_str),
            _ => None,
        }
    }
}

/// `Result` with [`PackError`].
pub type PackResult<T> = std::result::Result<T, PackError>;

/// A [`PackError::Corrupt`] of the pack at `path`, found reading `entry` (with `after`: after it).
pub(crate) fn corrupt<'a>(
    path: &'a Path,
    entry: &'a str,
    after: bool,
) -> impl Fn(io::Error) -> PackError + 'a {
    move |source| PackError::Corrupt {
        path: path.to_path_buf(),
        entry: entry.to_string(),
        after,
        source,
    }
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
    move |source| PackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Summaries of every process capture under `path` (a root or one `pid-<pid>/`), from the
/// manifests and the files on disk; what `hrr-pack list` shows for a folder.
pub fn list_dir(path: &Path) -> PackResult<(PackKind, Vec<ProcessListing>)> {
    let (kind, dirs) = match layout::resolve(path)? {
        Target::Root { processes, .. } => (
            PackKind::Root,
            processes
                .into_iter()
                .map(|(_, d)| {
                    let rel = crate::fsutil::name_of(&d);
                    (rel, d)
                })
                .collect::<Vec<_>>(),
        ),
        Target::Process { dir } => (PackKind::Process, vec![(String::new(), dir)]),
    };
    let mut out = Vec::new();
    for (rel, dir) in dirs {
        out.push(describe_process(&rel, &dir)?);
    }
    Ok((kind, out))
}

fn describe_process(rel: &str, dir: &Path) -> PackResult<ProcessListing> {
    let objects = count_objects(dir)?;
    let (m, err) = match manifest::read_process_manifest(dir) {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(ProcessListing {
        dir: rel.to_string(),
        pid: m
            .as_ref()
            .map(|m| m.status.pid)
            .or_else(|| layout::pid_of(dir))
            .unwrap_or(0),
        complete: m.as_ref().is_some_and(|m| m.status.complete),
        active: layout::has_active_marker(dir),
        scrubbed: m
            .as_ref()
            .is_some_and(|m| m.extra.get("scrubbed") == Some(&Value::Bool(true))),
        event_count: match &m {
            Some(m) if m.status.complete => m.status.event_count,
            _ => crate::reader::EventReader::scan_headers(&dir.join(EVENTS_FILE)).map_or_else(
                |_| m.as_ref().map_or(0, |m| m.status.event_count),
                |r| r.records,
            ),
        },
        events_bytes: fs::symlink_metadata(dir.join(EVENTS_FILE)).map_or(0, |m| m.len()),
        blobs: objects.blobs,
        blob_bytes: objects.blob_bytes,
        code_objects: objects.code_objects,
        code_object_bytes: objects.code_object_bytes,
        manifest_error: err,
    })
}

pub(crate) fn read_retry(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Read `r` to its end through `buf`, handing each chunk to `each`; a read error becomes
/// `on_error`'s. Returns the bytes read.
pub(crate) fn read_chunks<E>(
    r: &mut impl Read,
    buf: &mut [u8],
    on_error: impl FnOnce(io::Error) -> E,
    mut each: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<u64, E> {
    let mut total = 0u64;
    loop {
        match read_retry(r, buf) {
            Err(e) => return Err(on_error(e)),
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                each(&buf[..n])?;
            }
        }
    }
}

/// Check a `/`-separated relative path: non-empty normal components only.
pub(crate) fn check_rel(rel: &str) -> Result<(), UnsafeEntry> {
    if rel.starts_with('/') {
        return Err(UnsafeEntry::Absolute);
    }
    if rel.is_empty() {
        return Err(UnsafeEntry::BadName("empty".into()));
    }
    for c in rel.split('/') {
        match c {
            ".." => return Err(UnsafeEntry::ParentDir),
            "" | "." => return Err(UnsafeEntry::BadName(format!("`{rel}`"))),
            _ if c.contains(['\0', '\\']) => return Err(UnsafeEntry::BadName(format!("`{rel}`"))),
            _ => {}
        }
    }
    Ok(())
}

pub(crate) fn validate_index(path: &Path, index: &PackIndex) -> PackResult<()> {
    let bad = |reason: String| PackError::BadIndex {
        path: path.to_path_buf(),
        reason,
    };
    if !index.schema.starts_with("hrr.pack-index/") {
        return Err(bad(format!("unknown schema `{}`", index.schema)));
    }
    if index.schema != INDEX_SCHEMA {
        return Err(bad(format!(
            "schema `{}` is newer than this reader ({INDEX_SCHEMA})",
            index.schema
        )));
    }
    if index.root.contains('/') || check_rel(&index.root).is_err() {
        return Err(bad(format!(
            "root `{}` is not a plain folder name",
            index.root
        )));
    }
    let mut seen = HashSet::new();
    let mut total = 0u64;
    for d in &index.dirs {
        check_rel(d).map_err(|k| bad(format!("folder `{d}`: {k}")))?;
        if !seen.insert(d.as_str()) {
            return Err(bad(format!("folder `{d}` listed twice")));
        }
    }
    for f in &index.files {
        check_rel(&f.path).map_err(|k| bad(format!("file `{}`: {k}", f.path)))?;
        if !seen.insert(f.path.as_str()) {
            return Err(bad(format!("`{}` listed twice", f.path)));
        }
        if f.blake3.len() != 64 || !f.blake3.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!("`{}`: malformed hash", f.path)));
        }
        total = total
            .checked_add(f.size)
            .ok_or_else(|| bad("sizes overflow".into()))?;
    }
    if total != index.total_bytes {
        return Err(bad(format!(
            "total_bytes {} differs from the sum of the file sizes {total}",
            index.total_bytes
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_checked() {
        assert!(check_rel("pid-1/blobs/ab/x.blob").is_ok());
        assert_eq!(check_rel("/etc/passwd"), Err(UnsafeEntry::Absolute));
        assert_eq!(check_rel("a/../b"), Err(UnsafeEntry::ParentDir));
        assert!(matches!(check_rel("a//b"), Err(UnsafeEntry::BadName(_))));
        assert!(matches!(check_rel("./a"), Err(UnsafeEntry::BadName(_))));
        assert!(matches!(check_rel(""), Err(UnsafeEntry::BadName(_))));
    }
}
