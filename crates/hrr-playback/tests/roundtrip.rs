//! Capture → inspect → replay round trips on the CPU, against the fake `libcuda.so.1` of
//! `tests/fake-cuda` and real C programs that reach the driver the way cudart does.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first; the README's test command does) and a C compiler.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

/// The fake driver and its apps, built once per test run.
fn fake() -> &'static FakeCuda {
    FakeCuda::get("")
}

fn capture(archive: &Path, name: &str, args: &[&str]) -> Output {
    fake().capture(archive, name, args)
}

/// `driver_app args` captured (successfully) into `run.hrr` of a new temporary folder: the
/// folder (kept alive), the archive, its process folder.
fn captured(args: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (tmp, arch) = temp_path("run.hrr");
    let dir = fake().captured(&arch, "driver_app", args);
    (tmp, arch, dir)
}

fn replay(target: &Path, extra: &[&str]) -> (i32, String, String) {
    fake().replay(target, extra)
}

/// Replay of `target`, which must fail its checks at `event` (see `assert_mismatch_at`): its
/// output.
fn replay_mismatching_at(target: &Path, event: &serde_json::Value) -> String {
    let (code, out, _) = replay(target, &[]);
    assert_mismatch_at(code, &out, event);
    out
}

#[test]
fn capture_leaves_the_app_output_unchanged_and_replay_passes() {
    let (_tmp, arch) = temp_path("run.hrr");
    let unix_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    let started = unix_ns();
    let o = fake().capture_as_plain(&arch, "driver_app", &[]);
    let ended = unix_ns();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.matches("[HRR capture] Recording pid").count(),
        1,
        "{stderr}"
    );

    let events = events_json(&arch);
    assert_recorded(
        &events,
        &[
            "cuInit",
            "cuLibraryLoadData",
            "cuLibraryGetKernel",
            "cuKernelGetFunction",
            "cuModuleLoadData",
            "cuModuleGetFunction",
            "cuMemAlloc_v2",
            "cuMemcpyHtoD_v2",
            "cuLaunchKernel",
            "cuLaunchKernelEx",
            "cuMemcpyDtoHAsync_v2",
            "cuStreamSynchronize",
            "cuMemAddressReserve",
            "cuMemCreate",
            "cuMemMap",
            "cuMemSetAccess",
            "cuMemUnmap",
            "cuMemRelease",
            "cuMemcpyDtoH_v2",
            "cuMemFree_v2",
        ],
    );
    // time stamps (the system clock, read between counter ticks where the kernel uses them:
    // capture's stamp.rs) fall within the run and never go back in recorded order
    let stamps: Vec<u64> = events
        .iter()
        .map(|e| e["timestamp_ns"].as_u64().unwrap())
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    assert!(
        stamps.iter().all(|&t| (started..=ended).contains(&t)),
        "{started} {stamps:?} {ended}"
    );
    // launches carry the kernel name and the packed arguments sized by the param info
    let axpy = events
        .iter()
        .find(|e| e["name"] == "cuLaunchKernel" && e["fields"]["kernel"] == "axpy")
        .unwrap();
    assert_eq!(
        axpy["fields"]["arg_offsets"],
        serde_json::json!([0, 8, 16, 24])
    );
    assert_eq!(axpy["fields"]["args"].as_str().unwrap().len(), 28 * 2);
    // launch attributes: cuLaunchKernelEx's one (priority, 72 bytes), none for the others
    // (a thread's launch buffers are reused: no attribute left over from an earlier launch)
    for e in events.iter().filter(|e| e["name"] == "cuLaunchKernel") {
        assert_eq!(e["fields"]["attrs"], "", "{e}");
    }
    let ex = events
        .iter()
        .find(|e| e["name"] == "cuLaunchKernelEx")
        .unwrap();
    let attrs = ex["fields"]["attrs"].as_str().unwrap();
    assert!(
        attrs.len() == 72 * 2 && attrs.starts_with("08000000"),
        "{ex}"
    );
    // every blob and code object an event names exists, named by its content hash
    let dir = &pid_dirs(&arch)[0];
    for e in &events {
        for key in ["h2d_blob", "d2h_blob"] {
            if let Some(id) = e["fields"][key].as_str() {
                let bytes = std::fs::read(blob_path(dir, id)).unwrap();
                assert_eq!(&blake3::hash(&bytes).to_hex()[..32], id);
            }
        }
    }
    let manifest = manifest_json(dir);
    assert_eq!(manifest["complete"], true);
    assert_eq!(manifest["metadata"]["devices"][0]["name"], "HRR Fake GPU");
    assert_eq!(manifest["metadata"]["driver_version"], 13000);

    let (code, out, err) = replay(&arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "[HRR] Kernels launched: 6");
    assert_checks_exact(&out, 6);
    assert!(
        out.trim_end().lines().last().is_some_and(|l| l
            .starts_with("[HRR] PASS (1 call not replayed, first: #")
            && l.ends_with(" cuLaunchHostFunc: host callbacks are not in the archive)")),
        "{out}"
    );
}

