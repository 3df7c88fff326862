//! Private, link-proof file system access: folders 0700, files 0600, nothing opened through a
//! symbolic link, and temp-file + rename for every file that must never be seen half-written.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, IoContext, Result};

/// Mode of every folder the archive creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file the archive creates.
pub const FILE_MODE: u32 = 0o600;

/// Create `dir` (and missing parents) with mode 0700; fail if it exists as a link or non-directory.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink(dir.to_path_buf())),
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::NotADirectory(dir.to_path_buf())),
        Err(_) => fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .at(dir),
    }
}

/// Check that `dir` is a real directory (not a link).
pub fn require_dir(dir: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(dir).at(dir)?;
    if meta.file_type().is_symlink() {
        Err(Error::Symlink(dir.to_path_buf()))
    } else if !meta.is_dir() {
        Err(Error::NotADirectory(dir.to_path_buf()))
    } else {
        Ok(())
    }
}

/// Open an existing regular file for reading without following a link.
pub fn open_read(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .at(path)?;
    let meta = file.metadata().at(path)?;
    if !meta.is_file() {
        return Err(Error::NotAFile(path.to_path_buf()));
    }
    Ok(file)
}

/// Read a whole (small) file without following links, refusing files above `limit` bytes.
pub fn read_small(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let file = open_read(path)?;
    let len = file.metadata().at(path)?.len();
    if len > limit {
        return Err(Error::TooLarge {
            what: "manifest",
            size: len,
            limit,
        });
    }
    let mut buf = Vec::with_capacity(len as usize);
    file.take(limit).read_to_end(&mut buf).at(path)?;
    Ok(buf)
}

/// Create a new file exclusively (0600, no links followed).
pub fn create_new(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .at(path)
}

/// Open a file for appending/writing, creating it 0600 if missing; never through a link.
pub fn open_write(path: &Path, truncate: bool) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .read(true)
        .create(true)
        .truncate(truncate)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .at(path)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique temporary name beside `path` (same folder, so rename is atomic).
pub fn temp_path_for(path: &Path) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(crate::layout::names::temp_name(
        &name,
        std::process::id(),
        n,
    ))
}

/// Write `bytes` to `path` atomically: temp file (0600) in the same folder, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let tmp = temp_path_for(path);
    let result = (|| {
        let mut file = create_new(&tmp)?;
        file.write_all(bytes).at(&tmp)?;
        if sync {
            file.sync_all().at(&tmp)?;
        }
        drop(file);
        if let Ok(meta) = fs::symlink_metadata(path) {
            if meta.file_type().is_symlink() {
                return Err(Error::Symlink(path.to_path_buf()));
            }
        }
        fs::rename(&tmp, path).at(path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Is this path a temp file left by [`write_atomic`] or the blob store?
pub use crate::layout::names::is_temp_name;

/// Rename `from` to `to`, failing with `AlreadyExists` if `to` exists (never replaces anything,
/// not even an empty folder). Uses `renameat2(RENAME_NOREPLACE)`; on a file system without it,
/// falls back to a check then a rename.
pub fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            if fs::symlink_metadata(to).is_ok() {
                return Err(Error::Io {
                    path: to.to_path_buf(),
                    source: std::io::ErrorKind::AlreadyExists.into(),
                });
            }
            fs::rename(from, to).at(to)
        }
        Err(e) => Err(Error::Io {
            path: to.to_path_buf(),
            source: e.into(),
        }),
    }
}

/// Swap two paths atomically (`renameat2(RENAME_EXCHANGE)`). Returns `Ok(false)` when the file
/// system cannot do it (nothing was changed then).
pub fn exchange(a: &Path, b: &Path) -> Result<bool> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => Ok(false),
        Err(e) => Err(Error::Io {
            path: b.to_path_buf(),
            source: e.into(),
        }),
    }
}

/// Flush the file system holding `path` to stable storage (`syncfs`).
pub fn sync_filesystem(path: &Path) -> Result<()> {
    let dir = File::open(path).at(path)?;
    rustix::fs::syncfs(&dir).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}
