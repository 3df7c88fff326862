//! Exclusive locks on an archive, so two commands that rewrite or read a whole archive (scrub,
//! pack) never run on it at once.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on a lock file *beside* the archive folder,
//! `.<name>.hrr-lock` (not inside it: it would be packed, and a scrub swaps the folder). The
//! kernel drops the lock when its holder exits, however it exits (`kill -9` included), so a lock
//! is never stale; the file itself is left in place (removing it would race with a new holder).
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

impl ArchiveLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The folder a lock on `archive` protects: the archive itself, or the root it is a process
/// capture of.
pub fn locked_folder(archive: &Path) -> PathBuf {
    let canon = std::fs::canonicalize(archive).unwrap_or_else(|_| archive.to_path_buf());
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
    Ok(ArchiveLock { _file: file, path })
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
        drop(first);
        exclusive(&a, "pack").unwrap();
        assert_eq!(first_lock_name(&a), ".run.hrr.hrr-lock");
    }

    fn first_lock_name(a: &Path) -> String {
        lock_path(a)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
}
