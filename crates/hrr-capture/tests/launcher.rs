//! The `hrr-capture` launcher on its own (no GPU, no capture): its command line, what it does
//! with an archive of an earlier run, and how the program's exit status and signals come through.
//! The programs are `/bin/sh -c` scripts; the "capture library" preloaded into them is this test
//! process's own libc (harmless to preload), so nothing here depends on libhrr_capture.so.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hrr-capture");

/// A shared library that is safe to preload: the libc this test runs on.
fn harmless_lib() -> PathBuf {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = Path::new(p)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            name.starts_with("libc.so") || name.starts_with("libc-")
        })
        .map(PathBuf::from)
        .expect("libc in /proc/self/maps")
}

/// `hrr-capture ARGS...` in `dir`, with a clean capture environment.
fn launcher(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .env("HRR_CAPTURE_LIB", harmless_lib())
        .env_remove("LD_PRELOAD")
        .env_remove("HIP_HRR_CAPTURE_OUTPUT")
        .env_remove("HRR_CAPTURE_OUTPUT")
        .stdin(Stdio::null());
    c
}

/// Wait for `child` at most `limit`; kill it (and fail) if it takes longer.
fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hrr-capture did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spawn `c`. A binary a test has just copied can be briefly "busy" (ETXTBSY): another test
/// thread forked while the copy's write descriptor was open, and the child holds it until its
/// exec. That passes within milliseconds, so the spawn is retried.
fn spawn(c: &mut Command) -> std::process::Child {
    for _ in 0..100 {
        match c.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20))
            }
            r => return r.expect("spawn hrr-capture"),
        }
    }
    panic!("{c:?} stayed busy (ETXTBSY) for 2 s");
}

/// Run to completion (bounded), capturing stdout and stderr.
fn output(mut c: Command) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = spawn(&mut c);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).unwrap();
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).unwrap();
        v
    });
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The launcher's own error lines must be exactly one `hrr-capture: error:` line.
fn assert_one_error(stderr: &str) {
    assert_eq!(
        stderr.matches("hrr-capture: error:").count(),
        1,
        "expected one error line: {stderr}"
    );
    assert!(stderr.starts_with("hrr-capture: error: "), "{stderr}");
}

/// The error output of `o`, which must hold exactly one error (see `assert_one_error`).
fn one_error(o: &Output) -> String {
    let err = text(&o.stderr);
    assert_one_error(&err);
    err
}

#[test]
fn version_names_the_tool_and_the_format() {
    let t = tempfile::tempdir().unwrap();
    for flag in ["--version", "-V"] {
        let o = output(launcher(t.path(), &[flag]));
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        assert_eq!(
            out,
            format!(
                "hrr-capture {}\nFormat version: {}\n",
                env!("CARGO_PKG_VERSION"),
                hrr_archive::FORMAT_VERSION
            )
        );
        assert!(o.stderr.is_empty());
    }
}

#[test]
fn help_lists_the_flags_and_exit_codes() {
    let t = tempfile::tempdir().unwrap();
    let o = output(launcher(t.path(), &["--help"]));
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for needle in [
        "Usage: hrr-capture [OPTIONS] -- COMMAND [ARGS]...",
        "--output <ARCHIVE>",
        "--append",
        "--force",
        "--version",
        "Exit status",
        "HRR_CAPTURE_DIGEST_MIN",
        "2 usage",
        "126",
        "127",
    ] {
        assert!(
            out.contains(needle),
            "{needle:?} missing from --help:\n{out}"
        );
    }
}

