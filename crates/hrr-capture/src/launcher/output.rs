//! What `-o ARCHIVE` names before the program starts, and what `--append`/`--force` do about an
//! archive left by an earlier run. The archive of an earlier run is never deleted: `--force`
//! renames it to `ARCHIVE.old-<timestamp>` beside it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hrr_archive::manifest::{parse_pid_dir_name, MANIFEST};
use hrr_archive::writer::EVENTS_FILE;

use super::fail::{why, Fail, EXIT_FAILURE, EXIT_USAGE};

/// What a path given as `-o` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Nothing there yet.
    Missing,
    /// An empty folder, or an archive root that holds no process capture.
    Fresh,
    /// An archive root holding the `pid-*` folders of an earlier run (their names, sorted by pid).
    EarlierRun(Vec<String>),
    /// One process capture (`pid-<pid>/`, holds `events.bin`), not an archive root.
    ProcessCapture,
    /// A folder holding other things (not an archive).
    Foreign,
    /// Something that is not a folder.
    NotAFolder,
}

/// Classify `path` (followed if it is a link: the user named it).
pub fn inspect(path: &Path) -> Result<State, Fail> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling link would make the library fail later; say so now.
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(Fail::new(
                    EXIT_USAGE,
                    path.display(),
                    "is a link to nothing",
                ));
            }
            return Ok(State::Missing);
        }
        Err(e) => return Err(Fail::new(EXIT_FAILURE, path.display(), why(&e))),
    };
    if !meta.is_dir() {
        return Ok(State::NotAFolder);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| Fail::new(EXIT_FAILURE, path.display(), why(&e)))?;
    let mut pids: Vec<(u32, String)> = Vec::new();
    let (mut manifest, mut events, mut other) = (false, false, false);
    for entry in entries {
        let entry = entry.map_err(|e| Fail::new(EXIT_FAILURE, path.display(), why(&e)))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = parse_pid_dir_name(&name) {
            pids.push((pid, name));
        } else if name == MANIFEST {
            manifest = true;
        } else if name == EVENTS_FILE {
            events = true;
        } else {
            other = true;
        }
    }
    pids.sort();
    Ok(if events {
        State::ProcessCapture
    } else if !pids.is_empty() {
        State::EarlierRun(pids.into_iter().map(|(_, n)| n).collect())
    } else if manifest || !other {
        State::Fresh
    } else {
        State::Foreign
    })
}

/// What to do before the program starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Record into the path as it is.
    Record,
    /// Rename the earlier archive to this path first.
    MoveAside(PathBuf),
}

/// Decide what to do with `path` (as the user gave it) in `state`, given `--append`/`--force`.
pub fn plan(path: &Path, state: &State, append: bool, force: bool) -> Result<Plan, Fail> {
    let shown = path.display();
    match state {
        State::Missing | State::Fresh => Ok(Plan::Record),
        State::EarlierRun(pids) => {
            if append {
                Ok(Plan::Record)
            } else if force {
                Ok(Plan::MoveAside(aside_path(path)?))
            } else {
                Err(Fail::new(
                    EXIT_USAGE,
                    shown,
                    format!(
                        "already holds the capture of an earlier run ({})",
                        describe_pids(pids)
                    ),
                )
                .hint(format!(
                    "--append adds this run's processes to it; --force moves it aside to \
                     {}.old-<timestamp> and captures into a fresh one; or choose another -o",
                    path_name(path)
                )))
            }
        }
        State::ProcessCapture => {
            if force {
                Ok(Plan::MoveAside(aside_path(path)?))
            } else {
                let e = Fail::new(
                    EXIT_USAGE,
                    shown,
                    "is one process capture of an earlier run (it holds events.bin), not an \
                     archive folder",
                );
                Err(if append {
                    e.hint(
                        "--append adds processes to an archive folder (the one holding \
                         pid-<pid>/ folders); name that folder instead",
                    )
                } else {
                    e.hint(format!(
                        "--force moves it aside to {}.old-<timestamp> and captures into a fresh \
                         one; or choose another -o",
                        path_name(path)
                    ))
                })
            }
        }
        State::Foreign => Err(Fail::new(
            EXIT_USAGE,
            shown,
            "is a folder that is not an hrr archive (it holds other files)",
        )
        .hint("name a new or empty folder with -o")),
        State::NotAFolder => Err(Fail::new(
            EXIT_USAGE,
            shown,
            "exists and is not a folder (an archive is a folder)",
        )
        .hint("name a new or empty folder with -o")),
    }
}

/// Carry out a plan's move: rename `path` to `to`, both beside each other.
pub fn move_aside(path: &Path, to: &Path) -> Result<(), Fail> {
    std::fs::rename(path, to).map_err(|e| {
        Fail::new(
            EXIT_FAILURE,
            format!("moving {} aside to {}", path.display(), to.display()),
            why(&e),
        )
    })
}

