//! Failing workloads on the CPU, against the fake driver's hanging (`spin`) and faulting
//! (`fault`) kernels: the capture of a program stopped while it hangs keeps the launch that
//! hangs, whether it was stopped with SIGTERM (the archive says so) or `kill -9`.
//!
//! Needs `cargo build --workspace` first (the README's test command does) and a C compiler.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-failing")
}

/// Capture `driver_app MODE` until it prints `launched …`, then send it `sig`; returns the
/// program's pid folder. (Not under `timeout`: the signal goes to the program's own process.)
fn capture_and_kill(archive: &Path, mode: &str, sig: libc::c_int) -> PathBuf {
    let mut child = fake()
        .capture_args(
            &mut Command::new(bin_dir().join("hrr-capture")),
            archive,
            "driver_app",
            &[mode],
        )
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

/// `driver_app hang` captured in a new temporary folder (kept alive) and stopped by `sig`
/// while it hangs: the folder and the program's pid folder.
fn hung(sig: libc::c_int) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = capture_and_kill(&tmp.path().join("run.hrr"), "hang", sig);
    (tmp, dir)
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
    let (_tmp, dir) = hung(libc::SIGTERM);
    let (_, info, _) = playback_on(&dir, &["--info"]);
    assert_contains(&info, "terminated by SIGTERM");
    let (code, _, err) = playback_on(&dir, &["--repair"]);
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
    let (_tmp, dir) = hung(libc::SIGKILL);
    let (code, _, err) = playback_on(&dir, &["--repair"]);
    assert_eq!(code, 0, "{err}");
    let l = launches(&dir);
    assert_eq!(l.last().map(String::as_str), Some("spin"), "{l:?}");
    assert!(
        l.len() >= 2,
        "the launches before the hang are kept too: {l:?}"
    );
}

fn capture(archive: &Path, mode: &str) -> std::process::Output {
    fake().capture(archive, "driver_app", &[mode])
}

fn replay(target: &Path, extra: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    fake().replay_env(target, extra, env)
}

/// A new folder holding a noise counter file (`FAKE_CUDA_NOISE_FILE`: every process the test
/// starts, capture, replay and its rechecks, takes the next value): the folder, the file.
fn noise_counter() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let noise = tmp.path().join("noise");
    std::fs::write(&noise, "1\n").unwrap();
    let noise = noise.to_str().unwrap().to_string();
    (tmp, noise)
}

/// `driver_app args` (a `noisy` mode) captured into `run.hrr` of `tmp` with `env`: its process
/// folder and the D2H copy right after the first `noisy` launch.
fn captured_noisy(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> (PathBuf, serde_json::Value) {
    let arch = tmp.join("run.hrr");
    let o = fake().capture_env(&arch, "driver_app", args, env);
    assert!(o.status.success(), "{o:?}");
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let launch = events
        .iter()
        .position(|e| e["fields"]["kernel"] == "noisy")
        .expect("the noisy launch");
    let d2h = events[launch..]
        .iter()
        .find(|e| e["name"] == "cuMemcpyDtoH_v2")
        .expect("the copy after it")
        .clone();
    (dir, d2h)
}

/// `driver_app noisy` captured with a noise counter ([`noise_counter`]) and `var=value`: the
/// counter's folder, the process folder, the D2H copy after the `noisy` launch, and the
/// environment its replays need (the counter and `var`).
fn captured_noisy_with(
    var: &'static str,
    value: &'static str,
) -> (
    tempfile::TempDir,
    PathBuf,
    serde_json::Value,
    [(&'static str, String); 2],
) {
    let (tmp, noise) = noise_counter();
    let env = [("FAKE_CUDA_NOISE_FILE", noise), (var, value.to_string())];
    let (dir, d2h) = captured_noisy(tmp.path(), &["noisy"], &pairs(&env));
    (tmp, dir, d2h, env)
}

/// `env` as the `(&str, &str)` pairs the runners take.
fn pairs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn a_recorded_fault_is_reproduced_and_its_kernel_named() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "fault");
    assert_eq!(
        o.status.code(),
        Some(1),
        "the program fails as it does without capture"
    );
    let (code, out, err) = replay(&arch, &[], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("[HRR] REPRODUCED: CUDA_ERROR_ILLEGAL_ADDRESS (700) at event #")
            && out.contains(", as recorded; kernel fault (launch 2, event #"),
        "{out}"
    );
    assert!(
        out.contains("[HRR] Faulting kernel : fault (launch 2, event #")
            && out.contains("(found by replaying again with --sync-after-launch)"),
        "{out}"
    );
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!(code, 0);
    assert_eq!(v["verdict"], "REPRODUCED");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["fault_site"]["kernel"], "fault");
    assert_eq!(v["fault_site"]["localized_by_rerun"], true);
    assert_eq!(v["recorded_failure"]["code"], 700);
    // Without localisation the kernel is not looked for.
    let (_, v) = fake().replay_json(&arch, &["--no-localize"]);
    assert_eq!(v["verdict"], "REPRODUCED");
    assert!(v["fault_site"].is_null(), "{v}");
    // With --sync-after-launch the fault surfaces at its launch: the launch itself is the site.
    let (code, v) = fake().replay_json(&arch, &["--sync-after-launch"]);
    assert_eq!(v["fault_site"]["kernel"], "fault", "{v}");
    assert_eq!(v["fault_site"]["localized_by_rerun"], false);
    assert_eq!((code, v["verdict"].as_str()), (3, Some("FAULT")), "{v}");
}

