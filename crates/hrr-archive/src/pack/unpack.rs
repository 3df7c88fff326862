//! Unpacking: a pack into a fresh private temp folder inside the destination, every file checked
//! against the index as it is written, renamed into place only when the whole pack checked out;
//! an existing folder is never replaced. See FORMAT.md §9.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::index::{io_err, PackError, PackFile, PackIndex, PackResult};
use super::read::{check_hash, read_index, read_pack, PackVisitor};
use crate::error::Error;
use crate::fsutil;
use crate::layout;
use crate::progress::Progress;

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
        check_hash(pack, rel, file, found)
    }
}

/// Remove the temp folders (`.hrr-unpack-<pid>-*`) that unpacks killed before their end left in
/// `dest`: those whose pid is dead, or now belongs to a process younger than the folder. A live
/// unpack's folder is left alone, and so is anything of another shape (a link, a file, a name
/// without a pid). Returns what was removed.
pub fn remove_stale_unpack_dirs(dest: &Path) -> PackResult<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(dest) else {
        return Ok(removed);
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(layout::UNPACK_TEMP_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split_once('-').and_then(|(pid, _)| {
            layout::parse_pid_dir_name(&format!("{}{pid}", layout::PID_DIR_PREFIX))
        }) else {
            continue;
        };
        if !e.file_type().is_ok_and(|t| t.is_dir()) || !fsutil::is_stale(&e.path(), pid) {
            continue;
        }
        fs::remove_dir_all(e.path()).map_err(io_err(&e.path()))?;
        removed.push(e.path());
    }
    removed.sort();
    Ok(removed)
}

/// Unpack the pack at `pack` into the folder `dest`, creating `dest/<root>`: everything is
/// written into a private temp folder inside `dest`, each file checked against the index as it
/// is written, and renamed into place only when all is good (with `sync`, after flushing the
/// file system); an existing `dest/<root>` is never replaced. Returns `dest/<root>`. The temp
/// folder is named `.hrr-unpack-<pid>-<random>`, so that a later run can tell one left by a
/// killed unpack ([`remove_stale_unpack_dirs`]).
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
    let prefix = format!("{}{}-", layout::UNPACK_TEMP_PREFIX, std::process::id());
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
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
