//! Where things are: what a user-given path is (an archive root or one process capture) and the
//! processes a root holds. See FORMAT.md §1.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::manifest::{self, MANIFEST};
use crate::writer::EVENTS_FILE;

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
    let processes = manifest::list_pid_dirs(path)?;
    let has_manifest = std::fs::symlink_metadata(path.join(MANIFEST)).is_ok();
    if processes.is_empty() {
        // A `pid-<pid>/` folder (named so, or whose manifest names a pid) that lost its
        // events.bin is a broken process capture, not an empty root.
        let named_pid = manifest::parse_pid_dir_name(
            &path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
        .is_some();
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
        .or_else(|| manifest::parse_pid_dir_name(&dir.file_name()?.to_string_lossy()))
}
