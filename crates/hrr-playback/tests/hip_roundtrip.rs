//! HIP capture → inspect → replay round trips on the CPU: real programs built by hipcc
//! (`tests/fake-hip/apps`) run against the fake `libamdhip64.so.5` of `tests/fake-hip`, and
//! capture stacked on the real ROCm runtime (no GPU here: it answers with its own errors).
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first), a C compiler, and hipcc (Debian: `apt-get install hipcc libamdhip64-5
//! libamdhip64-dev`). Without hipcc every test here says it is skipped and passes. Helpers:
//! `hip_common/` (the fake runtime and its programs, capture and replay against them, and the
//! recorded argument layouts checked with llvm-readelf).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
mod hip_common;
use common::*;
use hip_common::layouts::check_layouts;
use hip_common::*;

use hrr_archive::testkit::assert_contains;

#[test]
fn vector_add_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "vector_add", &[]);
    assert_recorded(
        &events,
        &[
            "hipGetDeviceCount",
            "hipMalloc",
            "hipMemcpy",
            "hipMemcpyHtoD",
            "__hipRegisterFatBinary",
            "__hipRegisterFunction",
            "hipLaunchKernel",
            "hipMemcpyDtoH",
            "hipMemset",
            "hipMemcpyToSymbol",
            "hipMemcpyFromSymbol",
            "hipMemcpyDtoD",
            "hipDeviceSynchronize",
            "hipFree",
        ],
    );
    let names = names(&events);
    // the fat binary is written once, before its first launch, as a code object
    let reg = names
        .iter()
        .position(|n| n == "__hipRegisterFatBinary")
        .unwrap();
    let first_launch = names.iter().position(|n| n == "hipLaunchKernel").unwrap();
    assert!(reg < first_launch);
    assert_eq!(names.iter().filter(|n| *n == "hipLaunchKernel").count(), 5);
    // argument layouts agree with the code object's own metadata (hidden arguments excluded)
    let (checked, hidden) = check_layouts(&arch, &events);
    assert!(checked == 0 || checked == 5, "{checked}");
    assert!(
        checked == 0 || hidden >= 1,
        "count_over has hidden arguments"
    );
    let saxpy = events
        .iter()
        .find(|e| e["fields"]["kernel"] == "_Z5saxpyfPKfPfi")
        .unwrap();
    assert_eq!(
        saxpy["fields"]["arg_offsets"],
        serde_json::json!([0, 8, 16, 24])
    );
    // a hipMemcpyDefault copy back is classified as D2H and carries its result
    let default_copy = events
        .iter()
        .find(|e| e["name"] == "hipMemcpy" && e["fields"]["kind"] == 4)
        .unwrap();
    assert_eq!(default_copy["fields"]["direction"], 2);
    assert!(default_copy["fields"]["d2h_blob"].is_string());

    let (code, info, err) = playback_on(&arch, &["--info"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "API:                hip",
        "Complete:           yes",
        "Kernel launches:    5",
        "D2H copies:         7",
        "Architecture:       gfx90a:sramecc+:xnack-",
        "Driver version:     5.2.21153 (50221153)",
        // kernels are shown demangled (the JSON keeps the recorded name beside)
        "count_over(float const*, int, float, int*)",
    ] {
        assert!(info.contains(want), "{want:?} not in:\n{info}");
    }

    let (code, out, err) = replay(dir, &arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "[HRR] Kernels launched: 5");
    assert_checks_exact(&out, 7);
    assert_contains(
        &out,
        "Device          : HRR Fake AMD GPU (gfx90a:sramecc+:xnack-)",
    );
    assert!(out.trim_end().ends_with("[HRR] PASS"), "{out}");
}

