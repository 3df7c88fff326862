//! Which device a replay runs on: a capture made on device 1 of a two-device fake driver
//! (`FAKE_CUDA_DEVICES`, `FAKE_APP_DEVICE`) replays on device 1, is refused on a one-device
//! machine with the `--device-map` that would run it, and runs there with that map; maps that
//! name a device this machine lacks, or that do not parse, are refused before any event.

mod common;

use common::{succeeded, temp_path, FakeCuda};
use std::path::PathBuf;

use hrr_archive::testkit::assert_contains;

/// `driver_app` captured on device `device` of a fake driver with `devices` devices: the
/// temporary folder and the process folder.
fn captured_on(devices: &str, device: &str) -> (tempfile::TempDir, PathBuf) {
    let env = [("FAKE_CUDA_DEVICES", devices), ("FAKE_APP_DEVICE", device)];
    captured_with(&[], &env).0
}

/// `driver_app ARGS` captured with `env`: the temporary folder and the process folder, and
/// what the program printed.
fn captured_with(args: &[&str], env: &[(&str, &str)]) -> ((tempfile::TempDir, PathBuf), String) {
    let (tmp, arch) = temp_path("run.hrr");
    let o = succeeded(FakeCuda::get("").capture_env(&arch, "driver_app", args, env));
    let dir = common::pid_dirs(&arch).remove(0);
    ((tmp, dir), String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Replay `dir` with `extra` on a fake driver with `devices` devices: exit code, stdout, stderr.
/// Replayed with `--device-map 1=0` on a machine of one device: PASS, with checks, none failed
/// (the summary, for more).
fn passes_on_device_0_of_one(dir: &std::path::Path) -> serde_json::Value {
    passes_on_device_0_of_one_map(dir, "1=0")
}

/// Replayed with `--device-map MAP` on a machine of one device: PASS, with checks, none failed.
fn passes_on_device_0_of_one_map(dir: &std::path::Path, map: &str) -> serde_json::Value {
    let (code, v) = FakeCuda::get("").replay_json_env(
        dir,
        &["--device-map", map],
        &[("FAKE_CUDA_DEVICES", "1")],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert!(v["d2h_checks"]["pass"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    v
}

fn replay_on(dir: &std::path::Path, devices: &str, extra: &[&str]) -> (i32, String, String) {
    FakeCuda::get("").replay_env(dir, extra, &[("FAKE_CUDA_DEVICES", devices)])
}

/// The `[HRR] Device` line of a human summary.
fn device_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("[HRR] Device"))
        .unwrap_or_else(|| panic!("no device line in {out}"))
}

#[test]
fn a_capture_on_device_1_replays_there_or_where_the_map_says() {
    let (_tmp, dir) = captured_on("2", "1");
    let (_, v) = FakeCuda::get("").replay_json_env(&dir, &["--info"], &[]);
    assert_eq!(v["context_devices"], serde_json::json!([1]), "{v}");
    let (_, info, _) = replay_on(&dir, "2", &["--info"]);
    assert!(
        !info.contains("Devices used"),
        "one device: no line: {info}"
    );

    // the same machine: device 1, no map needed
    let (code, out, err) = replay_on(&dir, "2", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "[HRR] PASS");
    assert!(device_line(&out).contains("HRR Fake GPU #1"), "{out}");
    assert!(
        !device_line(&out).contains("replaying recorded device"),
        "{out}"
    );

    // one device here: refused before any event, naming the map that would run it
    let (code, out, err) = replay_on(&dir, "1", &[]);
    assert_ne!(code, 0, "{out}{err}");
    let said = format!("{out}{err}");
    assert_contains(&said, "Device missing: the archive used device 1; this machine has 1 device (0). Replay with --device-map 1=0");
    assert!(!said.contains("[HRR] PASS"), "{said}");

    // with that map: device 0, every check made
    passes_on_device_0_of_one(&dir);
    let (_, out, _) = replay_on(&dir, "1", &["--device-map", "1=0"]);
    let line = device_line(&out);
    assert!(
        line.contains("HRR Fake GPU (") && line.contains("device 0 replaying recorded device 1"),
        "{line}"
    );
}

#[test]
fn a_capture_on_device_0_moves_to_device_1_and_bad_maps_are_refused() {
    let (_tmp, dir) = captured_on("1", "0");

    let (code, out, err) = replay_on(&dir, "2", &["--device-map", "0=1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        device_line(&out).contains("HRR Fake GPU #1")
            && device_line(&out).contains("device 1 replaying recorded device 0"),
        "{out}"
    );

    // a live device this machine lacks
    let (code, out, err) = replay_on(&dir, "2", &["--device-map", "0=5"]);
    assert_ne!(code, 0);
    let said = format!("{out}{err}");
    assert_contains(
        &said,
        "--device-map 0=5 names device 5; this machine has 2 devices (0 to 1)",
    );

    // maps that do not parse: a usage error (2) saying what was expected
    for bad in ["x", "0=1,0=0", "0=-1"] {
        let (code, out, err) = replay_on(&dir, "2", &["--device-map", bad]);
        assert_eq!(code, 2, "{bad}: {out}{err}");
        assert!(err.contains("--device-map"), "{bad}: {err}");
    }
}

/// Devices the fake's trace says work landed on: (kernels, physical memory) per device ordinal
/// seen, as counts indexed by ordinal.
fn work_by_device(trace: &str) -> (Vec<usize>, Vec<usize>) {
    let mut kernels = vec![0; 4];
    let mut memory = vec![0; 4];
    for line in trace.lines() {
        let Some(rest) = line.strip_prefix("[fake-cuda] ") else {
            continue;
        };
        let Some((what, dev)) = rest.rsplit_once(" on device ") else {
            continue;
        };
        let Ok(dev) = dev.trim().parse::<usize>() else {
            continue;
        };
        if what.starts_with("kernel ") {
            kernels[dev] += 1;
        } else if what == "cuMemCreate" {
            memory[dev] += 1;
        }
    }
    (kernels, memory)
}

#[test]
fn a_capture_on_two_devices_replays_on_two_or_on_one_with_its_peer_copies() {
    let ((_tmp, dir), out) = captured_with(&["two_devices"], &[("FAKE_CUDA_DEVICES", "2")]);
    assert_contains(&out, "two devices sum=");
    let events = common::events_json(&dir);
    common::assert_recorded(
        &events,
        &[
            "cuCtxSetCurrent",
            "cuCtxEnablePeerAccess",
            "cuMemcpyPeer",
            "cuMemcpyPeerAsync",
        ],
    );
    // --info says which devices the capture used (a replay opens as many)
    let (_, info, _) = replay_on(&dir, "2", &["--info"]);
    assert_contains(&info, "Devices used:       0, 1 (a context on each");
    let (_, v) = FakeCuda::get("").replay_json_env(&dir, &["--info"], &[]);
    assert_eq!(v["context_devices"], serde_json::json!([0, 1]), "{v}");

    // two devices here too: each recorded device on its own, the contexts followed (device 1's
    // kernels run on device 1, its allocations are placed there, the module loaded in its
    // context is loaded there again), PASS with the checks
    for extra in [&[][..], &["--no-placement"][..]] {
        let env = [("FAKE_CUDA_DEVICES", "2"), ("FAKE_CUDA_TRACE", "1")];
        let (code, out, err) = FakeCuda::get("").replay_env(&dir, extra, &env);
        assert_eq!(code, 0, "{extra:?}: {out}{err}");
        assert!(out.contains("[HRR] PASS"), "{extra:?}: {out}");
        assert!(
            out.contains("D2H checks      : 1 pass") || out.contains("D2H checks      : 2 pass"),
            "{extra:?}: {out}"
        );
        assert!(device_line(&out).ends_with(", devices 0, 1"), "{out}");
        let (kernels, memory) = work_by_device(&err);
        assert!(
            kernels[0] >= 2 && kernels[1] >= 2,
            "{extra:?}: kernels by device {kernels:?}"
        );
        if extra.is_empty() {
            assert!(
                memory[0] >= 1 && memory[1] >= 1,
                "memory by device {memory:?}"
            );
        }
    }

    // the devices swapped: recorded device 1's kernels run on device 0
    let env = [("FAKE_CUDA_DEVICES", "2"), ("FAKE_CUDA_TRACE", "1")];
    let (code, out, err) = FakeCuda::get("").replay_env(&dir, &["--device-map", "0=1,1=0"], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        device_line(&out).ends_with(", devices 1, 0 replaying recorded devices 0, 1"),
        "{out}"
    );
    let (kernels, _) = work_by_device(&err);
    assert!(kernels[0] >= 2 && kernels[1] >= 2, "{kernels:?}");

    // one device here: refused, naming the map that puts them on one
    let (code, out, err) = replay_on(&dir, "1", &[]);
    assert_ne!(code, 0, "{out}{err}");
    let said = format!("{out}{err}");
    assert!(
        said.contains(
            "Device missing: the archive used devices 0, 1; this machine has 1 device (0)"
        ) && said.contains("--device-map 0=0,1=0"),
        "{said}"
    );

    // on one device: the second half of the result is what the peer copies brought over from
    // device 1's buffer, so the check passes only if they were replayed
    let v = passes_on_device_0_of_one_map(&dir, "0=0,1=0");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
    let device = v["device"].as_str().unwrap();
    assert!(
        device.ends_with(", device 0 replaying recorded devices 0, 1"),
        "{device}"
    );
}

/// The capture's device facts, edited in its manifest: another compute capability, or a newer
/// driver than this one, is refused before any event with what to do; the facts of the
/// recorded device are the ones its entry of `devices` gives.
#[test]
fn another_architecture_or_a_newer_driver_is_refused() {
    let (_tmp, dir) = captured_on("2", "1");
    let path = dir.join("manifest.json");
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let edited = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut m = original.clone();
        f(&mut m["metadata"]);
        std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
        replay_on(&dir, "2", &[])
    };
    let devices = original["metadata"]["devices"].as_array().unwrap();
    assert!(devices.iter().any(|d| d["ordinal"] == 1), "{devices:?}");

    // device 1, the recorded one, is of another architecture (device 0's entry is not)
    let (code, out, err) = edited(&|meta| {
        for d in meta["devices"].as_array_mut().unwrap() {
            if d["ordinal"] == 1 {
                d["compute_capability"] = "8.0".into();
            }
        }
    });
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        format!("{out}{err}").contains(
            "[HRR] Architecture mismatch: the archive was captured on compute capability 8.0"
        ),
        "{out}{err}"
    );

    let (code, out, err) = edited(&|meta| meta["driver_version"] = 999_000.into());
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        format!("{out}{err}")
            .contains("[HRR] Driver too old: the archive was captured with CUDA driver 999000"),
        "{out}{err}"
    );

    // as recorded: it replays
    std::fs::write(&path, serde_json::to_string(&original).unwrap()).unwrap();
    let (code, out, err) = replay_on(&dir, "2", &[]);
    assert_eq!(code, 0, "{out}{err}");
}