#[test]
fn a_corrupted_d2h_blob_fails_replay_and_names_the_event() {
    let (_tmp, _, dir) = captured(&[]);
    let events = events_json(&dir);
    let ev = first_named(&events, "cuMemcpyDtoH_v2");
    flip_blob_byte(&dir, ev["fields"]["d2h_blob"].as_str().unwrap(), 5, 0xff);
    assert_contains(&replay_mismatching_at(&dir, ev), "first at offset 5");
}

/// `driver_app` captured with every D2H result recorded as digests
/// (`HRR_CAPTURE_DIGEST_MIN=1`, async digests by default): the folder (kept alive), its
/// process folder, the blocking copies and the async results (`hrrMemcpyResult`, digested by
/// the kernel capture enqueues behind their copies, or whole where the host took over) with
/// their digests; any other
/// stored result must be whole.
/// With `env` besides (the fake's kernel made wrong); capture's stderr last.
fn captured_as_digests(
    env: &[(&str, &str)],
) -> (
    tempfile::TempDir,
    PathBuf,
    Vec<(serde_json::Value, hrr_archive::digest::ResultDigest)>,
    String,
) {
    let (tmp, arch) = temp_path("run.hrr");
    // (async digests are on by default: not asked for here, so that this checks the default)
    let digests = [("HRR_CAPTURE_DIGEST_MIN", "1")];
    let env = [&digests[..], env].concat();
    let o = fake().capture_env(&arch, "driver_app", &[], &env);
    assert!(o.status.success(), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let dir = pid_dirs(&arch).remove(0);
    let results = events_json(&dir)
        .into_iter()
        .filter_map(|e| {
            let id = e["fields"]["d2h_blob"].as_str()?.to_string();
            let stored = std::fs::read(blob_path(&dir, &id)).unwrap();
            let n = e["fields"]["bytes"].as_u64().unwrap() as usize;
            let d = hrr_archive::digest::ResultDigest::of_blob(&stored, n);
            let digested_here = e["name"] == "hrrMemcpyResult" && d.is_some();
            if e["name"] != "cuMemcpyDtoH_v2" && !digested_here {
                assert!(d.is_none() && stored.len() == n, "{e}");
                return None;
            }
            Some((
                e,
                d.unwrap_or_else(|| panic!("result {id} of {n} bytes not a digest")),
            ))
        })
        .collect();
    (tmp, dir, results, stderr)
}

/// What capture says when the GPU's digests disagree with the host's.
const DIGESTS_DISAGREE: &str = "GPU digests of D2H results disagree with the host's";

#[test]
fn results_recorded_as_digests_replay_with_the_same_checks() {
    // The blocking copies digested by the (fake) GPU's kernel.
    let (_tmp, dir, results, stderr) = captured_as_digests(&[]);
    assert!(!stderr.contains("GPU digests"), "{stderr}");
    assert!(results.len() >= 2, "{}", results.len());
    // the async results among them, digested behind their copies
    assert!(
        results.iter().any(|(e, _)| e["name"] == "hrrMemcpyResult"),
        "no async result recorded as digests"
    );
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_checks_exact(&out, 6);
    let by_digest = format!(", {} by digest\n", results.len());
    assert!(out.contains(&by_digest), "{by_digest:?} not in {out}");
    let (_, v) = fake().replay_json(&dir, &[]);
    assert_eq!(v["d2h_checks"]["by_digest"], results.len(), "{v}");
}

/// cudaMemcpyDefault's path, a blocking `cuMemcpy` whose destination is host memory: its
/// results recorded as digests too (by capture's kernel, as `cuMemcpyDtoH`'s), and replay
/// checks each one.
#[test]
fn blocking_unified_copies_to_the_host_are_recorded_as_digests() {
    let (_tmp, arch) = temp_path("run.hrr");
    let env = [("HRR_CAPTURE_DIGEST_MIN", "1")];
    let o = fake().capture_env(&arch, "copy_app", &["d2h", "3", "1", "unified"], &env);
    assert!(o.status.success(), "{o:?}");
    let dir = pid_dirs(&arch).remove(0);
    let copies = events_json(&dir)
        .into_iter()
        .filter(|e| e["name"] == "cuMemcpy")
        .collect::<Vec<_>>();
    assert_eq!(copies.len(), 3);
    for c in &copies {
        let stored = std::fs::read(blob_path(&dir, c["fields"]["d2h_blob"].as_str().unwrap()));
        assert!(
            hrr_archive::digest::ResultDigest::of_blob(&stored.unwrap(), 1 << 20).is_some(),
            "{c}"
        );
    }
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 3, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], 3, "{v}");
}

