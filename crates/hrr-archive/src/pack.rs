//! The packed form of an archive: one `<name>.hrr.tar.zst` file to hand over. A zstd stream of a
//! GNU tar whose first member is a pack index (every file with its size and BLAKE3 hash, and a
//! summary of every process), then the archive's folders and files in sorted order with fixed
//! headers, so the same archive always packs to the same bytes. Reading streams with bounded
//! memory, checks every file against the index while it is read, and accepts only the subset of
//! tar this writer produces: no links, devices, FIFOs, set-id bits, absolute paths or `..`.
//! See FORMAT.md §9.
//!
//! ```
//! use hrr_archive::{pack, progress::NoProgress, schema::Schema, writer::ProcessWriter};
//! let tmp = tempfile::tempdir().unwrap();
//! let src = tmp.path().join("run.hrr");
//! let mut w = ProcessWriter::create(&src, 7, 1, &Schema::new("cuda-driver", 13000, vec![])).unwrap();
//! w.put_blob(b"host bytes").unwrap();
//! w.finish().unwrap();
//! let packed = tmp.path().join("run.hrr.tar.zst");
//! pack::pack_to_file(&src, Some(&packed), &pack::PackOptions::default(), &NoProgress).unwrap();
//! let index = pack::read_index(&packed).unwrap();
//! assert_eq!(index.processes[0].blobs, 1);
//! let dest = tmp.path().join("dest");
//! std::fs::create_dir(&dest).unwrap();
//! let out = pack::unpack(&packed, &dest, false, &NoProgress).unwrap();
//! assert_eq!(out, dest.join("run.hrr"));
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::blobs::count_objects;
use crate::error::Error;
use crate::framing::FORMAT_VERSION;
use crate::fsutil;
use crate::layout::EVENTS_FILE;
use crate::layout::{self, Target};
use crate::manifest;
use crate::progress::Progress;

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
/// Decompressed bytes after the end of the tar that are tolerated (they must be zero).
const MAX_TRAILING: u64 = 1 << 20;
const BUF: usize = 1 << 20;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

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
    /// Events, as the manifest counts them.
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

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
    move |source| PackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Options of [`write_pack`].
#[derive(Debug, Clone, Copy)]
pub struct PackOptions {
    /// zstd level, in [`LEVELS`].
    pub level: i32,
    /// Compression workers; 0 = one per core. The output is the same for every value.
    pub threads: u32,
    /// Pack although a capture is running or left writer state (the `active` marker is packed;
    /// writer temp files are left out).
    pub force: bool,
    /// fsync the pack before renaming it into place (the rename alone makes it appear whole
    /// or not at all to other programs, not across a power loss).
    pub sync: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            level: 3,
            threads: 0,
            force: false,
            sync: false,
        }
    }
}

enum Item {
    Dir(String),
    File(usize),
}

#[derive(PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &fs::Metadata) -> Self {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// What [`plan`] found: the index to write and the files in order.
pub struct PackPlan {
    src: PathBuf,
    /// The index the pack will start with.
    pub index: PackIndex,
    /// Writer temp files left out (with `force` only).
    pub skipped: Vec<String>,
    items: Vec<Item>,
    stamps: Vec<Stamp>,
}

impl fmt::Debug for PackPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PackPlan")
            .field("src", &self.src)
            .field("files", &self.index.files.len())
            .finish()
    }
}

/// The name of `path`'s last component, as the pack's root folder name.
fn root_name(path: &Path) -> PackResult<String> {
    let canon = fs::canonicalize(path).map_err(io_err(path))?;
    let name = canon
        .file_name()
        .ok_or_else(|| PackError::NotAPack {
            path: path.to_path_buf(),
            reason: "the archive folder has no name".into(),
        })?
        .to_str()
        .ok_or_else(|| PackError::NonUtf8(path.to_path_buf()))?
        .to_string();
    check_rel(&name).map_err(|_| PackError::NonUtf8(path.to_path_buf()))?;
    Ok(name)
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
                    let rel = d
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
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
            .map(|m| m.pid)
            .or_else(|| layout::pid_of(dir))
            .unwrap_or(0),
        complete: m.as_ref().is_some_and(|m| m.complete),
        active: layout::has_active_marker(dir),
        scrubbed: m
            .as_ref()
            .is_some_and(|m| m.extra.get("scrubbed") == Some(&Value::Bool(true))),
        event_count: m.as_ref().map_or(0, |m| m.event_count),
        events_bytes: fs::symlink_metadata(dir.join(EVENTS_FILE)).map_or(0, |m| m.len()),
        blobs: objects.blobs,
        blob_bytes: objects.blob_bytes,
        code_objects: objects.code_objects,
        code_object_bytes: objects.code_object_bytes,
        manifest_error: err,
    })
}