#[test]
fn a_recorded_fault_that_does_not_happen_is_not_reproduced() {
    let (_tmp, arch) = temp_path("run.hrr");
    capture(&arch, "fault");
    // Leaving the faulting kernel out, the recorded failure cannot happen.
    let (code, out, err) = replay(&arch, &["--kernel-filter", "axpy"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert_contains(
        &out,
        "[HRR] NOT REPRODUCED: the recording failed with status 700 at event #",
    );
}

#[test]
fn a_recorded_hang_is_a_hang_under_the_watchdog_naming_the_kernel() {
    let (_tmp, dir) = hung(libc::SIGTERM);
    let start = std::time::Instant::now();
    let (code, out, err) = replay(&dir, &["--sync-watchdog-ms", "500"], &[]);
    let took = start.elapsed();
    assert_eq!(code, 4, "{out}{err}");
    assert_contains(&out, "[HRR] HANG: event #");
    assert_contains(&out, "last kernel launched: spin (launch ");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    assert!(
        out.contains("capture incomplete (") && out.contains("the tail after them was lost"),
        "{out}"
    );
}

#[test]
fn a_call_that_worked_when_recorded_and_fails_now_is_an_error() {
    let (tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "loop");
    assert!(!o.status.success(), "`loop` needs a count");
    let ok = tmp.path().join("ok.hrr");
    assert!(fake().capture(&ok, "driver_app", &[]).status.success());
    let (code, v) = fake().replay_json_env(&ok, &[], &[("FAKE_CUDA_FAIL", "cuStreamCreate")]);
    assert_eq!(code, 5, "{v}");
    assert_eq!(v["verdict"], "ERROR");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("CUDA_ERROR_NOT_SUPPORTED"),
        "{v}"
    );
}

#[test]
fn a_truncated_host_to_device_blob_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fake().captured(&tmp.path().join("ok.hrr"), "driver_app", &[]);
    let h2d = first_blob(&dir, "h2d_blob");
    let p = blob_path(&dir, &h2d);
    let len = std::fs::metadata(&p).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(len / 2).unwrap();
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 5, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains(&h2d) && e.contains("truncated or altered"),
        "{e}"
    );
}