/// The digest kernels a large allocation asks for are loaded at the program's next event
/// record (`async_copies.rs`: after its allocations, before the region the event starts); a
/// program that records none, as this copy loop, has them loaded at its first large result,
/// once that copy returned: in the driver's trace, capture's module load comes after the copy
/// (not at the allocation), and the copy's result is still a digest.
#[test]
fn digest_kernels_of_a_program_recording_no_event_load_at_its_first_result() {
    let (_tmp, arch) = temp_path("run.hrr");
    let env = [("HRR_CAPTURE_DIGEST_MIN", "1"), ("FAKE_CUDA_TRACE", "1")];
    let o = fake().capture_env(&arch, "copy_app", &["d2h", "1", "1", "unified"], &env);
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let at = |call: &str| {
        err.find(&format!("[fake-cuda] {call} -> 0"))
            .unwrap_or_else(|| panic!("{call} not traced: {err}"))
    };
    let (alloc, load, copy) = (at("cuMemAlloc_v2"), at("cuModuleLoadData"), at("cuMemcpy"));
    assert!(alloc < copy && copy < load, "{err}");
    let (code, v) = fake().replay_json(&pid_dirs(&arch).remove(0), &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], 1, "{v}");
}

/// `HRR_CAPTURE_DIGEST_PTX` (a diagnostic) loads the digest kernels from a file: one without
/// them leaves the host to take the digests, with a notice; a missing file says so and the
/// built-in kernels load. Either way the result is recorded as a digest and replay checks it.
#[test]
fn digest_kernels_from_a_ptx_file_are_loaded_or_the_host_takes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let no_kernels = tmp.path().join("empty.ptx");
    std::fs::write(&no_kernels, "// no kernels here\n").unwrap();
    let missing = tmp.path().join("missing.ptx");
    const NOT_LOADED: &str = "the kernel did not load";
    for (file, loaded) in [(&no_kernels, false), (&missing, true)] {
        let (_tmp, arch) = temp_path("run.hrr");
        let ptx = file.to_str().unwrap();
        let env = [
            ("HRR_CAPTURE_DIGEST_MIN", "1"),
            ("HRR_CAPTURE_DIGEST_PTX", ptx),
        ];
        let o = fake().capture_env(&arch, "copy_app", &["d2h", "1", "1", "unified"], &env);
        assert!(o.status.success(), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.contains(NOT_LOADED), !loaded, "{err}");
        assert_eq!(err.contains("missing.ptx"), loaded, "{err}");
        let (code, v) = fake().replay_json(&pid_dirs(&arch).remove(0), &[]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
        assert_eq!(v["d2h_checks"]["by_digest"], 1, "{v}");
    }
}

#[test]
fn gpu_digests_that_disagree_with_the_host_are_caught_and_the_host_takes_over() {
    let wrong = [("FAKE_CUDA_DIGEST_WRONG", "1")];
    let (_tmp, dir, _, stderr) = captured_as_digests(&wrong);
    assert_eq!(stderr.matches(DIGESTS_DISAGREE).count(), 1, "{stderr}");
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_checks_exact(&out, 6);
}

/// The first result of event `name` recorded as digests (in a capture with every result
/// digested), its stored digest of the first chunk altered (what a different result would
/// give): replay is a MISMATCH at that event naming the chunk.
fn altered_digest_is_a_mismatch_naming_the_chunk(name: &str) {
    let (_tmp, dir, results, _) = captured_as_digests(&[]);
    let (ev, d) = results
        .iter()
        .find(|(e, _)| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} result recorded as digests"));
    flip_blob_byte(&dir, ev["fields"]["d2h_blob"].as_str().unwrap(), 24, 0x01);
    let out = replay_mismatching_at(&dir, ev);
    let chunks = d.chunks.len();
    assert_contains(
        &out,
        &format!("1 of {chunks} chunks of 64 KiB differ from the recorded digests, the first at offset 0"),
    );
}

#[test]
fn a_result_differing_from_its_recorded_digest_is_a_mismatch_naming_the_chunk() {
    altered_digest_is_a_mismatch_naming_the_chunk("cuMemcpyDtoH_v2");
}