#[test]
fn module_launch_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "module_launch", &[]);
    assert_recorded(
        &events,
        &[
            "hipModuleLoadData",
            "hipModuleLoad",
            "hipModuleGetFunction",
            "hipModuleLaunchKernel",
            "hipStreamCreate",
            "hipMemcpyDtoHAsync",
            "hipStreamSynchronize",
            "hipModuleUnload",
        ],
    );
    // both loads are the same code object (the one from memory was overwritten after loading)
    let codes: Vec<&str> = events
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("hipModuleLoad"))
        .map(|e| e["fields"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 2);
    assert_eq!(codes[0], codes[1]);
    let kernels_co = std::fs::read(dir.join("kernels.co")).unwrap();
    let stored = pid_dirs(&arch)[0]
        .join("code_objects")
        .join(format!("{}.hsaco", codes[0]));
    assert_eq!(std::fs::read(stored).unwrap(), kernels_co);
    // kernelParams launches are laid out from the metadata; the `extra` one keeps its buffer
    let (checked, _) = check_layouts(&arch, &events);
    assert!(checked == 0 || checked == 3, "{checked}");
    let stride = events
        .iter()
        .find(|e| e["fields"]["kernel"] == "grid_stride")
        .unwrap();
    assert_eq!(stride["fields"]["args"].as_str().unwrap().len(), 24);

    let (code, out, err) = replay(dir, &arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "[HRR] Kernels launched: 3");
    assert_contains(&out, "D2H checks      : 3 pass (3 exact");
}

#[test]
fn streams_events_vmm_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "streams", &[]);
    assert_recorded(
        &events,
        &[
            "hipStreamCreateWithFlags",
            "hipStreamCreateWithPriority",
            "hipEventCreate",
            "hipEventCreateWithFlags",
            "hipEventRecord",
            "hipStreamWaitEvent",
            "hipHostMalloc",
            "hipMemcpyAsync",
            "hipMemsetD32Async",
            "hipMallocAsync",
            "hipFreeAsync",
            "hipMemsetD8", // reached through dlsym
            "hipMemsetD16",
            "hipMemAddressReserve",
            "hipMemCreate",
            "hipMemMap",
            "hipMemSetAccess",
            "hipMemUnmap",
            "hipMemRelease",
            "hipMemAddressFree",
            "hipEventDestroy",
            "hipStreamDestroy",
        ],
    );
    let names = names(&events);
    // calls the runtime makes to its own exports while serving one are not recorded: the fake's
    // hipMallocAsync calls hipMalloc, its hipMemcpyDtoHAsync calls hipMemcpyAsync
    assert_eq!(names.iter().filter(|n| *n == "hipMalloc").count(), 2);
    check_layouts(&arch, &events);
    // Async D2H copies carry no bytes; each one's hrrHipMemcpyResult follows it, before the next
    // synchronisation (recorded by the host function capture enqueued behind the copy).
    let seq = |e: &serde_json::Value| e["seq"].as_u64().unwrap();
    let copies: Vec<_> = events
        .iter()
        .filter(|e| {
            e["name"] == "hipMemcpyDtoHAsync"
                || (e["name"] == "hipMemcpyAsync" && e["fields"]["direction"] == 2)
        })
        .collect();
    assert_eq!(copies.len(), 2, "{events:?}");
    for c in copies {
        assert!(c["fields"]["d2h_blob"].is_null(), "{c}");
        let r = events
            .iter()
            .find(|e| e["name"] == "hrrHipMemcpyResult" && e["fields"]["copy"] == c["seq"])
            .unwrap_or_else(|| panic!("no result for {c}"));
        assert!(r["fields"]["d2h_blob"].is_string(), "{r}");
        let sync = events
            .iter()
            .find(|e| seq(e) > seq(c) && e["name"].as_str().unwrap().ends_with("Synchronize"))
            .unwrap();
        assert!(seq(c) < seq(r) && seq(r) < seq(sync), "{c} {r} {sync}");
    }

    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["kernels_launched"], 4, "{v}");
    assert_eq!(v["d2h_checks"]["exact"], 5, "{v}");
    assert!(v["allocations"]["placed"].as_u64().unwrap() >= 3, "{v}");
    assert_eq!(v["allocations"]["translated"], 0, "{v}");
}