#[test]
fn nondeterministic_bytes_of_a_result_recorded_as_digests_are_told_apart_too() {
    let (tmp, noise) = noise_counter();
    let env = [("FAKE_CUDA_NOISE_FILE", noise.as_str())];
    let digests = [("HRR_CAPTURE_DIGEST_MIN", "1"), env[0]];
    let (dir, d2h) = captured_noisy(tmp.path(), &["noisy"], &digests);
    let seq = d2h["seq"].as_u64().unwrap();
    let stored = std::fs::read(blob_path(&dir, d2h["fields"]["d2h_blob"].as_str().unwrap()));
    assert!(hrr_archive::digest::ResultDigest::of_blob(&stored.unwrap(), 1024).is_some());
    let (code, v) = fake().replay_json_env(&dir, &[], &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["d2h_checks"]["nondeterministic"], 1, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    assert_eq!(v["nondeterministic"][0]["event"], seq, "{v}");
    assert_eq!(v["nondeterministic"][0]["differing"], 512, "{v}");
    let (code, _, _) = replay(&dir, &["--strict"], &env);
    assert_eq!(code, 1);
}

/// A result nondeterministic in two words, each of which differs from the first replay in
/// another replay of the recheck, never both in one (`FAKE_CUDA_NOISE_MASKS`: which words are
/// noise in each process: the recording both, the first replay none, then the first, then the
/// second): each word was seen to change, so the result is the program's nondeterminism.
#[test]
fn words_differing_in_different_replays_of_the_recheck_are_told_apart() {
    let v = settled_noisy_result("0,3,0,1,2,0,0,0");
    assert_eq!(v["nondeterministic"][0]["first_offset"], 512, "{v}");
    // Only those words (the masks repeat every 64 words: 4 of the 128): the rest of the
    // second half is deterministic under them.
    assert_eq!(v["nondeterministic"][0]["differing"], 16, "{v}");
}

/// A result nondeterministic in one word that the first replay and the next four of the recheck
/// all happen to produce alike, differing from the recording (`FAKE_CUDA_NOISE_MASKS`: noise in
/// the recording and in the recheck's fifth replay only), as one float of a sparse cuSOLVER
/// result is in about half the runs: while replays are cheap the recheck goes on past its
/// three and finds the word unstable, where it stopped at three with a MISMATCH before.
#[test]
fn a_word_rarely_unstable_is_found_by_replays_past_the_first_three() {
    let v = settled_noisy_result("0,1,0,0,0,0,0,1");
    assert_eq!(v["nondeterministic"][0]["how"], "replays", "{v}");
}

/// `driver_app noisy` captured and replayed with `FAKE_CUDA_NOISE_MASKS=masks` (which words
/// are noise in each process, by its turn): the replay's `--json`, asserted a PASS whose one
/// nondeterministic result is the copy after the noisy launch.
fn settled_noisy_result(masks: &'static str) -> serde_json::Value {
    let (_tmp, dir, d2h, env) = captured_noisy_with("FAKE_CUDA_NOISE_MASKS", masks);
    let (code, v) = fake().replay_json_env(&dir, &[], &pairs(&env));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["d2h_checks"]["nondeterministic"], 1, "{v}");
    assert_eq!(v["nondeterministic"][0]["event"], d2h["seq"], "{v}");
    v
}

