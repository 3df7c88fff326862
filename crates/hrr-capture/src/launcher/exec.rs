//! Starting the program: find `libhrr_capture.so`, put it first in `LD_PRELOAD`, name the archive
//! in `HIP_HRR_CAPTURE_OUTPUT`, and replace this process with the program.
//!
//! hrr-capture `exec`s the program instead of running it as a child: nothing needs to happen
//! after it, and so every signal sent to hrr-capture (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
//! SIGUSR2, ...) reaches the program itself, exactly once, and whoever started hrr-capture sees
//! the program's own exit status or death by signal.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::fail::{why, Fail, EXIT_CANNOT_EXECUTE, EXIT_FAILURE, EXIT_NOT_FOUND};

/// The library file name.
pub const LIBRARY: &str = "libhrr_capture.so";

/// `$HRR_CAPTURE_LIB`, else `libhrr_capture.so` next to this program, else in `../lib` beside it.
pub fn library_path() -> Result<PathBuf, Fail> {
    if let Some(p) = std::env::var_os("HRR_CAPTURE_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(Fail::new(
                EXIT_FAILURE,
                format!("HRR_CAPTURE_LIB={}", p.display()),
                "no such file",
            )
            .hint(format!("point HRR_CAPTURE_LIB at {LIBRARY}, or unset it")));
        }
        return Ok(absolute(&p));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Fail::new(EXIT_FAILURE, "locating hrr-capture itself", why(&e)))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    for candidate in [dir.join(LIBRARY), dir.join("../lib").join(LIBRARY)] {
        if candidate.is_file() {
            return Ok(candidate.canonicalize().unwrap_or(candidate));
        }
    }
    Err(Fail::new(
        EXIT_FAILURE,
        LIBRARY,
        format!("not found next to {} nor in ../lib", exe.display()),
    )
    .hint(format!(
        "build it (cargo build -p hrr-capture) or set HRR_CAPTURE_LIB=/path/{LIBRARY}"
    )))
}

/// `path` made absolute against the current folder (the program may change folders).
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    match std::env::current_dir() {
        Ok(d) => d.join(path),
        Err(_) => path.to_path_buf(),
    }
}

/// `LD_PRELOAD` for the program: the library first, then what was there (without repeating it).
pub fn preload(lib: &Path, old: Option<&OsStr>) -> OsString {
    let mut v = OsString::from(lib);
    let Some(old) = old.filter(|o| !o.is_empty()) else {
        return v;
    };
    match old.to_str() {
        // ld.so separates entries by colons or spaces.
        Some(old) => {
            for part in old
                .split([':', ' '])
                .filter(|p| !p.is_empty() && Path::new(p) != lib)
            {
                v.push(":");
                v.push(part);
            }
        }
        // Not UTF-8: kept as it is.
        None => {
            v.push(":");
            v.push(old);
        }
    }
    v
}

/// Replace this process with `command`, recording into `archive` (absolute) through `lib`.
/// Returns only if the program could not be started.
pub fn exec(command: &[OsString], lib: &Path, archive: &Path) -> Fail {
    let old = std::env::var_os("LD_PRELOAD");
    let err = Command::new(&command[0])
        .args(&command[1..])
        .env("LD_PRELOAD", preload(lib, old.as_deref()))
        .env("HIP_HRR_CAPTURE_OUTPUT", archive)
        .exec();
    let name = Path::new(&command[0]).display().to_string();
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_CANNOT_EXECUTE
    };
    let fail = Fail::new(code, format!("cannot run {name}"), why(&err));
    if code == EXIT_NOT_FOUND && !name.contains('/') {
        fail.hint(format!("{name} is not in $PATH; give its path (./{name}?)"))
    } else {
        fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_comes_first_and_once() {
        let lib = Path::new("/x/libhrr_capture.so");
        assert_eq!(preload(lib, None), OsString::from("/x/libhrr_capture.so"));
        assert_eq!(
            preload(lib, Some(OsStr::new(""))),
            OsString::from("/x/libhrr_capture.so")
        );
        assert_eq!(
            preload(lib, Some(OsStr::new("/a.so /x/libhrr_capture.so:/b.so"))),
            OsString::from("/x/libhrr_capture.so:/a.so:/b.so")
        );
    }

    #[test]
    fn relative_paths_become_absolute() {
        assert!(absolute(Path::new("run.hrr")).is_absolute());
        assert_eq!(absolute(Path::new("/a/b")), PathBuf::from("/a/b"));
    }
}
