//! Helpers of the `hrr-playback` command-line tests (`cli.rs`, `cli_repair.rs`): the binary run
//! from the workspace root, the checked-in demo archive and copies of it, golden files, small
//! captures written here, and the one-error-line rule of bad input.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use hrr_archive::schema::{FieldType, PayloadBuilder, Schema};
use hrr_archive::writer::ProcessWriter;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The checked-in demo archive.
pub fn demo() -> PathBuf {
    workspace().join("examples/demo.hrr")
}

/// The binary, run from the workspace root (so `examples/demo.hrr` is a stable relative path).
pub fn hrr() -> Command {
    let mut c = Command::cargo_bin("hrr-playback").unwrap();
    c.current_dir(workspace());
    c
}

/// What a run of the binary left.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The binary on `args` (text): exit code (-1 when killed), stdout, stderr.
pub fn run(args: &[&str]) -> Out {
    run_in(args)
}

/// The binary on `args` (paths and text).
pub fn run_in(args: &[impl AsRef<std::ffi::OsStr>]) -> Out {
    let o = hrr().args(args).output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

/// The binary on the archive (or other path) `path`, then `args`.
pub fn run_at(path: &Path, args: &[&str]) -> Out {
    let mut a = vec![path.as_os_str()];
    a.extend(args.iter().map(std::ffi::OsStr::new));
    run_in(&a)
}

/// Compare with `tests/golden/<name>` (or write it under `HRR_BLESS=1`).
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("HRR_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with HRR_BLESS=1 to create it)",
            path.display()
        )
    });
    assert_eq!(actual, expected, "output differs from {}", path.display());
}

/// Copy the tree `src` to `dst`, files with mode 0644.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
            // As git checks it out: 0644, whatever the writer made.
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// A copy of the demo archive in a temp folder: (guard, `<tmp>/demo.hrr`).
pub fn demo_copy() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("demo.hrr");
    copy_dir(&demo(), &d);
    (t, d)
}

/// `s` with the temp folder `tmp` written `<TMP>`.
pub fn filter(s: &str, tmp: &Path) -> String {
    s.replace(&tmp.display().to_string(), "<TMP>")
}

/// Every file and folder under `dir` with its size, mtime and mode.
pub fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            out.insert(e.path(), (m.len(), m.mtime(), m.mtime_nsec(), m.mode()));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// Whether the tests run as root (which reads unreadable files).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The schema of the captures written here: `apiAlloc` (type 1) and a launch (type 2).
pub fn test_schema() -> Schema {
    use FieldType::*;
    hrr_archive::testkit::test_api_schema(7, &[("result", Result), ("kernel", Str)])
}

/// A finished capture of `n` events under `root/pid-<pid>/`.
pub fn capture(root: &Path, pid: u32, n: u64) -> PathBuf {
    let mut w = ProcessWriter::create(root, pid, 1, &test_schema()).unwrap();
    for i in 0..n {
        let mut p = PayloadBuilder::new();
        if i % 3 == 2 {
            p.i32(0).str("kern");
            w.events().append_at(2, 9, 1000 + i, p.as_bytes()).unwrap();
        } else {
            p.i32(0).u64(0x1000 * i).u64(i);
            w.events().append_at(1, 9, 1000 + i, p.as_bytes()).unwrap();
        }
    }
    let dir = w.dir().to_path_buf();
    w.finish().unwrap();
    dir
}

/// `capture(folder, pid, n)` in a fresh folder (keep it alive): the folder, the process folder
/// and the path of its `events.bin`.
pub fn capture_in_temp(pid: u32, n: u64) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = capture(t.path(), pid, n);
    let events = dir.join("events.bin");
    (t, dir, events)
}

/// Each line of `stdout`, decoded as JSON.
pub fn json_lines<T: serde::de::DeserializeOwned>(stdout: &str) -> Vec<T> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The error line (an optional `hint:` line may follow it, nothing else).
pub fn one_error_line(o: &Out) -> &str {
    assert_eq!(o.code, 1, "stdout: {}\nstderr: {}", o.stdout, o.stderr);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: ")),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("panicked") && !o.stderr.contains("RUST_BACKTRACE"));
    assert!(!o.stderr.contains("(os error"), "{}", o.stderr);
    lines[0]
}