/// With `HRR_CAPTURE_ASYNC_DIGESTS=0`, no kernel is enqueued behind an async copy: its result
/// is stored whole, whatever the digest size, and replay checks its bytes.
#[test]
fn async_results_stay_whole_when_async_digests_are_off() {
    let (_tmp, arch) = temp_path("run.hrr");
    let env = [
        ("HRR_CAPTURE_DIGEST_MIN", "1"),
        ("HRR_CAPTURE_ASYNC_DIGESTS", "0"),
    ];
    let o = fake().capture_env(&arch, "driver_app", &[], &env);
    assert!(o.status.success(), "{o:?}");
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let results = all_named(&events, "hrrMemcpyResult");
    assert!(!results.is_empty(), "no async result");
    for e in results {
        let stored = std::fs::read(blob_path(&dir, e["fields"]["d2h_blob"].as_str().unwrap()));
        assert_eq!(
            stored.unwrap().len() as u64,
            e["fields"]["bytes"].as_u64().unwrap(),
            "{e}"
        );
    }
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// An async result recorded as the digests capture's kernel took behind its copy: a digest
/// altered in the archive is a MISMATCH at that result's event, as a blocking one's is.
#[test]
fn an_async_result_differing_from_its_digest_behind_the_copy_is_a_mismatch() {
    altered_digest_is_a_mismatch_naming_the_chunk("hrrMemcpyResult");
}

#[test]
fn replay_really_runs_the_work_zeroed_inputs_fail() {
    let (_tmp, _, dir) = captured(&[]);
    for e in events_json(&dir) {
        if let Some(id) = e["fields"]["h2d_blob"].as_str() {
            zero_blob(&dir, id);
        }
    }
    let (code, v) = fake().replay_json(&dir, &[]);
    // The zeroed pointer table makes `gather` read through null pointers: the GPU faults.
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["result"], "FAIL");
    assert_eq!(v["verdict"], "FAULT");
    assert!(v["d2h_checks"]["fail"].as_u64().unwrap() >= 3, "{v}");
}

#[test]
fn a_killed_capture_is_recovered_by_repair_and_replays() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "driver_app", &["crash"]);
    assert!(!o.status.success());
    let dir = pid_dirs(&arch).remove(0);
    let (code, out, _) = playback_on(&arch, &["--info"]);
    assert_eq!(code, 0);
    assert_contains(&out, "NO");
    let (code, out, err) = playback_on(&arch, &["--repair"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "Repaired archive");
    let m = manifest_json(&dir);
    assert_eq!(m["complete"], true);
    assert!(m["event_count"].as_u64().unwrap() > 10);
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "D2H checks      : 1 pass");
}

/// A capture whose process ended before the blob threads wrote an object's file leaves the
/// object in `blobs.journal` only: replay reads blobs and code objects from there, with the
/// same checks, without a repair. Made here by moving every object file of a finished
/// capture into the journal.
#[test]
fn replay_reads_objects_only_the_blob_journal_holds() {
    let (_tmp, _arch, dir) = captured(&[]);
    let (_, baseline, _) = replay(&dir, &[]);
    journal_every_object(&dir);
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let checks = |s: &str| {
        s.lines()
            .find(|l| l.contains("D2H checks"))
            .map(str::to_owned)
    };
    assert_eq!(checks(&out), checks(&baseline));
    assert_contains(&out, "[HRR] PASS");
}

