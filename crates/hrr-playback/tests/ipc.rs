//! Several processes of one archive replayed together (`--all`): two processes of the fake
//! driver share device memory through an IPC handle (`tests/fake-cuda/apps/ipc_app.c`; the fake
//! backs exported memory with files of `$FAKE_CUDA_IPC_DIR`).

use std::path::{Path, PathBuf};

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("ipc")
}

/// `ipc_app` captured into `run.hrr` of a new folder: the folder, the archive, the IPC folder,
/// and the process folders (parent first: it started first).
fn captured() -> (tempfile::TempDir, PathBuf, String, Vec<PathBuf>) {
    captured_app("ipc_app")
}

/// `app` (one of the two-process apps) captured the same way.
fn captured_app(app: &str) -> (tempfile::TempDir, PathBuf, String, Vec<PathBuf>) {
    captured_app_env(app, &[])
}

/// `app` captured with `env` too.
fn captured_app_env(
    app: &str,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, PathBuf, String, Vec<PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let ipc = tmp.path().join("ipc");
    std::fs::create_dir(&ipc).unwrap();
    let ipc = ipc.to_str().unwrap().to_string();
    let arch = tmp.path().join("run.hrr");
    let mut env = env.to_vec();
    env.push(("FAKE_CUDA_IPC_DIR", &ipc));
    let o = fake().capture_env(&arch, app, &[], &env);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("child: pattern")
            && out.contains("parent: child's half seen")
            && !out.contains("NOT seen"),
        "{out}"
    );
    let dirs = pid_dirs(&arch);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    (tmp, arch, ipc, dirs)
}

fn replay(target: &Path, extra: &[&str], ipc: &str) -> (i32, String, String) {
    fake().replay_env(target, extra, &[("FAKE_CUDA_IPC_DIR", ipc)])
}

#[test]
fn the_handle_and_its_open_are_recorded_with_the_same_bytes() {
    let (_tmp, _arch, _ipc, dirs) = captured();
    let exported = all_named(&events_json(&dirs[0]), "cuIpcGetMemHandle")
        .first()
        .map(|e| e["fields"]["handle"].clone())
        .expect("the parent's export");
    let events = events_json(&dirs[1]);
    let open = first_named(&events, "cuIpcOpenMemHandle_v2");
    assert_eq!(open["fields"]["handle"], exported, "{open}");
    assert_eq!(open["fields"]["bytes"], 3 << 20, "{open}");
    assert_recorded(
        &events,
        &[
            "cuIpcOpenMemHandle_v2",
            "cuIpcOpenEventHandle",
            "cuStreamWaitEvent",
            "cuMemcpyDtoH_v2",
            "cuIpcCloseMemHandle",
        ],
    );
    let exported_event =
        first_named(&events_json(&dirs[0]), "cuIpcGetEventHandle")["fields"]["handle"].clone();
    assert_eq!(
        first_named(&events, "cuIpcOpenEventHandle")["fields"]["handle"],
        exported_event
    );
}

#[test]
fn all_processes_replay_together_and_each_sees_the_others_writes() {
    let (_tmp, arch, ipc, dirs) = captured();
    let (code, out, err) = replay(&arch, &["--all"], &ipc);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("[HRR] Replaying 2 processes together: pid-"),
        "{out}"
    );
    for d in &dirs {
        let name = d.file_name().unwrap().to_str().unwrap();
        assert!(
            out.contains(&format!("[HRR] {name}: PASS; D2H checks 1 pass, 0 fail")),
            "{name}: {out}"
        );
    }
    assert!(out.ends_with("[HRR] All 2 processes: 2 PASS\n"), "{out}");

    let (code, out, err) = replay(&arch, &["--all", "--json"], &ipc);
    assert_eq!(code, 0, "{err}");
    let typed: hrr_cli::json::ReplayAllJson = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(typed.processes.len(), 2);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(
        (&v["schema"], &v["verdict"], &v["ok"]),
        (&"hrr.replay-all/1".into(), &"PASS".into(), &true.into()),
        "{v}"
    );
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{v}");
    for p in procs {
        assert_eq!(p["replay"]["d2h_checks"]["exact"], 1, "{p}");
    }

    // The parent alone: the child's writes never happen, its check fails.
    let (code, out, _) = replay(&dirs[0], &[], &ipc);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "[HRR] MISMATCH: 1 of 1 D2H result differs");
    // The child alone cannot open what nobody exported: said, not a bare PASS.
    let (code, out, err) = replay(&dirs[1], &[], &ipc);
    assert_ne!(code, 0, "{out}{err}");
    assert_contains(
        &out,
        "replay every process of the archive together (hrr-playback ROOT --all)",
    );
}