/// `pid-1180, pid-1204` (at most four named).
fn describe_pids(pids: &[String]) -> String {
    const SHOWN: usize = 4;
    let n = pids.len();
    let names = pids[..n.min(SHOWN)].join(", ");
    let more = if n > SHOWN {
        format!(", and {} more", n - SHOWN)
    } else {
        String::new()
    };
    let noun = if n == 1 { "process" } else { "processes" };
    format!("{n} {noun}: {names}{more}")
}

/// The last name of `path` (`run.hrr` of `out/run.hrr/`).
fn path_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `ARCHIVE.old-<YYYYmmdd-HHMMSS>` beside `path` (local time), with `-2`, `-3`, ... added when
/// that name is taken.
pub fn aside_path(path: &Path) -> Result<PathBuf, Fail> {
    let Some(name) = path.file_name() else {
        return Err(Fail::new(
            EXIT_USAGE,
            path.display(),
            "has no name to move aside (name the archive folder itself)",
        ));
    };
    let stamp = timestamp();
    let mut base = OsString::from(name);
    base.push(format!(".old-{stamp}"));
    let mut candidate = path.with_file_name(&base);
    let mut n = 2;
    while std::fs::symlink_metadata(&candidate).is_ok() {
        let mut next = base.clone();
        next.push(format!("-{n}"));
        candidate = path.with_file_name(next);
        n += 1;
    }
    Ok(candidate)
}

/// Local time now as `YYYYmmdd-HHMMSS`.
fn timestamp() -> String {
    // SAFETY: `time(NULL)` only reads the clock; `localtime_r` writes into `tm`, which we own.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return format!("{now}");
        }
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        assert_eq!(inspect(&p.join("none")).unwrap(), State::Missing);
        assert_eq!(inspect(p).unwrap(), State::Fresh);
        std::fs::write(p.join(MANIFEST), "{}").unwrap();
        assert_eq!(inspect(p).unwrap(), State::Fresh);
        std::fs::create_dir(p.join("pid-20")).unwrap();
        std::fs::create_dir(p.join("pid-3")).unwrap();
        assert_eq!(
            inspect(p).unwrap(),
            State::EarlierRun(vec!["pid-3".into(), "pid-20".into()])
        );
        std::fs::write(p.join("pid-3").join(EVENTS_FILE), "").unwrap();
        assert_eq!(inspect(&p.join("pid-3")).unwrap(), State::ProcessCapture);
        std::fs::write(p.join("notes.txt"), "").unwrap();
        assert_eq!(inspect(&p.join("notes.txt")).unwrap(), State::NotAFolder);
        let f = t.path().join("foreign");
        std::fs::create_dir(&f).unwrap();
        std::fs::write(f.join("a"), "").unwrap();
        assert_eq!(inspect(&f).unwrap(), State::Foreign);
    }

    #[test]
    fn plans() {
        let p = Path::new("/nonexistent/run.hrr");
        let earlier = State::EarlierRun(vec!["pid-1".into()]);
        assert_eq!(
            plan(p, &State::Missing, false, false).unwrap(),
            Plan::Record
        );
        assert_eq!(plan(p, &State::Fresh, false, true).unwrap(), Plan::Record);
        assert_eq!(plan(p, &earlier, true, false).unwrap(), Plan::Record);
        let e = plan(p, &earlier, false, false).unwrap_err();
        assert_eq!(e.code, EXIT_USAGE);
        assert!(
            e.message.contains("earlier run (1 process: pid-1)"),
            "{}",
            e.message
        );
        let hint = e.hint.unwrap();
        assert!(
            hint.contains("--append") && hint.contains("--force"),
            "{hint}"
        );
        match plan(p, &earlier, false, true).unwrap() {
            Plan::MoveAside(to) => {
                let name = to.file_name().unwrap().to_string_lossy().into_owned();
                assert!(name.starts_with("run.hrr.old-"), "{name}");
                assert_eq!(to.parent(), p.parent());
            }
            other => panic!("{other:?}"),
        }
        for s in [State::Foreign, State::NotAFolder] {
            assert_eq!(plan(p, &s, true, true).unwrap_err().code, EXIT_USAGE);
        }
        assert!(plan(p, &State::ProcessCapture, true, false).is_err());
        assert!(plan(p, &State::ProcessCapture, false, true).is_ok());
    }

    #[test]
    fn aside_names_never_collide() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("run.hrr");
        let first = aside_path(&p).unwrap();
        std::fs::create_dir(&first).unwrap();
        let second = aside_path(&p).unwrap();
        assert_ne!(first, second);
        assert!(second.to_string_lossy().ends_with("-2") || !second.exists());
    }

    #[test]
    fn pid_lists_are_bounded() {
        let pids: Vec<String> = (1..=6).map(|i| format!("pid-{i}")).collect();
        assert_eq!(
            describe_pids(&pids),
            "6 processes: pid-1, pid-2, pid-3, pid-4, and 2 more"
        );
    }
}