#[test]
fn a_runtime_loaded_rtld_local_by_a_plugin_is_found_and_recorded() {
    // Built with cc: runs without hipcc. The plugin's HIP calls reach the preloaded wrappers,
    // whose RTLD_NEXT finds no runtime (it is in the plugin's local scope only): the wrappers
    // find the loaded runtime by name instead. Its hipMemset comes from hipGetProcAddress,
    // which hands out the wrapper.
    let dir = &built().0;
    let (_tmp, arch, events) = captured_run(dir, "plugin_host", &[]);
    assert_eq!(
        names(&events),
        [
            "hipGetDeviceCount",
            "hipMalloc",
            "hipMemcpy",
            "hipMemset",
            "hipMemcpy",
            "hipFree"
        ]
    );
    let m = manifest_json(&pid_dirs(&arch)[0]);
    assert_eq!(m["metadata"]["devices"][0]["name"], "HRR Fake AMD GPU");
    let (code, out, err) = replay(dir, &arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "D2H checks      : 1 pass (1 exact");
}

#[test]
fn replay_without_placement_translates_pointers() {
    let dir = fake_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    for name in ["vector_add", "streams"] {
        let arch = tmp.path().join(format!("{name}.hrr"));
        captured(dir, &arch, name, &[]);
        // The fake hands out addresses from another window: every pointer moves.
        let env = [("FAKE_HIP_VA_BASE", "0x7c0000000000")];
        let (code, out, err) = replay_on_fake(dir, &arch, &["--json", "--no-placement"], &env);
        let v = summary(&out, &err);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(v["allocations"]["placed"], 0, "{v}");
        assert!(v["allocations"]["translated"].as_u64().unwrap() >= 3, "{v}");
        assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    }
}

#[test]
fn a_corrupted_d2h_blob_fails_replay_and_names_the_event() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "vector_add", &[]);
    let pid = pid_dirs(&arch).remove(0);
    let ev = first_named(&events, "hipMemcpyDtoH");
    flip_blob_byte(&pid, ev["fields"]["d2h_blob"].as_str().unwrap(), 9, 0xff);
    let (code, out, _) = replay(dir, &pid, &[]);
    assert_mismatch_at(code, &out, ev);
    assert_contains(&out, "first at offset 9");
}

#[test]
fn replay_really_runs_the_work_zeroed_inputs_fail() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "module_launch", &[]);
    let pid = pid_dirs(&arch).remove(0);
    for e in &events {
        if let Some(id) = e["fields"]["h2d_blob"].as_str() {
            zero_blob(&pid, id);
        }
    }
    let (code, v) = replay_json(dir, &pid, &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["result"], "FAIL");
    assert_eq!(v["d2h_checks"]["fail"], 2, "{v}"); // affine and grid_stride read the input
}

#[test]
fn replay_flags_filter_loop_and_sync() {
    let dir = fake_or_skip!();
    let (_tmp, arch, _) = captured_run(dir, "module_launch", &[]);
    let (code, v) = replay_json(dir, &arch, &["--loop", "2"]);
    assert_eq!((code, v["kernels_launched"].as_u64()), (0, Some(6)), "{v}");
    let (code, v) = replay_json(
        dir,
        &arch,
        &["--sync-after-launch", "--sync-watchdog-ms", "5000"],
    );
    assert_eq!(code, 0, "{v}");
    let (_, v) = replay_json(dir, &arch, &["--kernel-filter", "fill"]);
    assert_eq!(
        (
            v["kernels_launched"].as_u64(),
            v["kernels_filtered"].as_u64()
        ),
        (Some(1), Some(2)),
        "{v}"
    );
}

