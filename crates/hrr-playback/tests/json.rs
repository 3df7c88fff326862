//! Every `--json` output of `hrr-playback` decoded with its own serde type from
//! `hrr_cli::json` (`deny_unknown_fields`), so a key added, renamed or dropped on one side fails
//! here: `--info` (a process, a root of several processes, a root of one), `--events` (every
//! line, and the `pid` key when several processes are listed), and the replay summary (a pass, a
//! mismatch, a reproduced fault with its site) through the fake driver of `tests/fake-cuda`.
//! `docs/json.md` describes them.
//!
//! Needs `cargo build --workspace` first (the README's test command does) and a C compiler.

use std::path::{Path, PathBuf};

use hrr_cli::json::{EventJson, InfoProcessJson, InfoRootJson, ReplayJson};

mod common;
use common::*;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-json")
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn json_of(target: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = extra.to_vec();
    args.push("--json");
    let (code, out, err) = fake().replay(target, &args);
    assert!(!out.is_empty(), "no JSON on stdout (exit {code}): {err}");
    (code, out)
}

fn capture(archive: &Path, args: &[&str]) {
    let o = fake().capture(archive, "driver_app", args);
    // `fault` exits non-zero by design; the archive is what matters.
    assert!(
        !pid_dirs(archive).is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn info_and_events_decode_with_their_types() {
    let demo = examples().join("demo.hrr");
    // A root of two processes: rows, no process detail.
    let (code, out) = json_of(&demo, &["--info"]);
    let v: InfoRootJson = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (code, v.schema.as_str(), v.kind.as_str()),
        (0, "hrr.info/1", "root")
    );
    assert_eq!(v.processes.len(), 2);
    assert!(v.process.is_none());
    // The same count as --list, hrr-pack list and the process detail.
    assert_eq!(v.processes[1].events, Some(9));
    let (_, out) = json_of(&demo.join("pid-1204"), &["--info"]);
    let p: InfoProcessJson = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (p.kind.as_str(), p.events, p.complete),
        ("process", 9, false)
    );
    assert!(!p.incomplete_reasons.is_empty());
    // A root of one process carries that process's object.
    let axpy = examples().join("h200-axpy.hrr");
    let (_, out) = json_of(&axpy, &["--info"]);
    let v: InfoRootJson = serde_json::from_str(&out).unwrap();
    let p = v.process.expect("a one-process root has its detail");
    assert_eq!(p.kernel_launches, 10);
    assert!(p.calls.iter().map(|c| c.count).sum::<u64>() <= p.events);
    assert_eq!(p.thread_count, p.threads.len() as u64);
    // --events: every line, and `pid` only when several processes are listed.
    let dir = pid_dirs(&axpy).remove(0);
    let (_, out) = json_of(&dir, &["--events"]);
    let evs: Vec<EventJson> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(evs.len() as u64, p.events);
    assert!(evs.iter().all(|e| e.pid.is_none()));
    assert!(evs
        .iter()
        .any(|e| e.name.starts_with("cuLaunchKernel") && !e.fields.is_empty()));
    let (_, out) = json_of(&demo, &["--events"]);
    let evs: Vec<EventJson> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(evs.iter().all(|e| e.pid.is_some()));
}

#[test]
fn replay_summaries_decode_with_their_type() {
    let tmp = tempfile::tempdir().unwrap();
    // A pass: every D2H result compared.
    let ok = tmp.path().join("ok.hrr");
    capture(&ok, &[]);
    let (code, out) = json_of(&ok, &[]);
    let v: ReplayJson = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((code, v.verdict.as_str(), v.exit_code), (0, "PASS", 0));
    assert_eq!(v.result, "PASS");
    assert_eq!((v.schema.as_str(), v.ok), ("hrr.replay/1", true));
    // The host callback is named before replay, and skipped during it.
    assert_eq!(
        v.unreproducible_calls.len(),
        1,
        "{:?}",
        v.unreproducible_calls
    );
    assert_eq!(v.unreproducible_calls[0].call, "cuLaunchHostFunc");
    assert_eq!(v.skipped_calls_total, 1);
    assert!(v.nondeterministic.is_empty() && v.recheck_error.is_none());
    assert!(v.d2h_checks.pass > 0 && v.d2h_checks.fail == 0);
    assert_eq!(
        v.d2h_checks.pass,
        v.d2h_checks.exact + v.d2h_checks.within_tol
    );
    assert!(v.stopped_at.is_none() && v.fault_site.is_none());
    // A mismatch: a D2H blob changed on disk.
    let dir = pid_dirs(&ok).remove(0);
    let events = events_json(&dir);
    let id = first_named(&events, "cuMemcpyDtoH_v2")["fields"]["d2h_blob"]
        .as_str()
        .unwrap();
    flip_blob_byte(&dir, id, 5, 0xff);
    let (code, out) = json_of(&dir, &[]);
    let v: ReplayJson = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (code, v.verdict.as_str(), v.result.as_str()),
        (1, "MISMATCH", "FAIL")
    );
    assert!(!v.ok);
    // The second replay agrees with the first: no nondeterminism, the mismatch stands.
    assert!(v.nondeterministic.is_empty() && v.recheck_error.is_none());
    assert_eq!(v.mismatches.len() as u64, v.d2h_checks.fail);
    // A recorded fault, reproduced, with the launch it is attributed to.
    let bad = tmp.path().join("fault.hrr");
    capture(&bad, &["fault"]);
    let (code, out) = json_of(&bad, &[]);
    let v: ReplayJson = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((code, v.verdict.as_str()), (0, "REPRODUCED"));
    let site = v.fault_site.expect("the faulting launch is named");
    assert_eq!(site.kernel, "fault");
    assert!(v.stopped_at.is_some() && v.recorded_failure.is_some());
    assert!(v.batching.is_none());
    // Launches batched into a prepared graph: the `batching` object.
    let chain = tmp.path().join("chain.hrr");
    capture(&chain, &["chain", "100"]);
    let (code, out) = json_of(&chain, &[]);
    let v: ReplayJson = serde_json::from_str(out.trim()).unwrap();
    let b = v.batching.expect("a run of 100 launches is batched");
    assert_eq!(
        (code, b.runs, b.launches, b.graphs, b.fell_back),
        (0, 1, 100, 1, 0)
    );
}