/// Walk the archive at `src` (sorted, links never followed), refuse what a pack cannot hold, and
/// hash every file (on every core): the index [`write_pack`] will write.
pub fn plan(src: &Path, opts: &PackOptions, progress: &dyn Progress) -> PackResult<PackPlan> {
    let mut plan = walk(src, opts)?;
    progress.start("hashing", plan.index.total_bytes);
    let hashes = hash_files(src, &plan.index.files, &plan.stamps, progress)?;
    for (f, h) in plan.index.files.iter_mut().zip(hashes) {
        f.blake3 = h;
    }
    progress.finish();
    Ok(plan)
}

/// The walk of [`plan`], without hashing (the hashes are empty).
fn walk(src: &Path, opts: &PackOptions) -> PackResult<PackPlan> {
    let (kind, processes) = list_dir(src)?;
    let root = root_name(src)?;
    for p in &processes {
        let dir = src.join(&p.dir);
        if p.active && !opts.force {
            return Err(PackError::Active {
                dir,
                why: "capture still running or killed before its clean shutdown (`active` marker present)".into(),
            });
        }
    }
    let mut items = Vec::new();
    let mut dirs = Vec::new();
    let mut files: Vec<PackFile> = Vec::new();
    let mut stamps = Vec::new();
    let mut skipped = Vec::new();
    let walker = walkdir::WalkDir::new(src)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1);
    for entry in walker {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(src).to_path_buf();
            PackError::Io {
                path,
                source: e.into(),
            }
        })?;
        let path = entry.path();
        let rel_path = path
            .strip_prefix(src)
            .expect("walkdir stays below its root");
        let mut parts = Vec::new();
        for c in rel_path.components() {
            parts.push(
                c.as_os_str()
                    .to_str()
                    .ok_or_else(|| PackError::NonUtf8(path.to_path_buf()))?,
            );
        }
        let rel = parts.join("/");
        check_rel(&rel).map_err(|_| PackError::NonUtf8(path.to_path_buf()))?;
        let ft = entry.file_type();
        if ft.is_symlink() {
            return Err(Error::Symlink(path.to_path_buf()).into());
        } else if ft.is_dir() {
            items.push(Item::Dir(rel.clone()));
            dirs.push(rel);
        } else if ft.is_file() {
            let name = parts.last().copied().unwrap_or_default();
            if fsutil::is_temp_name(name) {
                if !opts.force {
                    return Err(PackError::Active {
                        dir: path.parent().unwrap_or(src).to_path_buf(),
                        why: format!("writer state present (temp file {rel})"),
                    });
                }
                skipped.push(rel);
                continue;
            }
            let meta = entry.metadata().map_err(|e| PackError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            })?;
            stamps.push(Stamp::of(&meta));
            items.push(Item::File(files.len()));
            files.push(PackFile {
                path: rel,
                size: meta.len(),
                blake3: String::new(),
            });
        } else {
            return Err(PackError::Special(path.to_path_buf()));
        }
    }
    let total_bytes: u64 = files.iter().map(|f| f.size).sum();
    let index = PackIndex {
        schema: INDEX_SCHEMA.into(),
        format_version: FORMAT_VERSION,
        root,
        kind,
        forced: opts.force,
        total_bytes,
        processes,
        dirs,
        files,
        extra: Map::new(),
    };
    Ok(PackPlan {
        src: src.to_path_buf(),
        index,
        skipped,
        items,
        stamps,
    })
}

/// BLAKE3 of every file, on one thread per core (files are shared out one at a time), each
/// checked unchanged since the walk.
fn hash_files(
    src: &Path,
    files: &[PackFile],
    stamps: &[Stamp],
    progress: &dyn Progress,
) -> PackResult<Vec<String>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<PackResult<String>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, files.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut buf = vec![0u8; BUF];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= files.len() {
                        break;
                    }
                    let r = hash_one(
                        &src.join(&files[i].path),
                        files[i].size,
                        &stamps[i],
                        &mut buf,
                        progress,
                    );
                    out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every file was hashed"))
        .collect()
}

fn hash_one(
    path: &Path,
    size: u64,
    stamp: &Stamp,
    buf: &mut [u8],
    progress: &dyn Progress,
) -> PackResult<String> {
    let mut file = fsutil::open_read(path)?;
    if Stamp::of(&file.metadata().map_err(io_err(path))?) != *stamp {
        return Err(PackError::Changed(path.to_path_buf()));
    }
    let mut hasher = blake3::Hasher::new();
    let mut n_total = 0u64;
    loop {
        let n = read_retry(&mut file, buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        n_total += n as u64;
        progress.advance(n as u64);
    }
    if n_total != size {
        return Err(PackError::Changed(path.to_path_buf()));
    }
    Ok(hasher.finalize().to_hex().to_string())
}

fn read_retry(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn tar_header(kind: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(TAR_MTIME);
    h
}

/// Reads exactly `left` bytes of a file being packed (a file that shrank is an error), hashing
/// them on the way when asked.
struct Exact<'a> {
    file: File,
    left: u64,
    hasher: Option<blake3::Hasher>,
    progress: &'a dyn Progress,
}

impl Read for Exact<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being packed",
            ));
        }
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        self.left -= n as u64;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