/// `hipExtModuleLaunchKernel` and `hipHccModuleLaunchKernel` (sizes in work-items, as rocBLAS's
/// Tensile GEMMs launch; exported with C++ linkage by ROCm 5, as the program here calls them):
/// recorded as launches of global / local work-groups, replayed, their results checked.
#[test]
fn ext_module_launches_in_work_items_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "module_launch", &["ext"]);
    let launch = |name: &str| {
        // recorded under the name the program called (here the C++ one)
        events
            .iter()
            .find(|e| e["name"].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("{name} not recorded"))
            .clone()
    };
    let ext = launch("hipExtModuleLaunchKernel");
    assert_eq!(ext["fields"]["kernel"], "fill_u32", "{ext}");
    // 777 elements in work-groups of 128: 7 groups of the 896 work-items asked for
    assert_eq!(
        (&ext["fields"]["grid_x"], &ext["fields"]["block_x"]),
        (&7.into(), &128.into()),
        "{ext}"
    );
    // its start and stop events, recorded by the runtime around the kernel, as the
    // hipEventRecord events on its stream they stand for: right before and right after it
    let seq = ext["seq"].as_u64().unwrap();
    let at = |s: u64| events.iter().find(|e| e["seq"] == s).unwrap();
    let (start, stop) = (at(seq - 1), at(seq + 1));
    for e in [start, stop] {
        assert_eq!(e["name"], "hipEventRecord", "{e}");
        assert_eq!(e["fields"]["stream"], ext["fields"]["stream"], "{e}");
    }
    assert_ne!(start["fields"]["event"], stop["fields"]["event"]);
    // the deprecated form, given no events, records none
    let hcc = launch("hipHccModuleLaunchKernel");
    assert_eq!(hcc["fields"]["kernel"], "affine");
    assert_ne!(
        at(hcc["seq"].as_u64().unwrap() + 1)["name"],
        "hipEventRecord"
    );
    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["kernels_launched"], 5, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 5, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
}

/// Capture `streams MODE`, whose copies named `prefix…` are four: an upload of `width` bytes a
/// row from host rows `src_pitch` apart, a device-to-device copy and two reads back. The upload's
/// source is recorded packed, both reads carry their packed result and are checked at replay
/// (two checks beyond the plain program's); zeroing the upload's blob makes them fail. The
/// upload's event, for more checks.
fn pitched_round_trip(
    dir: &Path,
    mode: &str,
    prefix: &str,
    (width, src_pitch): (u64, u64),
) -> serde_json::Value {
    let (_tmp, arch, events) = captured_run(dir, "streams", &[mode]);
    let copies: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with(prefix))
        .collect();
    assert_eq!(copies.len(), 4, "{copies:?}");
    let upload = copies[0];
    assert_eq!(upload["fields"]["width_bytes"], width, "{upload}");
    assert_eq!(upload["fields"]["src_pitch"], src_pitch, "{upload}");
    assert!(upload["fields"]["h2d_blob"].is_string(), "{upload}");
    assert!(
        copies[2]["fields"]["d2h_blob"].is_string() && copies[3]["fields"]["d2h_blob"].is_string(),
        "{copies:?}"
    );
    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!(code, 0, "{v}");
    let (_plain_tmp, plain_arch, _) = captured_run(dir, "streams", &[]);
    let (code, p) = replay_json(dir, &plain_arch, &[]);
    assert_eq!(code, 0, "{p}");
    let without = p["d2h_checks"]["pass"].as_u64().unwrap();
    assert_eq!(
        v["d2h_checks"]["pass"].as_u64(),
        Some(without + 2),
        "the two reads back are checked: {v}"
    );
    let blob = upload["fields"]["h2d_blob"].as_str().unwrap();
    let pid = pid_dirs(&arch).remove(0);
    zero_blob(&pid, blob);
    let (code, v) = replay_json(dir, &arch, &["--no-recheck"]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (1, Some("MISMATCH")),
        "a zeroed upload must change the results: {v}"
    );
    upload.clone()
}

/// Pitched copies (`hipMemcpy2D`, `hipMemcpy2DAsync`) between a wider host matrix and
/// `hipMallocPitch` memory.
#[test]
fn pitched_copies_round_trip() {
    let dir = fake_or_skip!();
    pitched_round_trip(dir, "2d", "hipMemcpy2D", (192, 256));
}

