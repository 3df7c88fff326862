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
        .map(|m| m.pid)
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

/// The pid of a live writer holding the process capture `dir`: its `active` marker names a
/// process that exists (`/proc/<pid>`) and is not this one. A marker naming a dead process is
/// stale: `None`.
pub fn running_writer(dir: &Path) -> Option<u32> {
    let text = fsutil::read_small(&dir.join(ACTIVE_MARKER), 4096).ok()?;
    let pid: u32 = String::from_utf8_lossy(&text).trim().parse().ok()?;
    (pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists()).then_some(pid)
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