/// Number of zstd workers for `threads` (0 = one per core; always at least 1, so the output
/// does not depend on it).
pub fn workers(threads: u32) -> u32 {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    } else {
        threads
    }
}

/// The tar bytes of the index member (header, JSON, padding to 512; no end blocks).
fn index_member(index: &PackIndex) -> Vec<u8> {
    let mut json = serde_json::to_vec_pretty(index).expect("index serialises");
    json.push(b'\n');
    let mut h = tar_header(tar::EntryType::Regular, json.len() as u64, 0o600);
    let mut b = tar::Builder::new(Vec::with_capacity(json.len() + 1024));
    b.append_data(&mut h, INDEX_NAME, &json[..])
        .expect("writing to memory");
    let member = b.get_ref().clone();
    drop(b);
    member
}

/// Bytes reserved at the start of a pack for the index frame and its padding: a function of the
/// index's length only, which does not depend on the hashes (fixed-length hex), so it is known
/// before the files are read.
fn head_len(index: &PackIndex) -> usize {
    let mut placeholder = index.clone();
    for f in &mut placeholder.files {
        f.blake3 = "0".repeat(64);
    }
    zstd::zstd_safe::compress_bound(index_member(&placeholder).len()) + 64
}

/// The head of a pack: a zstd frame holding the index member, then a skippable frame padding it
/// to exactly `len` bytes (decoders, `zstd -d` included, skip it).
fn head_frames(index: &PackIndex, level: i32, len: usize, src: &Path) -> PackResult<Vec<u8>> {
    let member = index_member(index);
    let mut c = zstd::bulk::Compressor::new(level).map_err(io_err(src))?;
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .map_err(io_err(src))?;
    let mut head = c.compress(&member).map_err(io_err(src))?;
    let pad = len
        .checked_sub(head.len() + 8)
        .expect("the reserve exceeds the compress bound");
    head.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
    head.extend_from_slice(&(pad as u32).to_le_bytes());
    head.resize(len, 0);
    Ok(head)
}

/// Magic of the skippable frame that pads the head of a pack.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// Write the body of a pack (the root folder, then every folder and file in plan order, then
/// the tar end blocks) as one zstd stream. Each file is checked unchanged since the walk; with
/// `hashes`, each file's BLAKE3 is computed as it is packed.
fn write_body<W: Write>(
    plan: &PackPlan,
    out: W,
    opts: &PackOptions,
    progress: &dyn Progress,
    mut hashes: Option<&mut Vec<String>>,
) -> PackResult<W> {
    let src = &plan.src;
    let mut enc = zstd::stream::write::Encoder::new(out, opts.level).map_err(io_err(src))?;
    enc.include_checksum(true).map_err(io_err(src))?;
    enc.multithread(workers(opts.threads).max(1))
        .map_err(io_err(src))?;
    let mut tar = tar::Builder::new(BufWriter::with_capacity(BUF, enc));
    tar.follow_symlinks(false);
    let root = &plan.index.root;
    let mut h = tar_header(tar::EntryType::Directory, 0, 0o700);
    tar.append_data(&mut h, root, io::empty())
        .map_err(io_err(src))?;
    progress.start("packing", plan.index.total_bytes);
    for item in &plan.items {
        match item {
            Item::Dir(rel) => {
                let mut h = tar_header(tar::EntryType::Directory, 0, 0o700);
                tar.append_data(&mut h, format!("{root}/{rel}"), io::empty())
                    .map_err(io_err(&src.join(rel)))?;
            }
            Item::File(i) => {
                let f = &plan.index.files[*i];
                let path = src.join(&f.path);
                let file = fsutil::open_read(&path)?;
                if Stamp::of(&file.metadata().map_err(io_err(&path))?) != plan.stamps[*i] {
                    return Err(PackError::Changed(path));
                }
                let mut h = tar_header(tar::EntryType::Regular, f.size, 0o600);
                let mut reader = Exact {
                    file,
                    left: f.size,
                    hasher: hashes.is_some().then(blake3::Hasher::new),
                    progress,
                };
                tar.append_data(&mut h, format!("{root}/{}", f.path), &mut reader)
                    .map_err(io_err(&path))?;
                let after = Stamp::of(&reader.file.metadata().map_err(io_err(&path))?);
                if after != plan.stamps[*i] {
                    return Err(PackError::Changed(path));
                }
                if let (Some(hashes), Some(h)) = (hashes.as_deref_mut(), reader.hasher) {
                    hashes[*i] = h.finalize().to_hex().to_string();
                }
            }
        }
    }
    progress.finish();
    let buffered = tar.into_inner().map_err(io_err(src))?;
    let enc = buffered.into_inner().map_err(|e| PackError::Io {
        path: src.clone(),
        source: e.into_error(),
    })?;
    enc.finish().map_err(io_err(src))
}

