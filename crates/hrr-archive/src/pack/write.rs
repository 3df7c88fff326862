//! Writing a pack: walk the archive (sorted, links never followed), refuse what a pack cannot
//! hold, hash every file, and write the head (index frame and padding) and the body (one zstd
//! frame of the tar) with fixed headers, so the same archive always packs to the same bytes; to
//! a file in one pass over the archive, or front to back to a pipe. See FORMAT.md §9.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Map;

use super::index::{
    check_rel, io_err, list_dir, read_chunks, PackError, PackFile, PackIndex, PackResult, BUF,
    INDEX_NAME, INDEX_SCHEMA, LEVELS, PACK_SUFFIX, TAR_MTIME,
};
use crate::error::Error;
use crate::framing::FORMAT_VERSION;
use crate::fsutil;
use crate::layout;
use crate::progress::Progress;

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
    /// Create the pack file 0600 instead of [`PACK_FILE_MODE`].
    pub private: bool,
}

/// Mode of a pack file (less the umask): readable by other users, so that a container running
/// as another user (`docker run --user`) can read a mounted pack. A pack is for shipping; the
/// files of an archive folder, and of an unpacked one, stay 0600 (folders 0700). `--private`
/// keeps a pack 0600 too.
pub const PACK_FILE_MODE: u32 = 0o644;

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            level: 3,
            threads: 0,
            force: false,
            sync: false,
            private: false,
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
                    let left_by = match fsutil::temp_name_pid(name) {
                        Some(pid) if fsutil::is_stale(path, pid) => {
                            format!(", left by process {pid}, which is gone")
                        }
                        _ => String::new(),
                    };
                    return Err(PackError::Active {
                        dir: path.parent().unwrap_or(src).to_path_buf(),
                        why: format!("writer state present (temp file {rel}{left_by})"),
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
    let threads = crate::cores().clamp(1, files.len().max(1));
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
    let n_total = read_chunks(&mut file, buf, io_err(path), |chunk| {
        hasher.update(chunk);
        progress.advance(chunk.len() as u64);
        Ok(())
    })?;
    if n_total != size {
        return Err(PackError::Changed(path.to_path_buf()));
    }
    Ok(hasher.finalize().to_hex().to_string())
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
        crate::cores() as u32
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
    /// Size of the pack.
    pub bytes_out: u64,
    /// Writer temp files left out (with `force`).
    pub skipped: Vec<String>,
    /// The index written.
    pub index: PackIndex,
    /// Temp files of earlier packs to the same `out` whose process is gone (killed), removed.
    pub removed_stale: Vec<PathBuf>,
}

impl PackOutcome {
    /// Files packed (the index's).
    pub fn files(&self) -> u64 {
        self.index.files.len() as u64
    }

    /// Their total size (the index's).
    pub fn bytes_in(&self) -> u64 {
        self.index.total_bytes
    }
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
/// ([`PACK_FILE_MODE`], or 0600 with `private`) and renamed into place only when complete; an existing `out` is refused. Standard
/// output cannot seek back: the files are hashed first, then written front to back. Both give
/// the same bytes.
pub fn pack_to_file(
    src: &Path,
    out: Option<&Path>,
    opts: &PackOptions,
    progress: &dyn Progress,
) -> PackResult<PackOutcome> {
    check_level(opts.level, src)?;
    let mut removed_stale = Vec::new();
    if let Some(out) = out {
        if fs::symlink_metadata(out).is_ok() {
            return Err(PackError::Exists(out.to_path_buf()));
        }
        // A pack killed before its rename left its temp file beside `out`.
        if let (Some(name), Some(parent)) = (out.file_name(), out.parent()) {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            removed_stale =
                fsutil::remove_stale_temp_files_in(parent, Some(&name.to_string_lossy()))?;
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
                let mode = if opts.private {
                    fsutil::FILE_MODE
                } else {
                    PACK_FILE_MODE
                };
                let mut file = fsutil::create_new_mode(&tmp, mode)?;
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
        bytes_out,
        skipped: plan.skipped.clone(),
        index: plan.index,
        removed_stale,
    })
}
