//! Helpers of the HIP round-trip tests (`hip_roundtrip.rs`): the fake HIP runtime and its
//! programs built once, capture and replay against it, and (`layouts`) the argument layouts of
//! recorded launches checked against the code objects' own metadata.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::*;

pub mod layouts;

/// The fake runtime, the C programs and (with hipcc) the HIP programs, built once per test run:
/// the folder, and whether hipcc built the HIP programs.
pub fn built() -> &'static (PathBuf, bool) {
    static DIR: OnceLock<(PathBuf, bool)> = OnceLock::new();
    DIR.get_or_init(|| {
        let (out, o) = build_fake("fake-hip", "");
        match o.status.code() {
            Some(0) => (out, true),
            Some(3) => (out, false),
            _ => panic!(
                "building the fake HIP runtime or the HIP programs failed:\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        }
    })
}

/// The folder of the fake runtime and the HIP programs; `None` (with the reason printed) when
/// hipcc is not installed.
pub fn fake() -> Option<&'static Path> {
    let (dir, hipcc) = built();
    if !hipcc {
        skipped(
            "hipcc is not installed, so the HIP test programs cannot be built",
            "apt-get install -y --no-install-recommends hipcc libamdhip64-5 libamdhip64-dev",
        );
        return None;
    }
    Some(dir)
}

/// The folder of `fake()`, or return from the test (skipped) without hipcc.
macro_rules! fake_or_skip {
    () => {
        match $crate::hip_common::fake() {
            Some(d) => d,
            None => return,
        }
    };
}
pub(crate) use fake_or_skip;

/// The arguments program `name` always gets: the code object or plugin it loads.
fn app_args(dir: &Path, name: &str) -> Vec<String> {
    match name {
        "module_launch" => vec![dir.join("kernels.co").display().to_string()],
        "plugin_host" => vec![dir.join("libplugin.so").display().to_string()],
        _ => vec![],
    }
}

/// The program on the fake runtime.
pub fn app(dir: &Path, name: &str, extra: &[&str]) -> Command {
    let mut c = bounded(dir.join(name));
    c.args(app_args(dir, name))
        .args(extra)
        .env("LD_LIBRARY_PATH", dir)
        .env_remove("HIP_HRR_CAPTURE_OUTPUT")
        .env_remove("HRR_CAPTURE_OUTPUT");
    c
}

/// `hrr-capture -o archive -- name extra` on the fake runtime.
pub fn capture(dir: &Path, archive: &Path, name: &str, extra: &[&str]) -> Output {
    let mut c = bounded(bin_dir().join("hrr-capture"));
    c.arg("-o")
        .arg(archive)
        .arg("--")
        .arg(dir.join(name))
        .args(app_args(dir, name))
        .args(extra)
        .env("LD_LIBRARY_PATH", dir)
        .env("HRR_CAPTURE_MIN_FREE_MB", "1");
    c.output().expect("run hrr-capture")
}

/// `hrr-playback target extra --no-progress` on the fake runtime: exit code, stdout, stderr.
pub fn replay(dir: &Path, target: &Path, extra: &[&str]) -> (i32, String, String) {
    replay_on_fake(dir, target, extra, &[])
}

/// `hrr-playback target --json extra` on the fake runtime: exit code and the summary.
pub fn replay_json(dir: &Path, target: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = replay(dir, target, &args);
    (code, summary(&out, &err))
}

/// Capture `name` (with `extra` arguments) on the fake runtime: the program's output is what it
/// prints without capture.
pub fn captured(dir: &Path, arch: &Path, name: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let (code, plain, _) = run(app(dir, name, extra));
    assert_eq!(code, 0, "{name} fails on the fake runtime: {plain}");
    let o = capture(dir, arch, name, extra);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), plain);
    assert_eq!(
        stderr.matches("[HRR capture] Recording pid").count(),
        1,
        "{stderr}"
    );
    events_json(arch)
}

/// Capture `name` as `captured` does, into `run.hrr` of a new temporary folder: the folder
/// (kept alive), the archive and its events.
pub fn captured_run(
    dir: &Path,
    name: &str,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf, Vec<serde_json::Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp.path().join("run.hrr");
    let events = captured(dir, &arch, name, extra);
    (tmp, arch, events)
}