fn check_level(level: i32, src: &Path) -> PackResult<()> {
    if !LEVELS.contains(&level) {
        return Err(io_err(src)(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("zstd level {level} is outside {LEVELS:?}"),
        )));
    }
    Ok(())
}

/// Write the pack of a hashed `plan` (from [`plan`]) to `out`, front to back: the head (index
/// frame and padding), then the body, each file checked to be unchanged since it was hashed.
/// Returns `out`. [`pack_to_file`] writes the same bytes in one pass over the files.
pub fn write_pack<W: Write>(
    plan: &PackPlan,
    mut out: W,
    opts: &PackOptions,
    progress: &dyn Progress,
) -> PackResult<W> {
    check_level(opts.level, &plan.src)?;
    let head = head_frames(&plan.index, opts.level, head_len(&plan.index), &plan.src)?;
    out.write_all(&head).map_err(io_err(&plan.src))?;
    write_body(plan, out, opts, progress, None)
}

/// What [`pack_to_file`] did.
#[derive(Debug, Clone)]
pub struct PackOutcome {
    /// The pack written (`None`: standard output).
    pub path: Option<PathBuf>,
    /// Files packed.
    pub files: u64,
    /// Their total size.
    pub bytes_in: u64,
    /// Size of the pack.
    pub bytes_out: u64,
    /// Writer temp files left out (with `force`).
    pub skipped: Vec<String>,
    /// The index written.
    pub index: PackIndex,
}

struct Counter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The default pack name for an archive folder: `run.hrr` → `run.hrr.tar.zst`, `pid-7` →
/// `pid-7.hrr.tar.zst`.
pub fn default_pack_name(src: &Path) -> PackResult<String> {
    let root = root_name(src)?;
    Ok(if root.ends_with(layout::ARCHIVE_SUFFIX) {
        format!("{root}.tar.zst")
    } else {
        format!("{root}{PACK_SUFFIX}")
    })
}

/// Pack `src` into `out` (`None`: standard output). A file is written in one pass over the
/// archive: the body first, after room reserved for the head, hashing every file as it is
/// packed; then the head with the finished index. It is written beside `out` under a temp name
/// (0600) and renamed into place only when complete; an existing `out` is refused. Standard
/// output cannot seek back: the files are hashed first, then written front to back. Both give
/// the same bytes.
pub fn pack_to_file(
    src: &Path,
    out: Option<&Path>,
    opts: &PackOptions,
    progress: &dyn Progress,
) -> PackResult<PackOutcome> {
    check_level(opts.level, src)?;
    if let Some(out) = out {
        if fs::symlink_metadata(out).is_ok() {
            return Err(PackError::Exists(out.to_path_buf()));
        }
    }
    let (plan, bytes_out) = match out {
        None => {
            let plan = plan(src, opts, progress)?;
            let stdout = io::stdout().lock();
            let mut w = write_pack(
                &plan,
                Counter {
                    inner: BufWriter::with_capacity(BUF, stdout),
                    n: 0,
                },
                opts,
                progress,
            )?;
            w.flush().map_err(io_err(Path::new("<stdout>")))?;
            (plan, w.n)
        }
        Some(out) => {
            let mut plan = walk(src, opts)?;
            let tmp = fsutil::temp_path_for(out);
            let result = (|| -> PackResult<u64> {
                let head = head_len(&plan.index);
                let mut file = fsutil::create_new(&tmp)?;
                file.seek(SeekFrom::Start(head as u64))
                    .map_err(io_err(&tmp))?;
                let mut hashes = vec![String::new(); plan.index.files.len()];
                let w = write_body(
                    &plan,
                    Counter {
                        inner: BufWriter::with_capacity(BUF, file),
                        n: 0,
                    },
                    opts,
                    progress,
                    Some(&mut hashes),
                )?;
                let n = w.n + head as u64;
                let mut file = w.inner.into_inner().map_err(|e| PackError::Io {
                    path: tmp.clone(),
                    source: e.into_error(),
                })?;
                for (f, h) in plan.index.files.iter_mut().zip(hashes) {
                    f.blake3 = h;
                }
                let head_bytes = head_frames(&plan.index, opts.level, head, src)?;
                file.seek(SeekFrom::Start(0)).map_err(io_err(&tmp))?;
                file.write_all(&head_bytes).map_err(io_err(&tmp))?;
                if opts.sync {
                    file.sync_all().map_err(io_err(&tmp))?;
                }
                fsutil::rename_noreplace(&tmp, out).map_err(|e| match e {
                    Error::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists => {
                        PackError::Exists(out.to_path_buf())
                    }
                    e => e.into(),
                })?;
                Ok(n)
            })();
            if result.is_err() {
                let _ = fs::remove_file(&tmp);
            }
            let n = result?;
            (plan, n)
        }
    };
    Ok(PackOutcome {
        path: out.map(Path::to_path_buf),
        files: plan.index.files.len() as u64,
        bytes_in: plan.index.total_bytes,
        bytes_out,
        skipped: plan.skipped.clone(),
        index: plan.index,
    })
}