#[test]
fn usage_errors_exit_2_with_one_error_line() {
    let t = tempfile::tempdir().unwrap();
    for args in [
        &["--bogus", "--", "true"][..],
        &["-o"],
        &["--append", "--force", "--", "true"],
    ] {
        let o = output(launcher(t.path(), args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert_one_error(&text(&o.stderr));
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_missing_command_is_a_usage_error() {
    let t = tempfile::tempdir().unwrap();
    for args in [&[][..], &["-o", "run.hrr"], &["-o", "run.hrr", "--"]] {
        let o = output(launcher(t.path(), args));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = one_error(&o);
        assert!(err.contains("COMMAND"), "{err}");
    }
    assert!(!t.path().join("run.hrr").exists());
}

#[test]
fn the_command_and_its_flags_are_passed_verbatim() {
    let t = tempfile::tempdir().unwrap();
    let script = r#"printf '%s|' "$@""#;
    let args = [
        "-o", "x.hrr", "--", "sh", "-c", script, "sh", "-o", "--force", "--", "-V", "--help", "",
    ];
    let o = output(launcher(t.path(), &args));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "-o|--force|--|-V|--help||");
}

#[test]
fn the_program_gets_the_archive_and_the_library() {
    let t = tempfile::tempdir().unwrap();
    let lib = harmless_lib();
    let script = r#"printf '%s\n%s\n' "$HIP_HRR_CAPTURE_OUTPUT" "$LD_PRELOAD""#;
    let mut c = launcher(t.path(), &["-o", "sub/run.hrr", "--", "sh", "-c", script]);
    c.env("LD_PRELOAD", "/nonexistent/other.so");
    let o = output(c);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let cwd = t.path().canonicalize().unwrap();
    let got = Path::new(lines[0]);
    assert!(got.is_absolute(), "{out}");
    assert_eq!(
        got.parent()
            .unwrap()
            .parent()
            .unwrap()
            .canonicalize()
            .unwrap(),
        cwd
    );
    assert!(got.ends_with("sub/run.hrr"), "{out}");
    assert_eq!(
        lines[1],
        format!("{}:/nonexistent/other.so", lib.display()),
        "{out}"
    );

    // The default archive is ./capture.hrr.
    let o = output(launcher(t.path(), &["--", "sh", "-c", script]));
    let out = text(&o.stdout);
    let got = Path::new(out.lines().next().unwrap());
    assert!(got.is_absolute() && got.ends_with("capture.hrr"), "{out}");
}

/// An archive left by an earlier run: a root manifest and two process folders.
fn earlier_archive(path: &Path) {
    for pid in [1180, 1204] {
        let d = path.join(format!("pid-{pid}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("events.bin"), format!("events of {pid}")).unwrap();
    }
    std::fs::write(path.join("manifest.json"), "{\"earlier\": true}").unwrap();
}

/// The folder `pid-<pid>` of the [`earlier_archive`] at `path` still holds what it was given.
fn assert_earlier_process(path: &Path, pid: u32) {
    assert_eq!(
        std::fs::read_to_string(path.join(format!("pid-{pid}/events.bin"))).unwrap(),
        format!("events of {pid}")
    );
}

/// The earlier archives `--force` moved aside in `dir` (`run.hrr.old-*`).
fn moved_aside(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("run.hrr.old-")
        })
        .collect()
}

/// A program that proves it ran by creating `ran` (beside the archive) and prints its archive.
const MARK: &str = r#"touch ran; printf '%s' "$HIP_HRR_CAPTURE_OUTPUT""#;

/// `hrr-capture -o run.hrr FLAGS -- sh -c MARK` in a new temporary folder (kept alive) that
/// holds an earlier run's `run.hrr`: the folder, that archive's path and the launcher's output.
fn over_an_earlier_archive(flags: &[&str]) -> (tempfile::TempDir, PathBuf, Output) {
    let t = tempfile::tempdir().unwrap();
    let arch = t.path().join("run.hrr");
    earlier_archive(&arch);
    let mut args = vec!["-o", "run.hrr"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", MARK]);
    let o = output(launcher(t.path(), &args));
    (t, arch, o)
}

/// [`over_an_earlier_archive`] with `flags` that let the program run: it ran, and the launcher
/// exited 0.
fn ran_over_an_earlier_archive(flags: &[&str]) -> (tempfile::TempDir, PathBuf, Output) {
    let (t, arch, o) = over_an_earlier_archive(flags);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(t.path().join("ran").exists());
    (t, arch, o)
}

#[test]
fn an_archive_of_an_earlier_run_is_refused() {
    let (t, arch, o) = over_an_earlier_archive(&[]);
    assert_eq!(o.status.code(), Some(2));
    let err = one_error(&o);
    assert!(err.starts_with("hrr-capture: error: run.hrr: "), "{err}");
    assert!(
        err.contains("earlier run") && err.contains("pid-1180"),
        "{err}"
    );
    let hint = err.lines().find(|l| l.starts_with("hint: ")).expect(&err);
    assert!(
        hint.contains("--append") && hint.contains("--force"),
        "{hint}"
    );
    assert!(!t.path().join("ran").exists(), "the program must not run");
    assert_earlier_process(&arch, 1204);
}

#[test]
fn append_records_into_the_earlier_archive() {
    let (_t, arch, o) = ran_over_an_earlier_archive(&["--append"]);
    assert_eq!(
        Path::new(&text(&o.stdout)).canonicalize().unwrap(),
        arch.canonicalize().unwrap()
    );
    assert_earlier_process(&arch, 1180);
}

#[test]
fn force_moves_the_earlier_archive_aside_intact() {
    let (t, arch, o) = ran_over_an_earlier_archive(&["--force"]);
    assert!(!arch.exists(), "the program gets a fresh archive path");
    let aside = moved_aside(t.path());
    assert_eq!(aside.len(), 1, "{aside:?}");
    let old = &aside[0];
    for pid in [1180, 1204] {
        assert_earlier_process(old, pid);
    }
    assert_eq!(
        std::fs::read_to_string(old.join("manifest.json")).unwrap(),
        "{\"earlier\": true}"
    );
    let err = text(&o.stderr);
    let name = old.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains(&name), "the move is reported: {err}");

    // A second --force keeps both earlier archives.
    earlier_archive(&arch);
    let o = output(launcher(
        t.path(),
        &["-o", "run.hrr", "--force", "--", "true"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(moved_aside(t.path()).len(), 2);
}

#[test]
fn an_empty_or_missing_folder_is_fine() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir(t.path().join("empty.hrr")).unwrap();
    std::fs::create_dir(t.path().join("no-processes.hrr")).unwrap();
    std::fs::write(t.path().join("no-processes.hrr/manifest.json"), "{}").unwrap();
    for arch in ["empty.hrr", "no-processes.hrr", "new.hrr"] {
        let o = output(launcher(t.path(), &["-o", arch, "--", "true"]));
        assert_eq!(o.status.code(), Some(0), "{arch}: {}", text(&o.stderr));
        assert!(o.stderr.is_empty(), "{arch}: {}", text(&o.stderr));
    }
}

#[test]
fn what_is_not_an_archive_folder_is_refused() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("file.hrr"), "not a folder").unwrap();
    std::fs::create_dir(t.path().join("docs")).unwrap();
    std::fs::write(t.path().join("docs/notes.txt"), "mine").unwrap();
    for (arch, flags) in [
        ("file.hrr", &[][..]),
        ("file.hrr", &["--force"]),
        ("docs", &["--append"]),
        ("docs", &["--force"]),
    ] {
        let mut args = vec!["-o", arch];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", "touch ran"]);
        let o = output(launcher(t.path(), &args));
        assert_eq!(o.status.code(), Some(2), "{arch} {flags:?}");
        assert_one_error(&text(&o.stderr));
        assert!(!t.path().join("ran").exists());
    }
    assert_eq!(
        std::fs::read_to_string(t.path().join("docs/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn exit_codes_come_through() {
    let t = tempfile::tempdir().unwrap();
    for code in [0, 1, 2, 3, 42, 126, 255] {
        let script = format!("exit {code}");
        let o = output(launcher(t.path(), &["--", "sh", "-c", &script]));
        assert_eq!(o.status.code(), Some(code), "{}", text(&o.stderr));
        assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    }
}

#[test]
fn death_by_a_signal_comes_through() {
    let t = tempfile::tempdir().unwrap();
    for sig in [libc::SIGUSR1, libc::SIGTERM, libc::SIGKILL, libc::SIGSEGV] {
        let script = format!("ulimit -c 0; kill -{sig} $$");
        let o = output(launcher(t.path(), &["--", "sh", "-c", &script]));
        assert_eq!(o.status.signal(), Some(sig), "{:?}", o.status);
        assert_eq!(o.status.code(), None);
    }
}

#[test]
fn a_command_that_cannot_run_is_reported_once() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("plain.txt"), "not a program").unwrap();
    for (cmd, code) in [
        ("./nonexistent-program", 127),
        ("nonexistent-program-hrr", 127),
        ("./plain.txt", 126),
    ] {
        let o = output(launcher(t.path(), &["--", cmd]));
        assert_eq!(o.status.code(), Some(code), "{cmd}");
        let err = one_error(&o);
        assert!(err.contains(&format!("cannot run {cmd}: ")), "{err}");
        assert!(!err.contains("os error"), "{err}");
    }
}

#[test]
fn a_missing_library_is_reported_before_anything_moves() {
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("hrr-capture");
    std::fs::copy(BIN, &bin).unwrap();
    earlier_archive(&t.path().join("run.hrr"));
    let mut c = Command::new(&bin);
    c.args(["-o", "run.hrr", "--force", "--", "true"])
        .current_dir(t.path())
        .env_remove("HRR_CAPTURE_LIB");
    let o = output(c);
    assert_eq!(o.status.code(), Some(1));
    let err = one_error(&o);
    assert!(err.contains("libhrr_capture.so"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    assert!(err.contains("HRR_CAPTURE_LIB"), "{err}");
    assert!(t.path().join("run.hrr/pid-1180").is_dir(), "nothing moved");

    let mut c = launcher(t.path(), &["--", "true"]);
    c.env("HRR_CAPTURE_LIB", t.path().join("nonexistent.so"));
    let o = output(c);
    assert_eq!(o.status.code(), Some(1));
    assert_one_error(&text(&o.stderr));
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Start `script` (which writes the program's pid to `pidfile` first) under hrr-capture, wait for
/// the pid, send `sig` to the launcher, and return how the launcher ended and the program's pid.
fn signal_the_launcher(dir: &Path, script: &str, sig: i32) -> (ExitStatus, i32) {
    let pidfile = dir.join("pid");
    let _ = std::fs::remove_file(&pidfile);
    let mut c = launcher(dir, &["-o", "run.hrr", "--", "sh", "-c", script]);
    // The signal's default disposition, whatever the test runner inherited (a run under
    // `nohup` ignores SIGHUP, a background job of a script SIGINT and SIGQUIT, and an ignored
    // signal stays ignored across exec: the program would outlive it for reasons of the
    // harness, not of hrr-capture).
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            libc::signal(sig, libc::SIG_DFL);
            Ok(())
        })
    };
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hrr-capture");
    let start = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .filter(|s| s.ends_with('\n'))
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the program never wrote its pid");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(pid_alive(pid));
    // A shell that writes its pid and then execs the program: signal the program, not the
    // shell on its way to it (a signal there meets the shell's own dispositions).
    let comm = format!("/proc/{pid}/comm");
    let shell = |c: &str| matches!(c.trim(), "sh" | "dash" | "bash");
    while script.contains("exec ")
        && std::fs::read_to_string(&comm).is_ok_and(|c| shell(&c))
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: sends a signal to the launcher we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    (status, pid)
}

#[test]
fn a_signal_to_the_launcher_stops_the_program_and_the_launcher_dies_of_it() {
    let t = tempfile::tempdir().unwrap();
    let script = "ulimit -c 0; echo $$ > pid; exec sleep 120";
    for sig in [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
    ] {
        let (status, pid) = signal_the_launcher(t.path(), script, sig);
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        let start = Instant::now();
        while pid_alive(pid) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the program ({pid}) outlived signal {sig} to the launcher"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_program_that_handles_the_signal_decides_the_exit_status() {
    let t = tempfile::tempdir().unwrap();
    let script = "trap 'exit 9' TERM; echo $$ > pid; while :; do sleep 0.05; done";
    let (status, _) = signal_the_launcher(t.path(), script, libc::SIGTERM);
    assert_eq!(status.code(), Some(9), "{status:?}");
}