#[test]
fn nondeterministic_bytes_pass_named_strict_fails_and_a_zeroed_blob_still_mismatches() {
    let (tmp, noise) = noise_counter();
    let env = [("FAKE_CUDA_NOISE_FILE", noise.as_str())];
    // The D2H copy right after the `noisy` launch: 1024 bytes, the second half noise.
    let (dir, d2h) = captured_noisy(tmp.path(), &["noisy"], &env);
    let seq = d2h["seq"].as_u64().unwrap();

    let (code, out, err) = replay(&dir, &[], &env);
    assert_eq!(code, 0, "{out}{err}");
    let want = format!("[HRR] PASS, 512 of 1024 bytes nondeterministic at event #{seq}");
    assert!(
        out.lines().any(|l| l.starts_with(&want)),
        "{want:?} not in:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "[HRR] Nondeterministic event #{seq} cuMemcpyDtoH_v2: 512 of 1024 bytes differ between two replays, first at offset 512"
        )),
        "{out}"
    );
    assert_contains(&out, ", 0 fail, 0 skipped, 1 nondeterministic");
    assert!(!out.contains("[HRR] Mismatch"), "{out}");
    // Named before replay starts: the host callback replay cannot run.
    assert_contains(
        &out,
        "[HRR] Not reproducible: cuLaunchHostFunc (1 call, first at event #",
    );

    let (code, v) = fake().replay_json_env(&dir, &[], &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["perturbation"], serde_json::Value::Null, "{v}");

    // The recheck's second replay, as the recheck runs it: a noise kernel before each launch.
    let (_, out, err) = replay(&dir, &["--json", "--perturb", "--no-recheck"], &env);
    let p: serde_json::Value = serde_json::from_str(out.trim()).expect(&err);
    let launches = v["kernels_launched"].as_u64().unwrap();
    assert!(launches > 0, "{v}");
    assert_eq!(
        p["perturbation"],
        format!("{launches} noise kernel launches"),
        "{p}"
    );
    assert_eq!(v["d2h_checks"]["nondeterministic"], 1, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    let nd = &v["nondeterministic"][0];
    assert_eq!(
        (
            &nd["event"],
            &nd["bytes"],
            &nd["differing"],
            &nd["first_offset"]
        ),
        (&seq.into(), &1024.into(), &512.into(), &512.into()),
        "{v}"
    );

    // --strict holds the program's nondeterminism against it.
    let (code, out, err) = replay(&dir, &["--strict"], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!(
            "[HRR] MISMATCH (--strict): 512 of 1024 bytes nondeterministic at event #{seq}"
        )),
        "{out}"
    );
    // Without the second replay the noise is a plain mismatch.
    let (code, out, _) = replay(&dir, &["--no-recheck"], &env);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "[HRR] MISMATCH: 1 of ");

    // The recorded result zeroed: the deterministic half is stable across replays but differs
    // from the recording, a MISMATCH, while the noisy half is still told apart.
    let id = d2h["fields"]["d2h_blob"].as_str().unwrap();
    std::fs::write(blob_path(&dir, id), vec![0u8; 1024]).unwrap();
    let (code, v) = fake().replay_json_env(&dir, &[], &env);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["verdict"], "MISMATCH", "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 1, "{v}");
    assert_eq!(v["d2h_checks"]["nondeterministic"], 0, "{v}");
    assert!(
        v["mismatches"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("event #{seq} cuMemcpyDtoH_v2: ")),
        "{v}"
    );
    assert!(v["d2h_checks"]["pass"].as_u64().unwrap() > 0, "{v}");
    // The recheck ran past its three (cheap replays) up to its most, and says so.
    assert_eq!(v["recheck_replays"], 12, "{v}");
    let (code, out, _) = replay(&dir, &[], &env);
    assert_eq!(code, 1, "{out}");
    assert_contains(
        &out,
        "[HRR] Rechecked: 12 more replays; 1 result still differs from the recording where no replay varied",
    );
    // Without it, none.
    let (_, v) = fake().replay_json_env(&dir, &["--no-recheck"], &env);
    assert_eq!(v["recheck_replays"], 0, "{v}");
}

#[test]
fn results_holding_the_recorded_values_in_another_order_are_named_so() {
    let (_tmp, dir, d2h, env) = captured_noisy_with("FAKE_CUDA_NOISE_ORDER", "1");
    let env = pairs(&env);
    let seq = d2h["seq"].as_u64().unwrap();

    let (code, out, err) = replay(&dir, &[], &env);
    assert_eq!(code, 0, "{out}{err}");
    let verdict = format!(
        " of 1024 bytes nondeterministic (the recorded values in another order) at event #{seq}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("[HRR] PASS, ") && l.contains(&verdict)),
        "{verdict:?} not in:\n{out}"
    );
    assert_contains(
        &out,
        "the result holds the recorded 4-byte values in another order",
    );
    let (code, v) = fake().replay_json_env(&dir, &[], &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["nondeterministic"][0]["how"], "reordered", "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");

    let (code, out, _) = replay(&dir, &["--strict"], &env);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "[HRR] MISMATCH (--strict): ");
    // Values that are not the recorded ones in another order stay a mismatch.
    let (code, _, _) = replay(&dir, &[], &env[..1]);
    assert_eq!(code, 1, "without the reordering the noise differs in value");
}

#[test]
fn a_result_stable_only_by_chance_is_settled_by_the_other_results_of_its_copy() {
    let (tmp, noise) = noise_counter();
    let noise = noise.as_str();
    // Launches 0 and 4 of 8 write the byte NOISE_CONST in every process given it: the
    // recording's 1, every replay's 2 (stable across replays, not the recording's); the
    // other six differ in every process.
    let env = |k: &'static str| {
        vec![
            ("FAKE_CUDA_NOISE_FILE", noise),
            ("FAKE_CUDA_NOISE_STABLE_EVERY", "4"),
            ("FAKE_CUDA_NOISE_CONST", k),
        ]
    };
    let (dir, _) = captured_noisy(tmp.path(), &["noisy", "8"], &env("1"));
    let (code, v) = fake().replay_json_env(&dir, &[], &env("2"));
    assert_eq!(code, 0, "{v}");
    let hows: Vec<&str> = v["nondeterministic"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["how"].as_str().unwrap())
        .collect();
    assert_eq!(hows.iter().filter(|h| **h == "replays").count(), 6, "{v}");
    assert_eq!(hows.iter().filter(|h| **h == "same_copy").count(), 2, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    let (_, out, _) = replay(&dir, &[], &env("2"));
    assert_contains(
        &out,
        "all in values that differed between replays in other results of the same copy",
    );
    // The recording's own stable byte: those two results match, the other six settle.
    let (code, v) = fake().replay_json_env(&dir, &[], &env("1"));
    assert_eq!(
        (code, &v["d2h_checks"]["nondeterministic"]),
        (0, &6.into()),
        "{v}"
    );
}