/// 2D memsets (`hipMemset2D`, `hipMemset2DAsync`) of pitched memory, read back with a 2D copy:
/// recorded with their rows, replayed (a replay without them fails the read back's check).
#[test]
fn memsets_2d_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "streams", &["memset2d"]);
    let named =
        |n: &str| -> Vec<&serde_json::Value> { events.iter().filter(|e| e["name"] == n).collect() };
    assert_eq!(named("hipMemset2D").len(), 2, "{events:?}");
    let a = named("hipMemset2DAsync");
    assert_eq!(a.len(), 1, "{events:?}");
    let f = &a[0]["fields"];
    assert_eq!(
        (
            f["value"].as_u64(),
            f["width"].as_u64(),
            f["height"].as_u64(),
            f["element_bytes"].as_u64()
        ),
        (Some(0x3f), Some(16), Some(16), Some(1)),
        "{f}"
    );
    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v}");
    let (_plain_tmp, plain_arch, _) = captured_run(dir, "streams", &[]);
    let (_, p) = replay_json(dir, &plain_arch, &[]);
    assert_eq!(
        v["d2h_checks"]["pass"].as_u64(),
        Some(p["d2h_checks"]["pass"].as_u64().unwrap() + 1),
        "the read back is checked: {v}"
    );
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

/// 3D copies (`hipMemcpy3D`, `hipMemcpy3DAsync`) of a box of a host volume into pitched device
/// memory, scaled, device to device at an offset, and back: slices packed one after the other.
#[test]
fn copies_3d_round_trip() {
    let dir = fake_or_skip!();
    let upload = pitched_round_trip(dir, "3d", "hipMemcpy3D", (40, 64));
    let f = &upload["fields"];
    assert_eq!(
        (f["height"].as_u64(), f["depth"].as_u64()),
        (Some(6), Some(5)),
        "{f}"
    );
    assert_eq!(
        (f["src_z"].as_u64(), f["src_height"].as_u64()),
        (Some(1), Some(8)),
        "{f}"
    );
}

/// The program built with `-fgpu-default-stream=per-thread` calls the `*_spt` forms for its
/// launches, copies and memsets: each recorded under its own name and replayed as the plain
/// call, with the same launches and checks as the plain build.
#[test]
fn per_thread_default_stream_calls_round_trip() {
    let dir = fake_or_skip!();
    let calls = [
        "hipLaunchKernel_spt",
        "hipMemcpy_spt",
        "hipMemset_spt",
        "hipMemcpyToSymbol_spt",
        "hipMemcpyFromSymbol_spt",
    ];
    let (v, want) = replayed_beside(dir, ("vector_add_spt", &[]), &calls, "vector_add");
    for k in ["kernels_launched", "d2h_checks"] {
        assert_eq!(v[k], want[k], "{k}: {v}");
    }
    assert!(v["d2h_checks"]["pass"].as_u64().unwrap() > 0, "{v}");
}

/// `(name, extra)` captured (its events holding `calls`) and replayed, and `plain` (without
/// arguments) captured and replayed: both replays' `--json` summaries, each a PASS.
fn replayed_beside(
    dir: &Path,
    (name, extra): (&str, &[&str]),
    calls: &[&str],
    plain: &str,
) -> (serde_json::Value, serde_json::Value) {
    let (_tmp, arch, events) = captured_run(dir, name, extra);
    assert_recorded(&events, calls);
    let (_plain_tmp, plain_arch, _) = captured_run(dir, plain, &[]);
    let [(code, v), (plain_code, p)] = [&arch, &plain_arch].map(|a| replay_json(dir, a, &[]));
    assert_eq!((code, plain_code), (0, 0), "{v}\n{p}");
    (v, p)
}

