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

/// Open `base/<rel[0]>/…/<rel[n-1]>`, an existing regular file, for reading without following a
/// link at any component below `base` (`base` itself may be reached through one: the user named
/// it). Each folder is opened with `O_NOFOLLOW|O_DIRECTORY` relative to the one before, so a
/// folder swapped for a link between a check and the open is still refused. A link anywhere is
/// [`Error::Symlink`] naming it; a component that is not a folder, [`Error::NotADirectory`];
/// a missing one, [`Error::Missing`]; a final component that is not a regular file (a FIFO, a
/// device, a folder), [`Error::NotAFile`].
pub fn open_beneath(base: &Path, rel: &[&str]) -> Result<File> {
    use rustix::fs::{openat, statat, AtFlags, FileType, Mode, OFlags};
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(base, dir_flags, Mode::empty()).map_err(|e| errno(base, e))?;
    let mut path = base.to_path_buf();
    let Some((last, folders)) = rel.split_last() else {
        return Err(Error::NotAFile(path));
    };
    // Classify a failed open of `name` in `dir`: a link, a non-folder, or the error itself.
    let classify = |dir: &rustix::fd::OwnedFd, name: &str, path: &Path, e| -> Error {
        match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                Error::Symlink(path.to_path_buf())
            }
            _ => errno(path, e),
        }
    };
    for name in folders {
        path.push(name);
        let next = openat(&dir, *name, dir_flags | OFlags::NOFOLLOW, Mode::empty());
        dir = match next {
            Ok(fd) => fd,
            Err(e) if e == rustix::io::Errno::NOTDIR => {
                return Err(match classify(&dir, name, &path, e) {
                    Error::Symlink(p) => Error::Symlink(p),
                    _ => Error::NotADirectory(path),
                })
            }
            Err(e) => return Err(classify(&dir, name, &path, e)),
        };
    }
    path.push(last);
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd =
        openat(&dir, *last, flags, Mode::empty()).map_err(|e| classify(&dir, last, &path, e))?;
    let file = File::from(fd);
    if !file.metadata().at(&path)?.is_file() {
        return Err(Error::NotAFile(path));
    }
    Ok(file)
}

/// `e` on `path`, as [`IoContext::at`] words it.
fn errno(path: &Path, e: rustix::io::Errno) -> Error {
    match Err::<(), _>(std::io::Error::from(e)).at(path) {
        Err(e) => e,
        Ok(()) => unreachable!(),
    }
}

/// Open an existing regular file for reading without following a link (at its last component
/// only: to open a file inside an archive, use [`open_beneath`] or the openers of
/// [`crate::blobs`], which refuse a link at any folder on the way too).
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

/// Is process `pid` alive, and (when `made` is given) already running at `made`? A process
/// that started after `made` (by more than 2 s, for the clock's grain) holds a reused pid: the
/// one that made the file is gone. Without a readable `/proc` nothing can be told: alive.
pub fn process_alive_since(pid: u32, made: Option<std::time::SystemTime>) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return false;
    }
    match (made, process_start_time(pid)) {
        (Some(made), Some(start)) => start <= made + std::time::Duration::from_secs(2),
        _ => true,
    }
}

/// When process `pid` started (from `/proc/<pid>/stat` and the boot time in `/proc/stat`).
pub fn process_start_time(pid: u32) -> Option<std::time::SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses): field 3 onwards;
    // field 22 is the start time in clock ticks since boot.
    let after = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let btime: u64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let since_boot = std::time::Duration::from_millis(ticks.saturating_mul(1000) / hz);
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(btime) + since_boot)
}

/// A writer temp file's name (`.<name>.<pid>.<n>.tmp`) → the pid of the process that made it.
pub fn temp_name_pid(name: &str) -> Option<u32> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(3, '.');
    let n = parts.next()?;
    let pid = parts.next()?;
    parts.next().filter(|stem| !stem.is_empty())?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    crate::layout::names::parse_pid_dir_name(&format!("pid-{pid}"))
}

/// Is the temp file or folder at `path`, made by process `pid`, left over from a process that is
/// gone (see [`process_alive_since`])?
pub fn is_stale(path: &Path, pid: u32) -> bool {
    let made = fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
    if pid == std::process::id() {
        // Ours only if it was made after this process started.
        return match (made, process_start_time(pid)) {
            (Some(made), Some(start)) => made + std::time::Duration::from_secs(2) < start,
            _ => false,
        };
    }
    !process_alive_since(pid, made)
}

/// Remove the writer temp files (`.<name>.<pid>.<n>.tmp`, regular files) directly in `folder`
/// that were left by a process that is gone ([`is_stale`]); with `only_for`, only those of that
/// target name. Returns what was removed (sorted); a folder that cannot be listed has none.
pub fn remove_stale_temp_files_in(folder: &Path, only_for: Option<&str>) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(folder) else {
        return Ok(removed);
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_name_pid(&name) else {
            continue;
        };
        if let Some(target) = only_for {
            if !name.starts_with(&format!(".{target}.")) {
                continue;
            }
        }
        if !e.file_type().is_ok_and(|t| t.is_file()) || !is_stale(&e.path(), pid) {
            continue;
        }
        fs::remove_file(e.path()).at(e.path())?;
        removed.push(e.path());
    }
    removed.sort();
    Ok(removed)
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
    create_new_mode(path, FILE_MODE)
}

/// [`create_new`] with another mode (the umask applies): a pack, which is shipped.
pub fn create_new_mode(path: &Path, mode: u32) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
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

/// Open a file for appending (every write lands at its end, also after it was truncated),
/// creating it 0600 if missing; never through a link.
pub fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .at(path)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The last component of `path` as text (lossy), empty when it has none (`/`, `..`).
pub fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A unique temporary name beside `path` (same folder, so rename is atomic).
pub fn temp_path_for(path: &Path) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = name_of(path);
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
