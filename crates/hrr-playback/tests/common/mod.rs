//! Helpers shared by the round-trip tests: where the built binaries are, running programs
//! bounded in time, building the fake CUDA driver, reading archives back through `--events`.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

/// Folder of the built `hrr-playback` (and, after `cargo build --workspace`, `hrr-capture` and
/// `libhrr_capture.so`).
pub fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hrr-playback"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every program runs under `timeout`, so a hang fails the test instead of stalling CI.
pub fn bounded(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("timeout");
    c.arg("120").arg(program);
    c
}

/// `hrr-playback`, bounded.
pub fn playback() -> Command {
    bounded(env!("CARGO_BIN_EXE_hrr-playback"))
}

/// Run to completion: exit code (-1 when killed), stdout, stderr.
pub fn run(mut c: Command) -> (i32, String, String) {
    let o = c.output().expect("run");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Build the fake `libcuda.so.1` and its apps into a folder of this test process (`tag` keeps
/// test binaries apart), checking the capture library was built first.
pub fn build_fake_cuda(tag: &str) -> PathBuf {
    let lib = bin_dir().join("libhrr_capture.so");
    assert!(
        lib.is_file() && bin_dir().join("hrr-capture").is_file(),
        "{} and hrr-capture are missing: run `cargo build --workspace` before the tests",
        lib.display()
    );
    let out = std::env::temp_dir().join(format!("hrr-fake-cuda{tag}-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fake-cuda/build.sh");
    let st = Command::new("sh")
        .arg(&script)
        .arg(&out)
        .status()
        .expect("run build.sh");
    assert!(st.success(), "building the fake driver failed");
    out
}

/// The `pid-*` folders of an archive, sorted.
pub fn pid_dirs(archive: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(archive)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pid-"))
        .collect();
    v.sort();
    v
}

/// Every event of `target`, from `--events --json`.
pub fn events_json(target: &Path) -> Vec<serde_json::Value> {
    let (code, out, err) = run({
        let mut c = playback();
        c.arg(target).args(["--events", "--json"]);
        c
    });
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A test that cannot run here: prints `SKIPPED: <why> (<how to get it>)` and records
/// `<test>\t<why>` in `$HRR_TEST_SKIP_LOG` when that is set (scripts/test.sh counts the lines and
/// ends with `N tests skipped (why)`), so a partial run is visible, not only in captured stderr.
pub fn skipped(why: &str, how: &str) {
    if how.is_empty() {
        eprintln!("SKIPPED: {why}");
    } else {
        eprintln!("SKIPPED: {why} ({how})");
    }
    if let Some(log) = std::env::var_os("HRR_TEST_SKIP_LOG") {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let line = format!("{}::{test}\t{why}\n", env!("CARGO_CRATE_NAME"));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let _ = f.write_all(line.as_bytes()); // one O_APPEND write: lines never interleave
        }
    }
}

/// The fake CUDA driver of a test binary, and capture and replay against it.
pub struct FakeCuda {
    /// Where `libcuda.so.1` and the apps were built.
    pub dir: PathBuf,
}

impl FakeCuda {
    /// The fake driver and its apps, built once per test binary (`tag` keeps binaries apart).
    pub fn get(tag: &str) -> &'static FakeCuda {
        static FAKE: std::sync::OnceLock<FakeCuda> = std::sync::OnceLock::new();
        FAKE.get_or_init(|| FakeCuda {
            dir: build_fake_cuda(tag),
        })
    }

    /// `hrr-capture -o archive -- app args`.
    pub fn capture(&self, archive: &Path, app: &str, args: &[&str]) -> std::process::Output {
        let mut c = bounded(bin_dir().join("hrr-capture"));
        c.arg("-o")
            .arg(archive)
            .arg("--")
            .arg(self.dir.join(app))
            .args(args)
            .env("LD_LIBRARY_PATH", &self.dir)
            .env("HRR_CAPTURE_MIN_FREE_MB", "1");
        c.output().expect("run hrr-capture")
    }

    /// `hrr-playback target extra --no-progress`: exit code, stdout, stderr.
    pub fn replay(&self, target: &Path, extra: &[&str]) -> (i32, String, String) {
        let mut c = playback();
        c.arg(target)
            .args(extra)
            .arg("--no-progress")
            .env("LD_LIBRARY_PATH", &self.dir);
        run(c)
    }
}