/// Allocations from memory pools (`hipMallocFromPoolAsync`, from a pool of the program's own and
/// from the device's default one) are recorded as allocations and replayed at their addresses;
/// the pool calls are recorded; the result computed in them is checked.
#[test]
fn pool_allocations_round_trip() {
    let dir = fake_or_skip!();
    let calls = [
        "hipMemPoolCreate",
        "hipDeviceGetDefaultMemPool",
        "hipMallocFromPoolAsync",
        "hipMemPoolTrimTo",
        "hipMemPoolDestroy",
    ];
    let (v, p) = replayed_beside(dir, ("streams", &["pool"]), &calls, "streams");
    let pass = |v: &serde_json::Value| v["d2h_checks"]["pass"].as_u64().unwrap();
    assert_eq!(pass(&v), pass(&p) + 1, "the pool's result is checked: {v}");
    assert_eq!(v["allocations"]["translated"], 0, "{v}");
}

/// Graphs made by stream capture (`graph`): the memset, two launches and D2D copy between
/// begin and end are captured, not run; the graph is instantiated both ways and launched four times in all.
/// Replay captures them again, instantiates and launches the graph it made: the results read
/// back after the launches (which the graph alone computed) are checked.
#[test]
fn stream_captured_graphs_round_trip() {
    let dir = fake_or_skip!();
    let (_tmp, arch, events) = captured_run(dir, "graph", &[]);
    assert_recorded(
        &events,
        &[
            "hipStreamBeginCapture",
            "hipStreamEndCapture",
            "hipGraphInstantiate",
            "hipGraphInstantiateWithFlags",
            "hipGraphLaunch",
            "hipGraphExecDestroy",
            "hipGraphDestroy",
        ],
    );
    let captured = events
        .iter()
        .filter(|e| e["fields"]["in_capture"] == 1)
        .count();
    assert_eq!(captured, 2, "the two launches inside the capture");
    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"], "PASS", "{v}");
    assert_eq!(v["graphs_launched"], 4, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 4, "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
    assert_eq!(v["unreproducible_calls"], serde_json::json!([]), "{v}");
    // `--timing` lists the graph's launches beside the kernels
    let (code, v) = replay_json(dir, &arch, &["--timing"]);
    assert_eq!(code, 0, "{v}");
    let graphs: u64 = v["timing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["kernel"]
                .as_str()
                .is_some_and(|k| k.starts_with("graph "))
        })
        .map(|t| t["launches"].as_u64().unwrap())
        .sum();
    assert_eq!(graphs, 4, "{v}");
}

/// `--timing` on HIP: every launch timed (events around it on its stream), by kernel name, in
/// `--json` and as the summary's table; none without the flag.
#[test]
fn timing_lists_every_hip_launch_by_gpu_time() {
    let dir = fake_or_skip!();
    let (_tmp, arch, _) = captured_run(dir, "module_launch", &[]);
    let (code, v) = replay_json(dir, &arch, &["--timing"]);
    assert_eq!(code, 0, "{v}");
    let timing = v["timing"].as_array().expect("a timing list");
    let launches: u64 = timing.iter().map(|t| t["launches"].as_u64().unwrap()).sum();
    assert_eq!(Some(launches), v["kernels_launched"].as_u64(), "{v}");
    assert!(launches > 0, "{v}");
    assert!(
        timing.iter().all(|t| {
            let (min, max) = (t["min_ms"].as_f64().unwrap(), t["max_ms"].as_f64().unwrap());
            0.0 < min && min <= max
        }),
        "{v}"
    );
    let (code, out, _) = replay(dir, &arch, &["--timing"]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, "[HRR] GPU time");
    let (_, v) = replay_json(dir, &arch, &[]);
    assert_eq!(v["timing"], serde_json::json!([]), "{v}");
}

#[test]
fn processes_that_only_register_fat_binaries_get_no_pid_dir() {
    let dir = fake_or_skip!();
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(dir, &arch, "vector_add", &["nohip"]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "nohip ok\n");
    assert!(!arch.exists() || pid_dirs(&arch).is_empty());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("Recording"));
}

#[test]
fn without_the_variable_the_library_only_forwards() {
    let dir = fake_or_skip!();
    assert_preload_only_forwards(|| app(dir, "streams", &[]));
}