/// Check a `/`-separated relative path: non-empty normal components only.
fn check_rel(rel: &str) -> Result<(), UnsafeEntry> {
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

fn validate_index(path: &Path, index: &PackIndex) -> PackResult<()> {
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

/// Reads a decoder on a thread of its own, 1 MiB at a time, at most a few chunks ahead: the
/// decompression overlaps hashing and writing while memory stays bounded.
struct ReadAhead {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ReadAhead {
    fn spawn<R: Read + Send + 'static>(mut inner: R) -> Self {
        let (tx, rx) = mpsc::sync_channel(4);
        std::thread::Builder::new()
            .name("hrr-unzstd".into())
            .spawn(move || loop {
                let mut buf = vec![0u8; BUF];
                let mut n = 0;
                while n < buf.len() {
                    match inner.read(&mut buf[n..]) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            // Hand over what was decoded before the error first, so the error
                            // is met while reading the member it damaged.
                            buf.truncate(n);
                            if n > 0 && tx.send(Ok(buf)).is_err() {
                                return;
                            }
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
                buf.truncate(n);
                let end = n == 0;
                if tx.send(Ok(buf)).is_err() || end {
                    return;
                }
            })
            .expect("spawn a reader thread");
        ReadAhead {
            rx,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(buf)) => {
                    if buf.is_empty() {
                        self.done = true;
                    }
                    self.cur = buf;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(io::Error::other("decompression thread ended"));
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn open_decoder(
    path: &Path,
) -> PackResult<zstd::stream::read::Decoder<'static, io::BufReader<File>>> {
    let mut file = fsutil::open_read(path)?;
    let mut magic = [0u8; 4];
    let n = read_retry(&mut file, &mut magic).map_err(io_err(path))?;
    if n < 4 || magic != ZSTD_MAGIC {
        return Err(PackError::NotAPack {
            path: path.to_path_buf(),
            reason: "not zstd-compressed (expected a .hrr.tar.zst made by `hrr-pack pack`)".into(),
        });
    }
    file.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
    let mut dec = zstd::stream::read::Decoder::new(file).map_err(io_err(path))?;
    dec.window_log_max(WINDOW_LOG_MAX).map_err(io_err(path))?;
    Ok(dec)
}

/// Does `path` look like a pack (a regular file starting with the zstd magic)?
pub fn is_pack_file(path: &Path) -> bool {
    let Ok(mut f) = fsutil::open_read(path) else {
        return false;
    };
    let mut magic = [0u8; 4];
    matches!(read_retry(&mut f, &mut magic), Ok(4)) && magic == ZSTD_MAGIC
}

/// The next member, with a GNU long name applied (read with a bound: the tar crate's own
/// handling would read any size into memory).
fn next_member<'a, R: Read>(
    path: &Path,
    entries: &mut tar::Entries<'a, R>,
    after: &str,
) -> PackResult<Option<(tar::Entry<'a, R>, Vec<u8>)>> {
    let corrupt = |source: io::Error| PackError::Corrupt {
        path: path.to_path_buf(),
        entry: after.to_string(),
        after: true,
        source,
    };
    let mut long: Option<Vec<u8>> = None;
    loop {
        let Some(entry) = entries.next() else {
            if long.is_some() {
                return Err(PackError::Unsafe {
                    path: path.to_path_buf(),
                    entry: "././@LongLink".into(),
                    kind: UnsafeEntry::BadName("long name without a member".into()),
                });
            }
            return Ok(None);
        };
        let mut entry = entry.map_err(corrupt)?;
        if entry.header().entry_type().is_gnu_longname() {
            let size = entry.size();
            if size > MAX_NAME_BYTES || long.is_some() {
                return Err(PackError::Unsafe {
                    path: path.to_path_buf(),
                    entry: "././@LongLink".into(),
                    kind: if long.is_some() {
                        UnsafeEntry::BadName("two long names for one member".into())
                    } else {
                        UnsafeEntry::LongName(size)
                    },
                });
            }
            let mut name = Vec::with_capacity(size as usize);
            (&mut entry)
                .take(MAX_NAME_BYTES)
                .read_to_end(&mut name)
                .map_err(corrupt)?;
            while name.last() == Some(&0) {
                name.pop();
            }
            long = Some(name);
            continue;
        }
        let name = long
            .take()
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        return Ok(Some((entry, name)));
    }
}

/// Classify a member: folder or file, and its path below the root ("" for the root itself).
fn check_member(
    header: &tar::Header,
    name: &[u8],
    root: &str,
) -> Result<(bool, String), UnsafeEntry> {
    use tar::EntryType as T;
    let ty = header.entry_type();
    let is_dir = match ty {
        T::Regular => false,
        T::Directory => true,
        T::Symlink => return Err(UnsafeEntry::Symlink),
        T::Link => return Err(UnsafeEntry::HardLink),
        T::Char | T::Block => return Err(UnsafeEntry::Device),
        T::Fifo => return Err(UnsafeEntry::Fifo),
        T::GNUSparse => return Err(UnsafeEntry::Sparse),
        T::XHeader | T::XGlobalHeader => return Err(UnsafeEntry::Pax),
        T::GNULongLink => return Err(UnsafeEntry::LongLink),
        other => return Err(UnsafeEntry::OtherType(other.as_byte())),
    };
    let mode = header
        .mode()
        .map_err(|_| UnsafeEntry::BadName("unreadable mode".into()))?;
    if mode & 0o7000 != 0 {
        return Err(UnsafeEntry::SetId(mode));
    }
    let name = std::str::from_utf8(name).map_err(|_| UnsafeEntry::BadName("not UTF-8".into()))?;
    let name = if is_dir {
        name.strip_suffix('/').unwrap_or(name)
    } else {
        name
    };
    check_rel(name)?;
    let (first, rest) = name.split_once('/').unwrap_or((name, ""));
    if first != root {
        return Err(UnsafeEntry::OutsideRoot);
    }
    Ok((is_dir, rest.to_string()))
}

/// Receives the members of a pack as [`read_pack`] checks them. Defaults do nothing, except
/// [`Self::file_end`], which fails on a hash mismatch.
pub trait PackVisitor {
    /// The index (first member) was read and validated.
    fn index(&mut self, _index: &PackIndex) -> PackResult<()> {
        Ok(())
    }
    /// A folder (`""` is the root).
    fn dir(&mut self, _rel: &str) -> PackResult<()> {
        Ok(())
    }
    /// A file begins.
    fn file_start(&mut self, _rel: &str, _file: &PackFile) -> PackResult<()> {
        Ok(())
    }
    /// More bytes of the current file.
    fn file_data(&mut self, _data: &[u8]) -> PackResult<()> {
        Ok(())
    }
    /// The current file ended; `found` is the BLAKE3 hex of what was read (compare with
    /// `file.blake3`). Return an error to stop.
    fn file_end(&mut self, pack: &Path, rel: &str, file: &PackFile, found: &str) -> PackResult<()> {
        if found != file.blake3 {
            return Err(PackError::HashMismatch {
                path: pack.to_path_buf(),
                entry: rel.to_string(),
                expected: file.blake3.clone(),
                found: found.to_string(),
            });
        }
        Ok(())
    }
}

fn read_index_member<R: Read>(
    path: &Path,
    entries: &mut tar::Entries<'_, R>,
) -> PackResult<PackIndex> {
    let not_a_pack = |reason: &str| PackError::NotAPack {
        path: path.to_path_buf(),
        reason: reason.into(),
    };
    let Some((mut entry, name)) = next_member(path, entries, "the start")? else {
        return Err(not_a_pack("empty tar"));
    };
    if name != INDEX_NAME.as_bytes() || entry.header().entry_type() != tar::EntryType::Regular {
        return Err(not_a_pack(&format!(
            "the first member is `{}`, not the pack index {INDEX_NAME}",
            String::from_utf8_lossy(&name)
        )));
    }
    if entry.size() > MAX_INDEX_BYTES {
        return Err(PackError::BadIndex {
            path: path.to_path_buf(),
            reason: format!("{} bytes (limit {MAX_INDEX_BYTES})", entry.size()),
        });
    }
    let mut bytes = Vec::new();
    (&mut entry)
        .take(MAX_INDEX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|source| PackError::Corrupt {
            path: path.to_path_buf(),
            entry: INDEX_NAME.to_string(),
            after: false,
            source,
        })?;
    let index: PackIndex = serde_json::from_slice(&bytes).map_err(|e| PackError::BadIndex {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    validate_index(path, &index)?;
    Ok(index)
}

/// Read only the index of the pack at `path` (decompresses its first member, nothing more).
pub fn read_index(path: &Path) -> PackResult<PackIndex> {
    let dec = open_decoder(path)?;
    let mut ar = tar::Archive::new(dec);
    let mut entries = ar.entries().map_err(io_err(path))?.raw(true);
    read_index_member(path, &mut entries)
}

/// Stream the whole pack at `path` through `visitor`: every member is checked (type, mode, name,
/// against the index), every file hashed while it is read; the members of the index must all
/// come, and nothing but zeros may follow the tar. Memory stays bounded (one 1 MiB buffer, a
/// few read-ahead chunks, the index).
pub fn read_pack(
    path: &Path,
    visitor: &mut dyn PackVisitor,
    progress: &dyn Progress,
) -> PackResult<PackIndex> {
    let dec = open_decoder(path)?;
    let mut ar = tar::Archive::new(ReadAhead::spawn(dec));
    let index;
    let mut last = INDEX_NAME.to_string();
    {
        let mut entries = ar.entries().map_err(io_err(path))?.raw(true);
        index = read_index_member(path, &mut entries)?;
        visitor.index(&index)?;
        let files: HashMap<&str, usize> = index
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.as_str(), i))
            .collect();
        let dirs: HashSet<&str> = index.dirs.iter().map(String::as_str).collect();
        let mut seen_files = vec![false; index.files.len()];
        let mut seen_dirs: HashSet<String> = HashSet::new();
        let mut buf = vec![0u8; BUF];
        progress.start("reading", index.total_bytes);
        while let Some((mut entry, name)) = next_member(path, &mut entries, &last)? {
            let shown = String::from_utf8_lossy(&name).into_owned();
            let unsafe_ = |kind: UnsafeEntry| PackError::Unsafe {
                path: path.to_path_buf(),
                entry: shown.clone(),
                kind,
            };
            let (is_dir, rel) =
                check_member(entry.header(), &name, &index.root).map_err(unsafe_)?;
            if is_dir {
                if !rel.is_empty() && !dirs.contains(rel.as_str()) {
                    return Err(unsafe_(UnsafeEntry::NotInIndex));
                }
                if !seen_dirs.insert(rel.clone()) {
                    return Err(unsafe_(UnsafeEntry::Duplicate));
                }
                if entry.size() != 0 {
                    return Err(unsafe_(UnsafeEntry::SizeMismatch {
                        tar: entry.size(),
                        index: 0,
                    }));
                }
                visitor.dir(&rel)?;
                last = shown;
                continue;
            }
            let Some(&i) = files.get(rel.as_str()) else {
                return Err(unsafe_(if rel.is_empty() {
                    UnsafeEntry::BadName("the root is a file".into())
                } else {
                    UnsafeEntry::NotInIndex
                }));
            };
            if std::mem::replace(&mut seen_files[i], true) {
                return Err(unsafe_(UnsafeEntry::Duplicate));
            }
            let f = &index.files[i];
            if entry.size() != f.size {
                return Err(unsafe_(UnsafeEntry::SizeMismatch {
                    tar: entry.size(),
                    index: f.size,
                }));
            }
            visitor.file_start(&rel, f)?;
            let mut hasher = blake3::Hasher::new();
            let mut got = 0u64;
            loop {
                let n = read_retry(&mut entry, &mut buf).map_err(|source| PackError::Corrupt {
                    path: path.to_path_buf(),
                    entry: rel.clone(),
                    after: false,
                    source,
                })?;
                if n == 0 {
                    break;
                }
                got += n as u64;
                hasher.update(&buf[..n]);
                visitor.file_data(&buf[..n])?;
                progress.advance(n as u64);
            }
            if got != f.size {
                return Err(PackError::Corrupt {
                    path: path.to_path_buf(),
                    entry: rel.clone(),
                    after: false,
                    source: io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the pack ends after {got} of its {} bytes", f.size),
                    ),
                });
            }
            let found = hasher.finalize().to_hex();
            visitor.file_end(path, &rel, f, found.as_str())?;
            last = shown;
        }
        progress.finish();
        let mut missing: Vec<String> = index
            .files
            .iter()
            .zip(&seen_files)
            .filter(|(_, seen)| !**seen)
            .map(|(f, _)| f.path.clone())
            .collect();
        missing.extend(
            index
                .dirs
                .iter()
                .filter(|d| !seen_dirs.contains(d.as_str()))
                .map(|d| format!("{d}/")),
        );
        if !missing.is_empty() {
            return Err(PackError::Missing {
                path: path.to_path_buf(),
                missing,
            });
        }
    }
    // Whatever follows the tar's end blocks must be zero padding; reading it to the end also
    // makes the decoder check the zstd content checksum.
    let mut rest = ar.into_inner();
    let mut buf = vec![0u8; 64 << 10];
    let mut trailing = 0u64;
    loop {
        let n = read_retry(&mut rest, &mut buf).map_err(|source| PackError::Corrupt {
            path: path.to_path_buf(),
            entry: last.clone(),
            after: true,
            source,
        })?;
        if n == 0 {
            break;
        }
        trailing += n as u64;
        if trailing > MAX_TRAILING || buf[..n].iter().any(|&b| b != 0) {
            return Err(PackError::NotAPack {
                path: path.to_path_buf(),
                reason: "data after the end of the tar stream".into(),
            });
        }
    }
    Ok(index)
}

struct Unpacker {
    root: PathBuf,
    expected_root: String,
    cur: Option<(File, PathBuf)>,
}

impl PackVisitor for Unpacker {
    fn index(&mut self, index: &PackIndex) -> PackResult<()> {
        if index.root != self.expected_root {
            return Err(PackError::BadIndex {
                path: self.root.clone(),
                reason: "the pack changed while being unpacked".into(),
            });
        }
        Ok(())
    }
    fn dir(&mut self, rel: &str) -> PackResult<()> {
        fsutil::create_private_dir(&self.root.join(rel))?;
        Ok(())
    }
    fn file_start(&mut self, rel: &str, _file: &PackFile) -> PackResult<()> {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            fsutil::create_private_dir(parent)?;
        }
        let f = fsutil::create_new(&path)?;
        self.cur = Some((f, path));
        Ok(())
    }
    fn file_data(&mut self, data: &[u8]) -> PackResult<()> {
        let (f, path) = self.cur.as_mut().expect("file_start came first");
        f.write_all(data).map_err(|source| PackError::Io {
            path: path.clone(),
            source,
        })
    }
    fn file_end(&mut self, pack: &Path, rel: &str, file: &PackFile, found: &str) -> PackResult<()> {
        self.cur = None;
        if found != file.blake3 {
            return Err(PackError::HashMismatch {
                path: pack.to_path_buf(),
                entry: rel.to_string(),
                expected: file.blake3.clone(),
                found: found.to_string(),
            });
        }
        Ok(())
    }
}

/// Unpack the pack at `pack` into the folder `dest`, creating `dest/<root>`: everything is
/// written into a private temp folder inside `dest`, each file checked against the index as it
/// is written, and renamed into place only when all is good (with `sync`, after flushing the
/// file system); an existing `dest/<root>` is never replaced. Returns `dest/<root>`.
pub fn unpack(
    pack: &Path,
    dest: &Path,
    sync: bool,
    progress: &dyn Progress,
) -> PackResult<PathBuf> {
    let meta = fs::metadata(dest).map_err(io_err(dest))?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory(dest.to_path_buf()).into());
    }
    let first = read_index(pack)?;
    let target = dest.join(&first.root);
    if fs::symlink_metadata(&target).is_ok() {
        return Err(PackError::Exists(target));
    }
    let tmp = tempfile::Builder::new()
        .prefix(layout::UNPACK_TEMP_PREFIX)
        .tempdir_in(dest)
        .map_err(io_err(dest))?;
    let staged = tmp.path().join(&first.root);
    fsutil::create_private_dir(&staged)?;
    let mut visitor = Unpacker {
        root: staged.clone(),
        expected_root: first.root.clone(),
        cur: None,
    };
    read_pack(pack, &mut visitor, progress)?;
    if sync {
        fsutil::sync_filesystem(&staged)?;
    }
    fsutil::rename_noreplace(&staged, &target).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists => {
            PackError::Exists(target.clone())
        }
        e => e.into(),
    })?;
    drop(tmp);
    Ok(target)
}