#[test]
fn a_root_of_several_processes_names_all_and_all_refuses_a_pid() {
    let (_tmp, arch, ipc, dirs) = captured();
    let (code, _, err) = replay(&arch, &[], &ipc);
    assert_eq!(code, 2, "{err}");
    assert_contains(&err, ", or replay them together with --all");
    let pid = dirs[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_start_matches("pid-")
        .to_string();
    let (code, _, err) = replay(&arch, &["--all", "--pid", &pid], &ipc);
    assert_eq!(code, 2, "{err}");
    assert_contains(&err, "cannot be used with");
    // One output archive cannot take every process's launch.
    let out = arch.with_extension("one");
    let out = out.to_str().unwrap();
    let (code, _, err) = replay(&arch, &["--all", "--extract", "1", "-o", out], &ipc);
    assert_eq!(code, 2, "{err}");
    assert_contains(&err, "cannot be used with");
}

#[test]
fn memory_shared_through_a_file_descriptor_is_imported_again_at_replay() {
    let (_tmp, arch, ipc, dirs) = captured_app("shareable_app");
    let export =
        first_named(&events_json(&dirs[0]), "cuMemExportToShareableHandle")["fields"].clone();
    let import =
        first_named(&events_json(&dirs[1]), "cuMemImportFromShareableHandle")["fields"].clone();
    // The descriptor's file, by device and inode, is the same in both processes.
    assert_eq!(export["kind"], 1, "{export}");
    assert_eq!(export["key"].as_str().map(str::len), Some(32), "{export}");
    assert_eq!(import["key"], export["key"], "{import}");

    // (--all gives each replay process --no-localize and --no-recheck: said again, no clash)
    let (code, out, err) = replay(&arch, &["--all", "--no-recheck"], &ipc);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("[HRR] All 2 processes: 2 PASS\n"), "{out}");
    assert_contains(&out, "; D2H checks 1 pass, 0 fail"); // the parent
    assert_contains(&out, "; D2H checks 2 pass, 0 fail"); // the child

    // Alone, the parent never sees the child's half, and the child imports nothing.
    let (code, out, _) = replay(&dirs[0], &[], &ipc);
    assert_eq!(code, 1, "{out}");
    let (code, out, err) = replay(&dirs[1], &[], &ipc);
    assert_ne!(code, 0, "{out}{err}");
    assert_contains(&out, "imports memory another process exported");
}

/// As the NVIDIA driver does, the fake exports both allocations as descriptors of one file: the
/// recorded keys are the same, and only the order of the exports and imports across the
/// processes pairs each import with the right allocation (pairing by key alone imported the
/// second allocation twice, and the child's check of the first failed).
#[test]
fn imports_of_descriptors_of_one_file_are_paired_by_their_order() {
    let tmp = tempfile::tempdir().unwrap();
    let one_file = tmp.path().join("exports");
    let one_file = one_file.to_str().unwrap();
    let env = [("FAKE_CUDA_EXPORT_ONE_FILE", one_file)];
    let (_tmp, arch, ipc, dirs) = captured_app_env("shareable_app", &env);
    let (parent, child) = (events_json(&dirs[0]), events_json(&dirs[1]));
    let exports = all_named(&parent, "cuMemExportToShareableHandle");
    let imports = all_named(&child, "cuMemImportFromShareableHandle");
    assert_eq!((exports.len(), imports.len()), (2, 2));
    let keys: Vec<&serde_json::Value> = exports
        .iter()
        .chain(&imports)
        .map(|e| &e["fields"]["key"])
        .collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");

    let env = [("FAKE_CUDA_IPC_DIR", ipc.as_str()), env[0]];
    let (code, v) = fake().replay_json_env(&arch, &["--all"], &env);
    assert_eq!(code, 0, "{v}");
    let checks: Vec<&serde_json::Value> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["replay"]["d2h_checks"])
        .collect();
    assert_eq!(checks[0]["pass"], 1, "{v}");
    assert_eq!(checks[1]["pass"], 2, "{v}");
    assert!(checks.iter().all(|c| c["fail"] == 0), "{v}");
}

/// One process a device, as in a data-parallel job: the child opens its context on device 1
/// (having looked every device up, as cudart does). `--all` replays each process on the device
/// it worked on, the child on device 1 only.
#[test]
fn processes_on_two_devices_replay_each_on_its_own() {
    let two = [("FAKE_CUDA_DEVICES", "2"), ("FAKE_APP_CHILD_DEVICE", "1")];
    let (_tmp, arch, ipc, _dirs) = captured_app_env("ipc_app", &two);
    let env = [
        ("FAKE_CUDA_IPC_DIR", ipc.as_str()),
        ("FAKE_CUDA_DEVICES", "2"),
    ];
    let (code, v) = fake().replay_json_env(&arch, &["--all"], &env);
    assert_eq!(code, 0, "{v}");
    let procs = v["processes"].as_array().unwrap();
    let devices: Vec<&str> = procs
        .iter()
        .map(|p| p["replay"]["device"].as_str().unwrap())
        .collect();
    assert_eq!(
        devices,
        ["HRR Fake GPU (sm_90)", "HRR Fake GPU #1 (sm_90)"],
        "{v}"
    );
    for p in procs {
        assert_eq!(p["replay"]["verdict"], "PASS", "{p}");
        assert_eq!(p["replay"]["d2h_checks"]["pass"], 1, "{p}");
    }
}

/// A process whose events cannot be read does not stop `--all`: the others replay, and that
/// one's own replay says what is wrong.
#[test]
fn all_replays_beside_a_process_whose_events_are_unreadable() {
    let (_tmp, arch, ipc, dirs) = captured_app("shareable_app");
    std::fs::write(dirs[1].join("events.bin"), b"not an events file").unwrap();
    let (code, out, err) = replay(&arch, &["--all"], &ipc);
    assert_ne!(code, 0, "{out}{err}");
    assert!(out.contains("[HRR] All 2 processes: "), "{out}{err}");
    // the other one is not left waiting for it (it ended without saying so itself)
    assert!(!out.contains("HANG"), "{out}");
    assert_contains(&out, "Bad magic");
}