/// `--extract` of a capture not repaired yet, whose blobs and code objects only the journal
/// holds: the extracted archive holds them as files and replays PASS.
#[test]
fn a_launch_extracts_from_objects_only_the_blob_journal_holds() {
    let (tmp, _arch, dir) = captured(&[]);
    journal_every_object(&dir);
    let out = tmp.path().join("gather.hrr");
    let (code, o, e) = replay(&dir, &["--extract", "gather", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{o}{e}");
    assert!(
        !walkdir_files(&pid_dirs(&out)[0].join("code_objects")).is_empty(),
        "{o}"
    );
    let (code, o, e) = replay(&out, &[]);
    assert_eq!(code, 0, "{o}{e}");
    assert_contains(&o, "[HRR] PASS");
}

/// Move every blob and code object of the process capture `dir` into its blob journal, as a
/// capture killed right after a synchronisation leaves them.
fn journal_every_object(dir: &Path) {
    use hrr_archive::journal::Journal;
    use hrr_archive::{CodeKind, ObjectId};
    let mut files = Vec::new();
    for sub in ["blobs", "code_objects"] {
        for e in walkdir_files(&dir.join(sub)) {
            let name = e.file_name().unwrap().to_string_lossy().into_owned();
            let (stem, ext) = name.split_once('.').unwrap();
            let code = (sub == "code_objects").then(|| CodeKind::from_extension(ext).unwrap());
            files.push((
                ObjectId::from_hex(stem).unwrap(),
                code,
                std::fs::read(&e).unwrap(),
                e,
            ));
        }
    }
    assert!(files.iter().any(|f| f.1.is_some()) && files.iter().any(|f| f.1.is_none()));
    let entries: Vec<_> = files
        .iter()
        .map(|(id, k, b, _)| (*id, *k, b.as_slice()))
        .collect();
    Journal::new(dir).append(&entries).unwrap();
    files
        .iter()
        .for_each(|f| std::fs::remove_file(&f.3).unwrap());
}

/// The regular files below `dir` (none when it does not exist).
fn walkdir_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn processes_that_never_touch_the_driver_get_no_pid_dir() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "driver_app", &["nocuda"]);
    assert!(o.status.success());
    assert!(!arch.exists() || pid_dirs(&arch).is_empty());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("Recording"));
}

#[test]
fn fork_children_get_their_own_capture_and_replay_asks_which() {
    let (_tmp, arch, _) = captured(&["fork"]);
    let dirs = pid_dirs(&arch);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let root = manifest_json(&arch);
    assert_eq!(root["processes"].as_array().unwrap().len(), 2);
    let (code, _, err) = replay(&arch, &[]);
    assert_eq!(code, 2, "{err}");
    for d in &dirs {
        let (code, out, err) = replay(d, &[]);
        assert_eq!(code, 0, "{}: {out}{err}", d.display());
    }
}

#[test]
fn direct_symbol_calls_are_recorded_too() {
    let (_tmp, arch) = temp_path("run.hrr");
    fake().capture_as_plain(&arch, "direct_app", &[]);
    let names = names(&events_json(&arch));
    assert!(
        names.iter().any(|n| n == "cuLaunchKernel_ptsz"),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .filter(|n| n.starts_with("cuLaunchKernel"))
            .count()
            >= 5
    );
    let (code, out, err) = replay(&arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_nearly_full_disk_stops_capture_marks_it_incomplete_and_the_app_runs_on() {
    let (_tmp, arch) = temp_path("run.hrr");
    let (_, plain, _) = run(fake().app("driver_app", &[]));
    let o = fake().capture_env(
        &arch,
        "driver_app",
        &[],
        &[("HRR_CAPTURE_MIN_FREE_MB", "999999999")],
    );
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), plain);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Disk nearly full"));
    let dir = pid_dirs(&arch).remove(0);
    assert_eq!(manifest_json(&dir)["complete"], false);
    let (_, out, _) = playback_on(&dir, &["--repair"]);
    assert_contains(&out, "Still incomplete");
    let m = manifest_json(&dir);
    assert_eq!(
        m["complete"], false,
        "repair must not bless a writer-marked incomplete capture"
    );
}

#[test]
fn without_the_variable_the_library_only_forwards() {
    assert_preload_only_forwards(|| fake().app("driver_app", &[]));
}