/// A result that depends on when its launch came (here: whether the device was idle, as every
/// launch was in a recording that capture slowed): every replay issued back to back agrees on
/// other bytes, perturbed or not; the recheck's replay with every kernel alone on a drained
/// device produces the recorded ones, so they are told apart as the program's own.
#[test]
fn a_result_depending_on_launch_timing_is_settled_by_a_drained_replay() {
    let tmp = tempfile::tempdir().unwrap();
    // four launches back to back: the first follows a synchronisation in every run, the
    // other three find the device busy in a replay issuing them back to back
    let (dir, _) = captured_noisy(
        tmp.path(),
        &["noisy_burst", "4"],
        &[("FAKE_CUDA_NOISE_IDLE", "always")],
    );
    let env = [("FAKE_CUDA_NOISE_IDLE", "sync")];
    let (code, v) = fake().replay_json_env(&dir, &[], &env);
    let checks = &v["d2h_checks"];
    let got = (
        code,
        &v["verdict"],
        &checks["fail"],
        &checks["nondeterministic"],
    );
    assert_eq!(got, (0, &"PASS".into(), &0.into(), &3.into()), "{v}");
    assert!(
        v["nondeterministic"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["how"] == "replays"),
        "{v}"
    );
    // Replays issued back to back, perturbed or not, differ from the recording (a perturbed
    // one in the first launch too: its noise kernel ran just before).
    for extra in [&["--no-recheck"][..], &["--no-recheck", "--perturb"]] {
        let (code, p) = fake().replay_json_env(&dir, extra, &env);
        let fail = p["d2h_checks"]["fail"].as_u64().unwrap();
        assert!(code == 1 && fail >= 3, "{extra:?}: {p}");
    }
    let (code, _, _) = replay(&dir, &["--strict"], &env);
    assert_eq!(code, 1, "--strict fails on nondeterminism");
}

/// `--all` on a process whose replay fails and one left waiting on the GPU (here the fake's
/// `spin` kernel; in a real job a collective waiting for the failed peer): the waiting one is
/// stopped once it made no progress for 10 s after the failure, HANG, instead of never ending.
#[test]
fn all_stops_a_process_left_waiting_after_another_failed() {
    let tmp = tempfile::tempdir().unwrap();
    // recorded first: its replay waits for nobody
    let failing = fake().captured(&tmp.path().join("x.hrr"), "driver_app", &[]);
    zero_blob(&failing, &first_blob(&failing, "d2h_blob"));
    let (_hung_tmp, hung) = hung(libc::SIGTERM);
    let root = tmp.path().join("root.hrr");
    std::fs::create_dir(&root).unwrap();
    for dir in [&failing, &hung] {
        let o = Command::new("cp")
            .arg("-r")
            .arg(dir)
            .arg(&root)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    }
    let name = |d: &Path| d.file_name().unwrap().to_string_lossy().into_owned();
    let start = std::time::Instant::now();
    let (code, out, err) = replay(&root, &["--all"], &[]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(50),
        "{out}{err}"
    );
    assert_contains(&out, &format!("[HRR] {}: MISMATCH", name(&failing)));
    assert!(
        out.contains(&format!(
            "[HRR] {}: HANG: stopped: no progress for 1",
            name(&hung)
        )) && out.contains(&format!("s after {} failed", name(&failing))),
        "{out}"
    );
    assert!(
        out.ends_with("[HRR] All 2 processes: 1 MISMATCH, 1 HANG\n"),
        "{out}"
    );
}
