//! Failing workloads on the CPU, against the fake driver's hanging (`spin`) and faulting
//! (`fault`) kernels: the capture of a program stopped while it hangs keeps the launch that
//! hangs, whether it was stopped with SIGTERM (the archive says so) or `kill -9`.
//!
//! Needs `cargo build --workspace` first (the README's test command does) and a C compiler.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

mod common;
use common::*;

fn fake() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_fake_cuda("-failing"))
}

/// Capture `driver_app MODE` until it prints `launched …`, then send it `sig`; returns the
/// program's pid folder.
fn capture_and_kill(archive: &Path, mode: &str, sig: libc::c_int) -> PathBuf {
    let mut child = Command::new(bin_dir().join("hrr-capture"))
        .arg("-o")
        .arg(archive)
        .arg("--")
        .arg(fake().join("driver_app"))
        .arg(mode)
        .env("LD_LIBRARY_PATH", fake())
        .env("HRR_CAPTURE_MIN_FREE_MB", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run hrr-capture");
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        if line.unwrap().starts_with("launched") {
            break;
        }
    }
    // The launcher runs the program in its own process: its pid is the program's.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(sig),
        "the program dies of the signal"
    );
    pid_dirs(archive).remove(0)
}

fn launches(dir: &Path) -> Vec<String> {
    events_json(dir)
        .into_iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|c| c.starts_with("cuLaunchKernel"))
        })
        .map(|e| {
            e["fields"]["kernel"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn sigterm_during_a_hang_keeps_the_hanging_launch_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = capture_and_kill(&tmp.path().join("run.hrr"), "hang", libc::SIGTERM);
    let (_, info, _) = run({
        let mut c = playback();
        c.arg(&dir).arg("--info");
        c
    });
    assert!(info.contains("terminated by SIGTERM"), "{info}");
    let (code, _, err) = run({
        let mut c = playback();
        c.arg(&dir).arg("--repair");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        launches(&dir).last().map(String::as_str),
        Some("spin"),
        "{:?}",
        launches(&dir)
    );
}

#[test]
fn kill_9_during_a_hang_keeps_the_hanging_launch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = capture_and_kill(&tmp.path().join("run.hrr"), "hang", libc::SIGKILL);
    let (code, _, err) = run({
        let mut c = playback();
        c.arg(&dir).arg("--repair");
        c
    });
    assert_eq!(code, 0, "{err}");
    let l = launches(&dir);
    assert_eq!(l.last().map(String::as_str), Some("spin"), "{l:?}");
    assert!(
        l.len() >= 2,
        "the launches before the hang are kept too: {l:?}"
    );
}
