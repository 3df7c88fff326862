//! Exclusive locks on an archive, so two commands that rewrite or read a whole archive (scrub,
//! pack) never run on it at once.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on a lock file *beside* the archive folder,
//! `.<name>.hrr-lock` (not inside it: it would be packed, and a scrub swaps the folder). The
//! kernel drops the lock when its holder exits, however it exits (`kill -9` included), so a lock
//! is never stale. The holder removes the file when done (while still holding it); a taker
//! checks that the file it locked is still the one at the path, and takes it again if not, so
//! removing it never lets two holders in. A killed holder leaves the file; the next one takes
//! it (the kernel released it) and removes it.
//! A process capture inside an archive root is locked through its root, so scrubbing
//! `run.hrr/pid-1/` and packing `run.hrr` exclude each other too.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

use crate::manifest::MANIFEST;

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("{}: in use by another hrr-pack ({holder}); wait for it to finish, then run this again (lock file {})", archive.display(), lock.display())]
    Busy {
        /// The archive.
        archive: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// What the holder wrote in the lock file (`pid N: scrub`), or `unknown`.
        holder: String,
    },
    /// The lock file could not be opened or locked.
    #[error("{}: cannot lock: {source}", lock.display())]
    Io {
        /// The lock file.
        lock: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl LockError {
    /// The folder the lock file goes in is read-only or not ours: nothing can write the
    /// archive either, so a reader may go on without the lock.
    pub fn is_unwritable(&self) -> bool {
        match self {
            LockError::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::EACCES) | Some(libc::EROFS) | Some(libc::EPERM)
            ),
            LockError::Busy { .. } => false,
        }
    }
}

/// A held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ArchiveLock {
    _file: File,
    path: PathBuf,
}

impl Drop for ArchiveLock {
    fn drop(&mut self) {
        // still held: nobody else can be between taking it and checking the path
        let _ = std::fs::remove_file(&self.path);
    }
}

impl ArchiveLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The folder a lock on `archive` protects: the archive itself, or the root it is a process
/// capture of.
pub fn locked_folder(archive: &Path) -> PathBuf {
    // canonical when it exists; else its canonical parent and its name (a scrub interrupted
    // between its two renames leaves no folder at the name, and must find the same lock)
    let canon = std::fs::canonicalize(archive).unwrap_or_else(|_| {
        let parent = archive
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        match archive.file_name() {
            Some(n) => parent.join(n),
            None => parent,
        }
    });
    if let Some(parent) = canon.parent() {
        let is_pid = canon
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| crate::manifest::parse_pid_dir_name(n).is_some());
        if is_pid && std::fs::symlink_metadata(parent.join(MANIFEST)).is_ok() {
            return parent.to_path_buf();
        }
    }
    canon
}

/// The lock file of `archive`.
pub fn lock_path(archive: &Path) -> PathBuf {
    let folder = locked_folder(archive);
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "archive".into());
    folder
        .parent()
        .unwrap_or(Path::new("/"))
        .join(format!(".{name}.hrr-lock"))
}

/// Take the exclusive lock of `archive` for `what` (`scrub`, `pack`), without waiting: a
/// second holder gets [`LockError::Busy`] naming the first.
pub fn exclusive(archive: &Path, what: &str) -> Result<ArchiveLock, LockError> {
    let path = lock_path(archive);
    // The holder removes the file when it is done: a lock taken on a file that was removed
    // (or replaced) meanwhile is not the lock; take it again on the file now at the path.
    for _ in 0..100 {
        let file = lock_once(archive, &path, what)?;
        let same = match (file.metadata(), std::fs::symlink_metadata(&path)) {
            (Ok(a), Ok(b)) => {
                use std::os::unix::fs::MetadataExt;
                a.dev() == b.dev() && a.ino() == b.ino()
            }
            _ => false,
        };
        if same {
            return Ok(ArchiveLock { _file: file, path });
        }
        // closed without removing anything: that file is no longer the lock
        drop(file);
    }
    Err(LockError::Io {
        lock: path,
        source: std::io::Error::other("the lock file keeps being replaced"),
    })
}

fn lock_once(archive: &Path, path: &Path, what: &str) -> Result<File, LockError> {
    let path = path.to_path_buf();
    let io = |source| LockError::Io {
        lock: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(io)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(LockError::Busy {
                archive: locked_folder(archive),
                lock: path.clone(),
                holder: if holder.is_empty() {
                    "unknown".into()
                } else {
                    holder.chars().take(200).collect()
                },
            });
        }
        Err(e) => return Err(io(e.into())),
    }
    // Say who holds it, for the message a second command prints.
    let note = format!("pid {}: {what}\n", std::process::id());
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(note.as_bytes()));
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("run.hrr");
        std::fs::create_dir(&a).unwrap();
        let first = exclusive(&a, "scrub").unwrap();
        let e = exclusive(&a, "pack").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("in use by another hrr-pack"), "{msg}");
        assert!(
            msg.contains(&format!("pid {}: scrub", std::process::id())),
            "{msg}"
        );
        assert!(!e.is_unwritable());
        assert_eq!(first_lock_name(&a), ".run.hrr.hrr-lock");
        assert!(first.path().exists());
        drop(first);
        assert!(!lock_path(&a).exists(), "removed when released");
        // a lock file left by a killed holder (no flock on it any more) is taken over
        std::fs::write(lock_path(&a), "pid 1: scrub\n").unwrap();
        let again = exclusive(&a, "pack").unwrap();
        assert!(lock_path(&a).exists());
        drop(again);
        assert!(!lock_path(&a).exists());
    }

    fn first_lock_name(a: &Path) -> String {
        lock_path(a)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
}
