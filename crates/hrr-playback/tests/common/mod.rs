//! Helpers shared by the round-trip tests: where the built binaries are, running programs
//! bounded in time, building the fake CUDA driver and capturing and replaying against it,
//! reading archives back (`--events`, manifests, blobs) and damaging their blobs.
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

/// A program's output `o`, which must say it exited 0 (its stderr is shown when not).
pub fn succeeded(o: std::process::Output) -> std::process::Output {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Run `tests/<fake>/build.sh` (`fake-cuda`, `fake-hip`) into `hrr-<fake><tag>-<pid>` in the
/// temp folder (`tag` keeps test binaries apart), checking the capture library was built first:
/// the folder and the script's output.
pub fn build_fake(fake: &str, tag: &str) -> (PathBuf, std::process::Output) {
    let lib = bin_dir().join("libhrr_capture.so");
    assert!(
        lib.is_file() && bin_dir().join("hrr-capture").is_file(),
        "{} and hrr-capture are missing: run `cargo build --workspace` before the tests",
        lib.display()
    );
    let out = std::env::temp_dir().join(format!("hrr-{fake}{tag}-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests")
        .join(fake)
        .join("build.sh");
    let o = Command::new("sh")
        .arg(&script)
        .arg(&out)
        .output()
        .expect("run build.sh");
    (out, o)
}

/// Build the fake `libcuda.so.1` and its apps into a folder of this test process (`tag` keeps
/// test binaries apart), checking the capture library was built first.
pub fn build_fake_cuda(tag: &str) -> PathBuf {
    let (out, o) = build_fake("fake-cuda", tag);
    assert!(
        o.status.success(),
        "building the fake driver failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// A fresh temporary folder and the path `name` in it (not created yet): keep the folder alive
/// for as long as the path is used.
pub fn temp_path(name: impl AsRef<Path>) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(name);
    (tmp, path)
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

/// `hrr-playback target args`, for what needs no driver (`--info`, `--repair`, `--events`):
/// exit code, stdout, stderr.
pub fn playback_on(target: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = playback();
    c.arg(target).args(args);
    run(c)
}

/// Every event of `target`, from `--events --json`.
pub fn events_json(target: &Path) -> Vec<serde_json::Value> {
    let (code, out, err) = playback_on(target, &["--events", "--json"]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The names of `events`, in order.
pub fn names(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

/// Assert each of `calls` is among the names of `events`.
pub fn assert_recorded(events: &[serde_json::Value], calls: &[&str]) {
    let names = names(events);
    for call in calls {
        assert!(
            names.iter().any(|n| n == call),
            "{call} missing from {names:?}"
        );
    }
}

/// Every event named `name`, in order.
pub fn all_named<'a>(events: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

/// The first of `events` named `name`.
pub fn first_named<'a>(events: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    events
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} event"))
}

/// The process manifest (`manifest.json`) of the capture `dir`, or an archive root's.
pub fn manifest_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// The blob id in field `field` of the first event of `dir` that has one.
pub fn first_blob(dir: &Path, field: &str) -> String {
    events_json(dir)
        .into_iter()
        .find_map(|e| e["fields"][field].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no event with a {field}"))
}

/// The blob file of `id` in the process capture `dir`.
pub fn blob_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("blobs").join(&id[..2]).join(format!("{id}.blob"))
}

/// Overwrite the blob `id` of `dir` with zeros, its size kept.
pub fn zero_blob(dir: &Path, id: &str) {
    let p = blob_path(dir, id);
    let len = std::fs::metadata(&p).unwrap().len() as usize;
    std::fs::write(&p, vec![0u8; len]).unwrap();
}

/// Flip the bits `mask` of byte `at` of the blob `id` of `dir`.
pub fn flip_blob_byte(dir: &Path, id: &str, at: usize, mask: u8) {
    let p = blob_path(dir, id);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[at] ^= mask;
    std::fs::write(&p, &bytes).unwrap();
}

/// A replay that fails its checks at `event` (its `seq` and name): exit 1, the event named, the
/// `MISMATCH` verdict.
pub fn assert_mismatch_at(code: i32, out: &str, event: &serde_json::Value) {
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "event #{} {}",
            event["seq"],
            event["name"].as_str().unwrap()
        )),
        "{out}"
    );
    assert!(out.trim_end().contains("[HRR] MISMATCH:"), "{out}");
}

/// A replay's text summary says every one of its `n` D2H checks passed, each exactly.
pub fn assert_checks_exact(out: &str, n: u64) {
    assert!(
        out.contains(&format!(
            "D2H checks      : {n} pass ({n} exact, 0 within tol), 0 fail, 0 skipped"
        )),
        "{out}"
    );
}

/// A replay's `--json` summary, decoded from its stdout (`err` is shown when it is not JSON).
pub fn summary(out: &str, err: &str) -> serde_json::Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
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

/// `hrr-playback target extra --no-progress` on the fake runtime built in `dir` (CUDA's or
/// HIP's), with the variables `env` set: exit code, stdout, stderr.
pub fn replay_on_fake(
    dir: &Path,
    target: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut c = playback();
    c.arg(target)
        .args(extra)
        .arg("--no-progress")
        .env("LD_LIBRARY_PATH", dir)
        .envs(env.iter().copied());
    run(c)
}

/// With the capture library preloaded but no archive named, the program `app` makes (a new
/// command each call) prints what it prints alone, nothing on stderr, and writes nothing.
pub fn assert_preload_only_forwards(app: impl Fn() -> Command) {
    let tmp = tempfile::tempdir().unwrap();
    let (_, plain, _) = run(app());
    let mut c = app();
    c.env("LD_PRELOAD", bin_dir().join("libhrr_capture.so"))
        .current_dir(tmp.path());
    let (code, out, err) = run(c);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, plain);
    assert!(err.is_empty(), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
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

    /// The program `app args` on the fake driver, without capture (no capture variable
    /// inherited from the test's environment).
    pub fn app(&self, app: &str, args: &[&str]) -> Command {
        let mut c = bounded(self.dir.join(app));
        c.args(args)
            .env("LD_LIBRARY_PATH", &self.dir)
            .env_remove("HIP_HRR_CAPTURE_OUTPUT")
            .env_remove("HRR_CAPTURE_OUTPUT");
        c
    }

    /// `hrr-capture -o archive -- app args` on the fake driver, added to `c` (the program run
    /// as `hrr-capture`: bounded, or not when the caller signals it).
    pub fn capture_args<'c>(
        &self,
        c: &'c mut Command,
        archive: &Path,
        app: &str,
        args: &[&str],
    ) -> &'c mut Command {
        c.arg("-o")
            .arg(archive)
            .arg("--")
            .arg(self.dir.join(app))
            .args(args)
            .env("LD_LIBRARY_PATH", &self.dir)
            .env("HRR_CAPTURE_MIN_FREE_MB", "1")
    }

    /// `hrr-capture -o archive -- app args`.
    pub fn capture(&self, archive: &Path, app: &str, args: &[&str]) -> std::process::Output {
        self.capture_env(archive, app, args, &[])
    }

    /// `hrr-capture -o archive -- app args` with the variables `env` set (`succeeded` of it
    /// where the capture must succeed).
    pub fn capture_env(
        &self,
        archive: &Path,
        app: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Output {
        let mut c = bounded(bin_dir().join("hrr-capture"));
        self.capture_args(&mut c, archive, app, args)
            .envs(env.iter().copied());
        c.output().expect("run hrr-capture")
    }

    /// Capture `app args` into `archive`, which must succeed: its (first) process folder.
    pub fn captured(&self, archive: &Path, app: &str, args: &[&str]) -> PathBuf {
        succeeded(self.capture(archive, app, args));
        pid_dirs(archive).remove(0)
    }

    /// Capture `app args` into `archive`, which must succeed and print what the program prints
    /// without capture (where it must succeed too): the capture's output.
    pub fn capture_as_plain(
        &self,
        archive: &Path,
        app: &str,
        args: &[&str],
    ) -> std::process::Output {
        let (code, plain, err) = run(self.app(app, args));
        assert_eq!(code, 0, "{app} fails without capture: {err}");
        let o = succeeded(self.capture(archive, app, args));
        assert_eq!(String::from_utf8_lossy(&o.stdout), plain);
        o
    }

    /// `hrr-playback target extra --no-progress`: exit code, stdout, stderr.
    pub fn replay(&self, target: &Path, extra: &[&str]) -> (i32, String, String) {
        self.replay_env(target, extra, &[])
    }

    /// `hrr-playback target extra --no-progress`, which must exit 0: its stdout.
    pub fn replay_ok(&self, target: &Path, extra: &[&str]) -> String {
        let (code, out, err) = self.replay(target, extra);
        assert_eq!(code, 0, "{out}{err}");
        out
    }

    /// `hrr-playback target extra --no-progress` with the variables `env` set.
    pub fn replay_env(
        &self,
        target: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (i32, String, String) {
        replay_on_fake(&self.dir, target, extra, env)
    }

    /// `hrr-playback target --json extra`: exit code and the summary.
    pub fn replay_json(&self, target: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
        self.replay_json_env(target, extra, &[])
    }

    /// `hrr-playback target --json extra` with the variables `env` set: exit code and the
    /// summary.
    pub fn replay_json_env(
        &self,
        target: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (i32, serde_json::Value) {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let (code, out, err) = self.replay_env(target, &args, env);
        (code, summary(&out, &err))
    }
}
