//! Where things are. [`names`] (re-exported here) owns every file and folder name of the format;
//! this module adds what needs more than a name: what a user-given path is (an archive root or
//! one process capture, [`resolve`]), a capture's pid, and the `active` marker (is a writer
//! running?). See FORMAT.md §1, §5, §6.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::fsutil;
use crate::manifest;

pub mod names;
pub use names::*;

/// What a path given by the user points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An archive root holding `pid-*` folders.
    Root {
        /// The root folder.
        root: PathBuf,
        /// Its process captures, sorted by pid.
        processes: Vec<(u32, PathBuf)>,
    },
    /// One process capture (`pid-<pid>/`).
    Process {
        /// The folder.
        dir: PathBuf,
    },
}

/// Classify `path`. The path itself may be reached through a link (the user named it); nothing
/// inside it is.
pub fn resolve(path: &Path) -> Result<Target> {
    let meta = std::fs::metadata(path).at(path)?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory(path.to_path_buf()));
    }
    let events = path.join(EVENTS_FILE);
    match std::fs::symlink_metadata(&events) {
        Ok(m) if m.file_type().is_symlink() => return Err(Error::Symlink(events)),
        Ok(_) => {
            return Ok(Target::Process {
                dir: path.to_path_buf(),
            })
        }
        Err(_) => {}
    }
    let processes = list_pid_dirs(path)?;
    let has_manifest = std::fs::symlink_metadata(path.join(MANIFEST)).is_ok();
    if processes.is_empty() {
        // A `pid-<pid>/` folder (named so, or whose manifest names a pid) that lost its
        // events.bin is a broken process capture, not an empty root.
        let named_pid = pid_of_dir_name(path).is_some();
        let process_manifest = has_manifest && manifest::read_process_manifest(path).is_ok();
        if named_pid || process_manifest {
            return Err(Error::Missing(events));
        }
        if !has_manifest {
            return Err(Error::NotAnArchive(path.to_path_buf()));
        }
    }
    Ok(Target::Root {
        root: path.to_path_buf(),
        processes,
    })
}

/// pid of a process capture folder: from its manifest, else from its name.
pub fn pid_of(dir: &Path) -> Option<u32> {
    manifest::read_process_manifest(dir)
        .map(|m| m.status.pid)
        .ok()
        .or_else(|| pid_of_dir_name(dir))
}

/// `dir/events.bin`.
pub fn events_path(dir: &Path) -> PathBuf {
    dir.join(EVENTS_FILE)
}

/// Is an `active` marker present in the process capture `dir` (a capture running, or killed
/// before its clean shutdown)? Any entry of that name counts, a link included.
pub fn has_active_marker(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(ACTIVE_MARKER)).is_ok()
}

/// What the `active` marker of a process capture says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterState {
    /// No marker: no writer holds the capture.
    None,
    /// The marker names a process that is gone (or this one, or a later process that reused
    /// its pid): a writer was killed before its clean shutdown.
    Stale {
        /// The pid the marker names.
        pid: u32,
    },
    /// The marker names a live process other than this one: the capture is still running.
    Running {
        /// The writer's pid.
        pid: u32,
    },
}

/// Read the `active` marker of `dir`. It must be exactly what the writer writes: the pid in
/// decimal and a newline. Anything else (junk, an empty file, a link, a folder) is
/// [`Error::BadMarker`] (or [`Error::Symlink`]), never taken for a stale marker: whoever put it
/// there was not hrr's writer. A marker older than the live process now holding its pid was
/// left by an earlier process that had the pid: stale.
pub fn writer_state(dir: &Path) -> Result<WriterState> {
    let path = dir.join(ACTIVE_MARKER);
    let meta = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(WriterState::None),
        r => r.at(&path)?,
    };
    if meta.file_type().is_symlink() {
        return Err(Error::Symlink(path));
    }
    let bad = |why: String| Error::BadMarker {
        path: path.clone(),
        why,
    };
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.len() > 16 {
        return Err(bad(format!("{} bytes, longer than any pid", meta.len())));
    }
    let text = fsutil::read_small(&path, 16)?;
    let Some(digits) = text.strip_suffix(b"\n") else {
        return Err(bad(if text.is_empty() {
            "empty".into()
        } else {
            "does not end with a newline".into()
        }));
    };
    let digits = std::str::from_utf8(digits).unwrap_or("");
    let pid = match classify_pid_dir_name(&format!("{PID_DIR_PREFIX}{digits}")) {
        PidName::Canonical(pid) if pid > 0 => pid,
        _ => {
            return Err(bad(format!(
                "holds {:?}, not a process id",
                String::from_utf8_lossy(&text)
            )))
        }
    };
    let made = meta.modified().ok();
    if pid != std::process::id() && fsutil::process_alive_since(pid, made) {
        Ok(WriterState::Running { pid })
    } else {
        Ok(WriterState::Stale { pid })
    }
}

/// The pid of a live writer holding the process capture `dir` (see [`writer_state`]): `None`
/// when there is no marker or it is stale; an error when the marker is not a writer's.
pub fn running_writer(dir: &Path) -> Result<Option<u32>> {
    Ok(match writer_state(dir)? {
        WriterState::Running { pid } => Some(pid),
        _ => None,
    })
}

/// Refuse a process capture holding a symbolic link where the format has a file or folder:
/// any link directly inside `dir` (`events.bin`, `manifest.json`, `blobs/`, `code_objects/`,
/// `regions/`, `active`, ...), or inside `blobs/` (its `<2 hex>/` folders). Links are never
/// followed; the error names the first one found. (Files inside the object folders are checked
/// by [`crate::blobs::count_objects`] and opened with [`crate::fsutil::open_beneath`].)
pub fn check_no_links(dir: &Path) -> Result<()> {
    fsutil::require_dir(dir)?;
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .at(dir)?
        .map(|e| e.at(dir))
        .collect::<Result<_>>()?;
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let ft = entry.file_type().at(entry.path())?;
        if ft.is_symlink() {
            return Err(Error::Symlink(entry.path()));
        }
        if ft.is_dir() && entry.file_name() == BLOBS_DIR {
            for sub in std::fs::read_dir(entry.path()).at(entry.path())? {
                let sub = sub.at(entry.path())?;
                if sub.file_type().at(sub.path())?.is_symlink() {
                    return Err(Error::Symlink(sub.path()));
                }
            }
        }
    }
    Ok(())
}

/// Write the `active` marker of a writer with process id `pid`.
pub fn write_active_marker(dir: &Path, pid: u32) -> Result<()> {
    fsutil::write_atomic(
        &dir.join(ACTIVE_MARKER),
        format!("{pid}\n").as_bytes(),
        false,
    )
}

/// Remove the `active` marker (best effort: a missing one is fine).
pub fn remove_active_marker(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(ACTIVE_MARKER));
}