#[test]
fn concurrent_threads_are_recorded_and_replay() {
    let (_tmp, arch, _) = captured(&["threads"]);
    let (code, out, _) = playback_on(&arch, &["--info", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // A single-process root: the root table, then the process under `process`.
    let p = &v["process"];
    assert!(
        p["threads"].as_array().map_or(0, |t| t.len()) >= 2
            || p["thread_count"].as_u64().unwrap_or(0) >= 2,
        "{v}"
    );
    let (code, out, err) = replay(&arch, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn multi_thread_replays_each_captured_thread_on_a_thread_of_its_own() {
    let (_tmp, _, dir) = captured(&["threads"]);
    let fake = fake();
    let (code, single) = fake.replay_json(&dir, &[]);
    assert_eq!(code, 0, "{single}");
    let (code, multi) = fake.replay_json(&dir, &["--multi-thread"]);
    assert_eq!(code, 0, "{multi}");
    assert_eq!(multi["verdict"], "PASS", "{multi}");
    assert_eq!(multi["mode"], "multi-threaded", "{multi}");
    assert_eq!(single["mode"], "single-threaded", "{single}");
    // one replay thread per recording thread: the program's two, and capture's own that
    // records async D2H results once their copies completed
    assert_eq!(multi["threads_used"], multi["threads_captured"], "{multi}");
    let threads = multi["threads_used"].as_u64().unwrap();
    assert!(threads >= 2, "{multi}");
    let pass = multi["d2h_checks"]["pass"].as_u64().unwrap();
    assert!(pass > 0, "{multi}");
    assert_eq!(multi["d2h_checks"], single["d2h_checks"], "{multi}");
    assert_eq!(multi["kernels_launched"], single["kernels_launched"]);
    // every pass of a loop on fresh threads
    let (code, looped) = fake.replay_json(&dir, &["--multi-thread", "--loop", "2"]);
    assert_eq!(code, 0, "{looped}");
    assert_eq!(looped["d2h_checks"]["pass"], 2 * pass, "{looped}");
    // the human summary says how it ran
    let (_, out, _) = replay(&dir, &["--multi-thread"]);
    assert_contains(&out, "Mode            : multi-threaded");
    assert_contains(&out, &format!("Threads used    : {threads}"));

    // it really runs the work: a wrong recorded result is found on whichever thread has it
    let events = events_json(&dir);
    let ev = first_named(&events, "cuMemcpyDtoH_v2");
    let blob = ev["fields"]["d2h_blob"].as_str().unwrap();
    flip_blob_byte(&dir, blob, 5, 0xff);
    // (both threads compute the same results: their D2H copies share one blob)
    let sharing = events
        .iter()
        .filter(|e| e["fields"]["d2h_blob"] == blob)
        .count();
    let (code, v) = fake.replay_json(&dir, &["--multi-thread"]);
    assert_eq!(v["verdict"], "MISMATCH", "{v}");
    assert_ne!(code, 0);
    assert_eq!(v["d2h_checks"]["fail"], sharing as u64, "{v}");
}

#[test]
fn replay_flags_filter_loop_sync_and_no_placement() {
    let (_tmp, arch, _) = captured(&[]);
    let json = |extra: &[&str]| fake().replay_json(&arch, extra);
    let (code, v) = json(&["--loop", "2"]);
    assert_eq!((code, v["kernels_launched"].as_u64()), (0, Some(12)), "{v}");
    assert_eq!(v["d2h_checks"]["exact"], 12);
    let (code, v) = json(&["--sync-after-launch", "--sync-watchdog-ms", "5000"]);
    assert_eq!(code, 0, "{v}");
    let (_, v) = json(&["--kernel-filter", "axpy"]);
    assert_eq!(v["kernels_launched"], 2, "{v}");
    assert_eq!(v["kernels_filtered"], 4, "{v}");
    let (code, v) = json(&["--no-placement"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["allocations"]["placed"], 0, "{v}");
    assert!(v["allocations"]["translated"].as_u64().unwrap() >= 5, "{v}");
    let (_, v) = json(&[]);
    assert!(v["allocations"]["placed"].as_u64().unwrap() >= 5, "{v}");
}

#[test]
fn an_aborting_program_leaves_what_it_recorded_for_repair() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "driver_app", &["abort"]);
    // The launcher runs the program in its own process: it dies of the same signal.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(6),
        "SIGABRT's death is forwarded"
    );
    let dir = pid_dirs(&arch).remove(0);
    // The SIGABRT handler handed the buffered events to the kernel and wrote the manifest.
    let m = manifest_json(&dir);
    assert_eq!(m["complete"], false);
    assert!(m["event_count"].as_u64().unwrap() > 10, "{m}");
    let (code, out, err) = playback_on(&dir, &["--repair"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A program that crashes by itself (`segv`: a store through a null pointer after recording):
/// it dies of SIGSEGV as it would have, capture says so on stderr with the faulting address and
/// that its own code is not on the stack, and what was recorded is kept for repair.
#[test]
fn a_crashing_program_is_said_to_have_crashed_outside_capture() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = capture(&arch, "driver_app", &["segv"]);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(11),
        "SIGSEGV's death is forwarded"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_contains(
        &err,
        "received SIGSEGV at address 0x0; capture's code is not on the stack",
    );
    // the frames named by the files mapped there: the program's first
    assert_contains(&err, "hrr-capture:   #0 driver_app+0x");
    let dir = pid_dirs(&arch).remove(0);
    assert!(manifest_json(&dir)["event_count"].as_u64().unwrap() > 10);
}

/// The `graph` mode: a memset, an H2D copy and two launches captured from a stream into a graph,
/// instantiated with flags and with params, launched 3 times; then an explicitly built (empty)
/// graph instantiated and launched once (explicit construction: `graphs.rs`).
#[test]
fn stream_captured_graphs_are_rebuilt_and_launched_by_replay() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = fake().capture_as_plain(&arch, "driver_app", &["graph"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_contains(&out, "graph_axpy sum=");

    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let count = |n: &str| events.iter().filter(|e| e["name"] == n).count();
    assert_eq!(count("cuStreamBeginCapture_v2"), 1);
    assert_eq!(count("cuStreamEndCapture"), 1);
    assert_eq!(count("cuGraphInstantiateWithFlags"), 1);
    assert_eq!(count("cuGraphInstantiateWithParams"), 1);
    assert_eq!(count("cuGraphInstantiate_v2"), 1);
    assert_eq!(count("cuGraphLaunch"), 4);
    let launches: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "cuLaunchKernel")
        .collect();
    assert_eq!(launches.len(), 2);
    assert!(launches.iter().all(|e| e["fields"]["in_capture"] == 1));

    // the explicitly built (empty) graph is recorded too (cuGraphCreate): nothing unreplayable
    assert_eq!(count("cuGraphCreate"), 1);
    let manifest = manifest_json(&dir);
    let unrepl = &manifest["unreplayable_apis"];
    assert!(
        unrepl.is_null() || unrepl.as_object().is_some_and(|m| m.is_empty()),
        "{unrepl:?}"
    );

    for extra in [&[][..], &["--no-placement"], &["--sync-after-launch"]] {
        let (code, out, err) = replay(&dir, extra);
        assert_eq!(code, 0, "{extra:?}: {out}{err}");
        assert_contains(&out, "[HRR] Graphs launched : 4");
        assert_checks_exact(&out, 2);
        assert!(
            out.contains("[HRR] PASS") && !out.contains("not replayed"),
            "{out}"
        );
    }
    let (_, v) = fake().replay_json(&dir, &["--loop", "2"]);
    assert_eq!(v["graphs_launched"], 8, "{v}");
    assert_eq!(v["result"], "PASS", "{v}");

    // a D2H result produced by the graph launches, corrupted: replay fails and names it
    let last = events
        .iter()
        .rev()
        .find(|e| e["name"] == "cuMemcpyDtoH_v2")
        .unwrap();
    let first_graph_launch = first_named(&events, "cuGraphLaunch");
    assert!(last["seq"].as_u64() > first_graph_launch["seq"].as_u64());
    flip_blob_byte(
        &dir,
        last["fields"]["d2h_blob"].as_str().unwrap(),
        4100,
        0x01,
    );
    assert_contains(
        &replay_mismatching_at(&dir, last),
        "[HRR] Graphs launched : 4",
    );
}

#[test]
fn a_context_limit_is_recorded_and_set_again_by_replay() {
    let (_tmp, _, dir) = captured(&[]);
    let set: Vec<_> = events_json(&dir)
        .into_iter()
        .filter(|e| e["name"] == "cuCtxSetLimit")
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0]["fields"]["limit"], 2);
    assert_eq!(set[0]["fields"]["value"], 64u64 << 20);
    let (code, out, err) = fake().replay_env(&dir, &[], &[("FAKE_CUDA_TRACE", "1")]);
    assert_eq!(code, 0, "{out}{err}");
    // replay sets the limit again
    assert_contains(&err, "cuCtxSetLimit");
}

#[test]
fn timing_lists_every_kernel_and_graph_by_gpu_time() {
    let tmp = tempfile::tempdir().unwrap();
    let timed = |mode: &[&str], tag: &str| {
        let arch = tmp.path().join(format!("{tag}.hrr"));
        assert!(capture(&arch, "driver_app", mode).status.success());
        let dir = pid_dirs(&arch).remove(0);
        let (code, out, err) = replay(&dir, &["--timing", "--json"]);
        assert_eq!(code, 0, "{out}{err}");
        let v: hrr_cli::json::ReplayJson = serde_json::from_str(out.trim()).unwrap();
        let sum = |graph: bool| -> u64 {
            v.timing
                .iter()
                .filter(|t| t.kernel.starts_with("graph 0x") == graph)
                .map(|t| t.launches)
                .sum()
        };
        assert!(
            v.timing.iter().all(|t| t.min_ms <= t.max_ms),
            "{:?}",
            v.timing
        );
        (sum(false), sum(true), v, dir)
    };
    // Every plain launch timed, under its kernel's name.
    let (kernels, _, v, dir) = timed(&[], "plain");
    assert!(kernels > 0);
    assert_eq!(kernels, v.kernels_launched, "{:?}", v.timing);
    assert!(
        v.timing.iter().any(|t| t.kernel == "axpy"),
        "{:?}",
        v.timing
    );
    // The human summary carries the table; without --timing there is none.
    let (_, out, _) = replay(&dir, &["--timing"]);
    assert!(
        out.contains("[HRR] GPU time") && out.contains("Launches"),
        "{out}"
    );
    let (_, out, _) = replay(&dir, &[]);
    assert!(!out.contains("GPU time"), "{out}");
    // Every graph launch timed, by graph.
    let (_, graphs, v, _) = timed(&["graph"], "graph");
    assert!(graphs > 0);
    assert_eq!(graphs, v.graphs_launched, "{:?}", v.timing);
}

/// The `chain` mode: 4,200 launches in a row whose arguments and order both matter, then one
/// D2H result. Replay prepares them as graphs (4,096 nodes at most each) before the clock and
/// launches those; the result is only right if every launch ran with its own arguments, in
/// order.
#[test]
fn runs_of_launches_replay_as_prepared_graphs_and_fall_back_when_arguments_move() {
    let (_tmp, arch, _) = captured(&["chain", "4200"]);
    let json = |extra: &[&str]| fake().replay_json(&arch, extra);
    let (code, v) = json(&[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["kernels_launched"], 4200, "{v}");
    assert_eq!(v["d2h_checks"]["exact"], 1, "{v}");
    let b = &v["batching"];
    assert_eq!(
        (&b["runs"], &b["launches"], &b["graphs"], &b["fell_back"]),
        (&1.into(), &4200.into(), &2.into(), &0.into()),
        "{v}"
    );

    // every pass launches the prepared graphs again
    let (code, v) = json(&["--loop", "2"]);
    assert_eq!((code, &v["kernels_launched"]), (0, &8400.into()), "{v}");
    assert_eq!(v["d2h_checks"]["exact"], 2, "{v}");

    // allocations elsewhere (another address space base, no placement): the graphs hold stale
    // pointers, so the run goes launch by launch
    let env = [("FAKE_CUDA_VA_BASE", "0x7f3000000000")];
    let (code, v) = fake().replay_json_env(&arch, &["--no-placement"], &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["exact"], 1, "{v}");
    assert_eq!(v["batching"]["fell_back"], 1, "{v}");
    let why = v["batching"]["first_fallback"].as_str().unwrap_or_default();
    assert!(why.contains("translated"), "{v}");

    for off in [&["--no-batch"][..], &["--timing"]] {
        let (code, v) = json(off);
        assert_eq!(code, 0, "{off:?}: {v}");
        assert!(v["batching"].is_null(), "{off:?}: {v}");
        assert_eq!(v["d2h_checks"]["exact"], 1, "{off:?}: {v}");
    }
    let (code, out, _) = replay(&arch, &[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(
        &out,
        "[HRR] Launch batching : 4200 launches in 1 run issued as 2 graphs",
    );
}

#[test]
fn the_capture_profile_counts_every_call_and_is_off_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let profiled = |name: &str, env: &[(&str, &str)]| {
        let o = succeeded(fake().capture_env(
            &tmp.path().join(name),
            "driver_app",
            &["launches", "300"],
            env,
        ));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = profiled("on.hrr", &[("HRR_CAPTURE_PROFILE", "1")]);
    assert_eq!(
        err.matches("hrr-capture: profile of process").count(),
        1,
        "{err}"
    );
    let launch = err
        .lines()
        .find(|l| l.trim_start().starts_with("cuLaunchKernel "))
        .unwrap_or_else(|| panic!("no launch row: {err}"));
    let calls: Vec<&str> = launch.split_whitespace().collect();
    assert_eq!(calls[1], "300", "{launch}");
    let added: f64 = calls[2].parse().unwrap();
    let total: f64 = calls[4].parse().unwrap();
    assert!(added > 0.0 && added <= total, "{launch}");
    // the slow calls (16 us or more added) are among them, with at most their added time
    assert_eq!(calls.len(), 10, "{launch}");
    let (slow, slow_ms): (u64, f64) = (calls[8].parse().unwrap(), calls[9].parse().unwrap());
    assert!(slow <= 300 && slow_ms <= added + 0.01, "{launch}");
    assert!(
        err.lines()
            .any(|l| l.contains("all ") && l.contains(" calls")),
        "{err}"
    );
    // its one kernel's argument layout asked of the driver once, not at every launch
    assert_contains(
        &err,
        "capture's own: argument layouts asked of the driver: 1 (",
    );

    for off in [&[][..], &[("HRR_CAPTURE_PROFILE", "0")][..]] {
        let err = profiled(&format!("off{}.hrr", off.len()), off);
        assert!(!err.contains("profile"), "{err}");
    }
}
