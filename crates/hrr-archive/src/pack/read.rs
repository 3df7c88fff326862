//! Reading a pack: the index alone ([`read_index`], one zstd frame), or the whole stream
//! ([`read_pack`]) through a [`PackVisitor`], with bounded memory, every member checked (type,
//! mode, name, against the index) and every file hashed as it is read. Only the subset of tar the
//! writer produces is accepted. See FORMAT.md §9.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc;

use super::index::{
    check_rel, corrupt, io_err, read_chunks, read_retry, validate_index, PackError, PackFile,
    PackIndex, PackResult, UnsafeEntry, BUF, INDEX_NAME, MAX_INDEX_BYTES, MAX_NAME_BYTES,
    WINDOW_LOG_MAX,
};
use crate::fsutil;
use crate::progress::Progress;

/// Decompressed bytes after the end of the tar that are tolerated (they must be zero).
const MAX_TRAILING: u64 = 1 << 20;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

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
    let corrupt = &corrupt(path, after, true);
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
        check_hash(pack, rel, file, found)
    }
}

/// A [`PackError::HashMismatch`] unless `found` is the hash the index gives `file`.
pub(crate) fn check_hash(pack: &Path, rel: &str, file: &PackFile, found: &str) -> PackResult<()> {
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
        .map_err(corrupt(path, INDEX_NAME, false))?;
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
            let got = read_chunks(&mut entry, &mut buf, corrupt(path, &rel, false), |chunk| {
                hasher.update(chunk);
                visitor.file_data(chunk)?;
                progress.advance(chunk.len() as u64);
                Ok(())
            })?;
            if got != f.size {
                return Err(corrupt(path, &rel, false)(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the pack ends after {got} of its {} bytes", f.size),
                )));
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
    read_chunks(&mut rest, &mut buf, corrupt(path, &last, true), |chunk| {
        trailing += chunk.len() as u64;
        if trailing > MAX_TRAILING || chunk.iter().any(|&b| b != 0) {
            return Err(PackError::NotAPack {
                path: path.to_path_buf(),
                reason: "data after the end of the tar stream".into(),
            });
        }
        Ok(())
    })?;
    Ok(index)
}