/// Body of the pack fuzz target (`fuzz/fuzz_targets/pack.rs`), shared with a stable-Rust test
/// over mutated seeds. `tar` is the decompressed stream of a pack: it is compressed here, so the
/// fuzzer explores the tar and the index rather than zstd's own checks. The pack is listed,
/// verified and unpacked into a fresh temp folder. Errors are expected; panics are the bugs, and
/// so is anything left in the destination after a failed unpack. Not part of the API.
#[doc(hidden)]
pub fn fuzz_one(tar: &[u8]) {
    use crate::progress::NoProgress;
    let Ok(tmp) = tempfile::tempdir() else {
        return;
    };
    let pack = tmp.path().join("f.hrr.tar.zst");
    let Ok(z) = zstd::bulk::compress(tar, 1) else {
        return;
    };
    if fs::write(&pack, z).is_err() {
        return;
    }
    let _ = read_index(&pack);
    let _ = crate::verify::verify_pack(&pack, &NoProgress);
    let dest = tmp.path().join("dest");
    if fs::create_dir(&dest).is_err() {
        return;
    }
    match unpack(&pack, &dest, false, &NoProgress) {
        Ok(out) => {
            assert!(out.starts_with(&dest), "unpacked outside the destination");
            assert_eq!(
                fs::read_dir(&dest).map(|d| d.count()).unwrap_or(0),
                1,
                "exactly the root folder"
            );
            let _ = crate::verify::verify_dir(&out, &NoProgress);
        }
        Err(_) => assert_eq!(
            fs::read_dir(&dest).map(|d| d.count()).unwrap_or(0),
            0,
            "a failed unpack left something behind"
        ),
    }
    assert_eq!(
        fs::read_dir(tmp.path()).map(|d| d.count()).unwrap_or(0),
        2,
        "nothing written beside the pack"
    );
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