/// The real ROCm runtime, if installed where the dynamic loader finds it.
fn real_runtime() -> Option<PathBuf> {
    let o = Command::new("ldconfig").arg("-p").output().ok()?;
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("libamdhip64.so.5 "))
        .and_then(|l| l.rsplit(" => ").next())
        .map(PathBuf::from)
        .or_else(|| {
            ["/opt/rocm/lib/libamdhip64.so.5"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        })
}

#[test]
fn capture_stacked_on_the_real_runtime_keeps_its_error_codes() {
    let dir = fake_or_skip!();
    let Some(runtime) = real_runtime() else {
        skipped(
            "the real libamdhip64.so.5 is not installed",
            "apt-get install libamdhip64-5",
        );
        return;
    };
    let (_tmp, arch) = temp_path("run.hrr");
    let plain_cmd = || {
        let mut c = bounded(dir.join("vector_add"));
        c.env_remove("LD_LIBRARY_PATH")
            .env_remove("HIP_HRR_CAPTURE_OUTPUT")
            .env_remove("HRR_CAPTURE_OUTPUT");
        c
    };
    let (plain_code, plain, _) = run(plain_cmd());
    if plain_code == 0 {
        skipped(&format!("{} found a usable GPU", runtime.display()), "");
        return;
    }
    // No GPU: the program prints the runtime's codes and exits 3.
    assert_eq!(plain_code, 3, "{plain}");
    let mut c = bounded(bin_dir().join("hrr-capture"));
    c.arg("-o")
        .arg(&arch)
        .arg("--")
        .arg(dir.join("vector_add"))
        .env_remove("LD_LIBRARY_PATH")
        .env("HRR_CAPTURE_MIN_FREE_MB", "1");
    let (code, out, err) = run(c);
    assert_eq!((code, out.as_str()), (plain_code, plain.as_str()), "{err}");

    let code_of = |prefix: &str| -> i64 {
        let line = plain
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} not in {plain}"));
        line[prefix.len()..]
            .trim_start_matches(':')
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let events = events_json(&arch);
    let result = |name: &str| -> i64 {
        events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} not recorded: {events:?}"))["fields"]["result"]
            .as_i64()
            .unwrap()
    };
    for call in [
        "hipGetDeviceCount",
        "hipMalloc",
        "hipMemcpy",
        "hipDeviceSynchronize",
    ] {
        let printed = code_of(call);
        assert_ne!(printed, 0, "{call}");
        assert_eq!(result(call), printed, "{call}");
    }
    let manifest = manifest_json(&pid_dirs(&arch)[0]);
    assert_eq!(manifest["api"], "hip");
    assert_eq!(manifest["complete"], true);
    let recorded_runtime = manifest["metadata"]["runtime"].as_str().unwrap();
    assert_eq!(
        Path::new(recorded_runtime),
        std::fs::canonicalize(&runtime).unwrap()
    );
    // replay of that archive reissues nothing that failed, and the failures are no checks
    let (code, v) = replay_json(dir, &arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["kernels_launched"], 0, "{v}");
}

#[test]
fn extracted_hip_launches_replay_alone() {
    // `--extract` on HIP captures: a `<<<>>>` launch reading a `__constant__` variable written
    // by hipMemcpyToSymbol, and a module launch (crate::replay::extract).
    let dir = fake_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    for (app, kernel) in [("vector_add", "poly"), ("module_launch", "grid_stride")] {
        let arch = tmp.path().join(format!("{app}.hrr"));
        captured(dir, &arch, app, &[]);
        let small = tmp.path().join(format!("{app}-{kernel}.hrr"));
        let o = small.to_str().unwrap();
        let (code, out, err) = replay(dir, &arch, &["--extract", kernel, "-o", o]);
        assert_eq!(code, 0, "{out}{err}");
        assert_contains(&out, "[HRR] Extracted launch #");
        let (code, v) = replay_json(dir, &small, &[]);
        assert_eq!(code, 0, "{app} {kernel}: {v}");
        assert_eq!(v["verdict"], "PASS", "{v}");
        assert_eq!(v["kernels_launched"], 1, "{v}");
        assert!(v["d2h_checks"]["pass"].as_u64().unwrap() > 0, "{v}");
    }
}
