//! Asynchronous D2H copies and host blobs written off the calling thread, on the CPU against
//! the fake driver (`tests/fake-cuda`, its `copy_app` and `driver_app`): an async copy's bytes
//! come in an `hrrMemcpyResult` event recorded when the copy completed, before the program's
//! synchronisation; replay compares them there; a `kill -9` right after a synchronisation
//! loses no blob an event names.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-async")
}

/// `hrr-capture -o archive -- app args`, with the fake driver asynchronous at `gbps` (0: off).
fn capture(archive: &Path, app: &str, args: &[&str], gbps: u32) -> Output {
    let gbps = gbps.to_string();
    fake().capture_env(archive, app, args, &[("FAKE_CUDA_ASYNC_GBPS", &gbps)])
}

/// `copy_app ARGS` captured into `archive` with the fake's copies taking time at `gbps`
/// (0: synchronous), which must succeed.
fn copy_app(archive: &Path, args: &[&str], gbps: u32) -> Output {
    succeeded(capture(archive, "copy_app", args, gbps))
}

/// `copy_app args` captured (see `copy_app`) into a new temporary `run.hrr`: the temporary
/// folder (kept while it lives), the archive and its events.
fn copy_app_events(
    args: &[&str],
    gbps: u32,
) -> (tempfile::TempDir, PathBuf, Vec<serde_json::Value>) {
    let (tmp, arch) = temp_path("run.hrr");
    copy_app(&arch, args, gbps);
    let events = events_json(&arch);
    (tmp, arch, events)
}

/// The number that follows `after` in `text` (0 when there is none).
fn number_after(text: &str, after: &str) -> u64 {
    text.split(after)
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn seq(e: &serde_json::Value) -> u64 {
    e["seq"].as_u64().unwrap()
}

/// Every async D2H copy has no bytes of its own and exactly one result event naming it, after
/// it and before the first synchronisation that follows it. Returns the number of copies.
fn results_follow_copies_and_precede_syncs(events: &[serde_json::Value]) -> usize {
    let copies: Vec<&serde_json::Value> = all_named(events, "cuMemcpyDtoHAsync_v2");
    for c in &copies {
        assert!(c["fields"]["d2h_blob"].is_null(), "{c}");
        let results: Vec<_> = events
            .iter()
            .filter(|e| e["name"] == "hrrMemcpyResult" && e["fields"]["copy"] == c["seq"])
            .collect();
        assert_eq!(results.len(), 1, "result of {c}");
        let r = results[0];
        assert!(r["fields"]["d2h_blob"].is_string(), "{r}");
        assert_eq!(r["fields"]["dst"], c["fields"]["dst"]);
        assert!(seq(r) > seq(c), "{r} before {c}");
        let sync = events
            .iter()
            .find(|e| {
                seq(e) > seq(c)
                    && [
                        "cuStreamSynchronize",
                        "cuCtxSynchronize",
                        "cuEventSynchronize",
                    ]
                    .contains(&e["name"].as_str().unwrap())
            })
            .expect("a synchronisation after the copy");
        assert!(seq(r) < seq(sync), "{r} after {sync}");
    }
    copies.len()
}

#[test]
fn async_d2h_results_are_recorded_at_completion_and_replay_compares_them() {
    let tmp = tempfile::tempdir().unwrap();
    for (app, args, gbps) in [
        ("copy_app", &["overlap", "3", "4"][..], 5),
        ("driver_app", &[][..], 0),
    ] {
        let arch = tmp.path().join(format!("{app}.hrr"));
        succeeded(capture(&arch, app, args, gbps));
        let events = events_json(&arch);
        let copies = results_follow_copies_and_precede_syncs(&events);
        assert!(copies >= 1, "{app}: no async D2H copy recorded");
        let (code, out, err) = fake().replay(&arch, &[]);
        assert_eq!(code, 0, "{app}: {out}{err}");
        let line = out
            .lines()
            .find(|l| l.contains("D2H checks"))
            .unwrap_or_default();
        let pass = number_after(line, ":");
        assert!(pass >= copies as u64, "{app}: {out}");
        assert!(line.contains(" 0 fail, 0 skipped"), "{app}: {out}");
    }
    // With the fake asynchronous, the host loop overlaps the copies under capture too: in some
    // of 6 iterations of 32 ms of copies each, in one of 3 captures (a capture that waits at
    // the call never lets it run; on a loaded machine, a thread descheduled over one window
    // can miss it, so one window is not enough to tell).
    let arch = tmp.path().join("overlap.hrr");
    let mut outs = Vec::new();
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(&arch);
        let o = capture(&arch, "copy_app", &["overlap", "6", "16"], 1);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if number_after(&out, "host_loop=") > 0 {
            return;
        }
        outs.push(out);
    }
    panic!("the capture waited for the copies: {outs:?}");
}

/// `copy_app overlap 6 1` captured into `arch` with async digests for every result of 64 KiB or
/// more (the fake's copies taking time), `env` besides: capture's output and the async
/// results recorded (at least the 6 downloads).
fn overlap_with_async_digests(
    arch: &Path,
    env: &[(&str, &str)],
) -> (Output, Vec<serde_json::Value>) {
    let digests = [
        ("FAKE_CUDA_ASYNC_GBPS", "1"),
        ("HRR_CAPTURE_DIGEST_MIN", "65536"),
        ("HRR_CAPTURE_ASYNC_DIGESTS", "1"),
    ];
    let o = succeeded(fake().capture_env(
        arch,
        "copy_app",
        &["overlap", "6", "1"],
        &[&digests[..], env].concat(),
    ));
    let events = events_json(&pid_dirs(arch).remove(0));
    let results: Vec<_> = all_named(&events, "hrrMemcpyResult")
        .into_iter()
        .cloned()
        .collect();
    assert!(results.len() >= 6, "{} results", results.len());
    (o, results)
}

/// With async digests (the default), every async result of the digest size or more is
/// digested by the kernel capture enqueues behind its copy, over an overlap loop's copies (the
/// fake's copies take time, the digests' buffers go back to the context as results are
/// recorded and are taken again): each result is a digest object and replay checks every one
/// by digest.
#[test]
fn async_results_in_flight_together_are_each_digested_behind_their_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp.path().join("digested.hrr");
    let (_, results) = overlap_with_async_digests(&arch, &[]);
    let dir = pid_dirs(&arch).remove(0);
    for e in &results {
        let n = e["fields"]["bytes"].as_u64().unwrap() as usize;
        let stored = std::fs::read(blob_path(&dir, e["fields"]["d2h_blob"].as_str().unwrap()));
        assert!(
            hrr_archive::digest::ResultDigest::of_blob(&stored.unwrap(), n).is_some(),
            "not a digest: {e}"
        );
    }
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], results.len(), "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
}

/// capture's buffers for the digests of pending async results, and its kernels' first launches,
/// come at the program's allocation, before its first async download: on a GPU,
/// `cuMemHostAlloc` waits for the device to go idle (asyncAPI's host loop, which should
/// overlap the GPU, ran 22 times instead of thousands with one allocated behind its download),
/// and whatever a kernel's first launch costs is paid there too. In the driver's trace: no `cuMemHostAlloc` and a launch of `hrr_digest` before the
/// first `cuMemcpyDtoHAsync`, no `cuMemHostAlloc` after it, and every result still a digest.
#[test]
fn digest_buffers_and_first_launches_come_before_the_first_async_download() {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp.path().join("digested.hrr");
    let (o, results) = overlap_with_async_digests(&arch, &[("FAKE_CUDA_TRACE", "1")]);
    let err = String::from_utf8_lossy(&o.stderr);
    let first = |line: &str| {
        err.find(line)
            .unwrap_or_else(|| panic!("no `{line}`: {err}"))
    };
    let download = first("[fake-cuda] cuMemcpyDtoHAsync_v2 -> 0");
    assert!(first("[fake-cuda] kernel hrr_digest ") < download, "{err}");
    assert_host_allocations_before(&err, download);
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], results.len(), "{v}");
}

/// Every page-locked allocation in a fake driver's trace `err` (capture's digest buffers:
/// the program's own come first in these programs) comes before offset `download`, and there
/// is one.
fn assert_host_allocations_before(err: &str, download: usize) {
    let allocs: Vec<usize> = err
        .match_indices("[fake-cuda] cuMemHostAlloc -> 0")
        .map(|(at, _)| at)
        .collect();
    assert!(!allocs.is_empty(), "capture allocated no buffer: {err}");
    assert!(allocs.iter().all(|&at| at < download), "{err}");
}

/// `copy_app pending 4 64 HOW` captured into `dir/HOW.hrr` with the fake driver's trace and
/// results of 64 KiB or more digested: the archive and the capture's output.
fn pending_traced(dir: &Path, how: &str) -> (PathBuf, Output) {
    let arch = dir.join(format!("{how}.hrr"));
    let env = [
        ("FAKE_CUDA_TRACE", "1"),
        ("HRR_CAPTURE_DIGEST_MIN", "65536"),
        ("FAKE_CUDA_DEVICES", "2"),
    ];
    let o = succeeded(fake().capture_env(&arch, "copy_app", &["pending", "4", "64", how], &env));
    (arch, o)
}

/// Device memory from `cuMemAllocPitch` loads the digest kernels and buffers as `cuMemAlloc`
/// does: the first async download finds them there (nothing of capture's is allocated behind
/// it, which would wait for the device) and every result is checked by its digest. So is
/// memory mapped into a reserved range (`cuMemMap`: PyTorch's expandable segments), which
/// belongs to no context, where the device may read every mapping a result spans (two here,
/// one download across them); a large mapping asks for the kernels as an allocation does (this
/// program allocates nothing else). Where it may not (`vmm-elsewhere`: access granted to another
/// device only), capture's kernel would fault: those results are read by the host, whole, and
/// checked; nothing is allocated behind a download either way.
#[test]
fn pitched_and_mapped_memory_is_digested_on_the_gpu_where_the_device_may_read_it() {
    for (how, by_digest) in [("pitch", 4), ("vmm", 4), ("vmm-elsewhere", 0)] {
        let tmp = tempfile::tempdir().unwrap();
        let (arch, o) = pending_traced(tmp.path(), how);
        assert_contains(&String::from_utf8_lossy(&o.stdout), "same=1");
        let err = String::from_utf8_lossy(&o.stderr);
        let download = err
            .find("[fake-cuda] cuMemcpyDtoHAsync_v2 -> 0")
            .expect("no download");
        if by_digest > 0 {
            let digest = err.find("[fake-cuda] kernel hrr_digest ");
            assert!(digest.is_some_and(|at| at < download), "{how}: {err}");
            assert_host_allocations_before(&err, download);
        } else {
            // (the load's warm-up launches come before the downloads; none behind them)
            let behind = err[download..].contains("[fake-cuda] kernel hrr_digest ");
            assert!(!behind, "{how}: {err}");
            let allocs = err.match_indices("[fake-cuda] cuMemHostAlloc -> 0");
            assert!(
                allocs.map(|(at, _)| at).all(|at| at < download),
                "{how}: {err}"
            );
        }
        let (code, v) = fake().replay_json_env(&arch, &[], &[("FAKE_CUDA_DEVICES", "2")]);
        assert_eq!(code, 0, "{how}: {v}");
        assert_eq!(v["d2h_checks"]["by_digest"], by_digest, "{how}: {v}");
        assert_eq!(v["d2h_checks"]["pass"], 4, "{how}: {v}");
    }
}

/// The digest kernels a large allocation asks for are loaded at the program's next event
/// record, not at the allocation: what the load allocates on the device would move the
/// program's later allocations, and where its data lands changes how fast its kernels run (on
/// an H100, tf32TensorCoreGemm built with `-rdc=true` ran 6% slower with 2 MiB allocated before
/// its matrices, plainly as captured). In the driver's trace: capture's module load comes after
/// the program's last allocation, before the event starting its region, and so before its
/// first download; every result is still checked by its digest. An event recorded inside a
/// stream capture (`capture`: PyTorch records them in the graphs it captures) loads nothing:
/// the load allocates, which the capture would not allow; the next record does.
#[test]
fn the_digest_kernels_load_at_the_event_after_the_program_s_allocations() {
    for how in ["alloc", "pitch", "capture"] {
        let tmp = tempfile::tempdir().unwrap();
        let (arch, o) = pending_traced(tmp.path(), how);
        let err = String::from_utf8_lossy(&o.stderr);
        let at = |line: &str| {
            err.find(line)
                .unwrap_or_else(|| panic!("{how}: no `{line}`: {err}"))
        };
        let last_alloc = err
            .rfind("[fake-cuda] cuMemAlloc_v2 -> 0")
            .expect("the program's allocation");
        let load = at("[fake-cuda] cuModuleLoadData -> 0");
        let download = at("[fake-cuda] cuMemcpyDtoHAsync_v2 -> 0");
        // (the event starting the downloads' region: the last one before them)
        let record = err[..download]
            .rfind("[fake-cuda] cuEventRecord -> 0")
            .expect("no event");
        assert!(
            last_alloc < load,
            "{how}: loaded among the allocations: {err}"
        );
        assert!(load < record && record < download, "{how}: {err}");
        if how == "capture" {
            // not at the event recorded inside the stream capture: after it ended
            let ended = at("[fake-cuda] cuStreamEndCapture -> 0");
            assert!(
                ended < load,
                "{how}: loaded inside the stream capture: {err}"
            );
        }
        let (code, v) = fake().replay_json(&arch, &[]);
        assert_eq!(code, 0, "{how}: {v}");
        assert_eq!(v["d2h_checks"]["by_digest"], 4, "{how}: {v}");
    }
}

/// More async results pending at once than capture allocated digest buffers for (100 of
/// 64 KiB before one synchronisation): capture allocates no more behind the copies (that would
/// wait for the device to go idle), the results beyond its buffers are stored whole, and
/// replay checks every one, by digest or by bytes.
#[test]
fn results_beyond_the_digest_buffers_are_stored_whole_without_allocating() {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp.path().join("pending.hrr");
    let env = [
        ("FAKE_CUDA_TRACE", "1"),
        ("HRR_CAPTURE_DIGEST_MIN", "65536"),
        ("FAKE_CUDA_DEVICES", "2"),
    ];
    let o = succeeded(fake().capture_env(&arch, "copy_app", &["pending", "100", "64"], &env));
    assert_contains(&String::from_utf8_lossy(&o.stdout), "same=1");
    let err = String::from_utf8_lossy(&o.stderr);
    let download = err
        .find("[fake-cuda] cuMemcpyDtoHAsync_v2 -> 0")
        .expect("no download");
    assert_host_allocations_before(&err, download);
    let dir = pid_dirs(&arch).remove(0);
    let results = all_named(&events_json(&dir), "hrrMemcpyResult").len();
    assert_eq!(results, 100);
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!(code, 0, "{v}");
    let by_digest = v["d2h_checks"]["by_digest"].as_u64().unwrap();
    assert!((64..100).contains(&by_digest), "{v}");
    assert!(v["d2h_checks"]["pass"].as_u64().unwrap() >= 100, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
}

/// With `HRR_CAPTURE_PROFILE=1`, capture's profile times the work async copies leave it: one
/// record per `hrrMemcpyResult` and per `hrrMemcpySource` event, and the synchronisations that
/// waited for them, so that where a synchronisation's added time goes can be told.
#[test]
fn the_profile_times_async_results_and_the_waits_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp.path().join("profiled.hrr");
    let out = succeeded(fake().capture_env(
        &arch,
        "copy_app",
        &["overlap", "3", "4"],
        &[("FAKE_CUDA_ASYNC_GBPS", "5"), ("HRR_CAPTURE_PROFILE", "1")],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    let events = events_json(&arch);
    let count = |line: &str| -> usize {
        let l = err
            .lines()
            .find(|l| l.contains(line))
            .unwrap_or_else(|| panic!("no `{line}` line: {err}"));
        // `  capture's own: WHAT: N (T us)`
        let n = l
            .rsplit(": ")
            .next()
            .and_then(|r| r.split_whitespace().next());
        n.and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in `{l}`"))
    };
    let results = all_named(&events, "hrrMemcpyResult").len();
    assert!(results >= 1, "no async result recorded");
    assert_eq!(count("capture's own: async D2H results recorded:"), results);
    let sources = all_named(&events, "hrrMemcpySource").len();
    if sources > 0 {
        assert_eq!(count("capture's own: async H2D sources recorded:"), sources);
    }
    assert!(count("capture's own: synchronisations waiting for results:") >= 1);
}

/// A buffer uploaded again from the same address is stored once per content: the same bytes
/// again take the last store's blob (capture skips their BLAKE3, `fingerprint.rs`), and bytes
/// changed anywhere, between the pieces capture samples too, make a new blob. Replay puts each
/// upload's own bytes back: every download compares equal (a stale blob reused for changed
/// bytes would fail there).
#[test]
fn a_buffer_uploaded_again_is_stored_once_per_content() {
    let (_tmp, arch, events) = copy_app_events(&["reupload", "9"], 0);
    // contents: the first, then a change at 6 of the 8 later uploads
    let uploads: Vec<&str> = all_named(&events, "cuMemcpyHtoD_v2")
        .iter()
        .map(|e| e["fields"]["h2d_blob"].as_str().expect("an uploaded blob"))
        .collect();
    assert_eq!(uploads.len(), 9);
    let mut distinct = uploads.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 7, "{uploads:?}");
    for i in [3, 6] {
        assert_eq!(
            uploads[i],
            uploads[i - 1],
            "unchanged upload {i} stored anew"
        );
    }
    let dir = &pid_dirs(&arch)[0];
    for id in &distinct {
        assert_eq!(
            std::fs::metadata(blob_path(dir, id)).unwrap().len(),
            1 << 20
        );
    }
    let out = fake().replay_ok(&arch, &[]);
    assert_contains(&out, "D2H checks      : 9 pass (");
    assert_contains(&out, ", 0 fail, 0 skipped");
}

/// An async D2H copy into page-locked memory gets an event behind it, not a host function: its
/// stream never waits for the host (a host function holds a stream for a round trip through
/// the driver's callback thread). Its result is still recorded after the copy and before the
/// synchronisation that showed the program it completed, and replay compares it.
#[test]
fn async_d2h_results_put_no_host_function_on_the_stream() {
    let (_tmp, arch) = temp_path("copy.hrr");
    let env = [("FAKE_CUDA_ASYNC_GBPS", "5"), ("FAKE_CUDA_TRACE", "1")];
    let o = succeeded(fake().capture_env(&arch, "copy_app", &["overlap", "3", "4"], &env));
    let trace = String::from_utf8_lossy(&o.stderr);
    let calls = |name: &str| trace.matches(&format!("] {name} -> 0")).count();
    let copies = results_follow_copies_and_precede_syncs(&events_json(&arch));
    assert_eq!(copies, 3);
    assert_eq!(calls("cuLaunchHostFunc"), 0, "{trace}");
    assert!(calls("cuEventRecord") >= copies, "{trace}");
    assert_eq!(
        calls("cuEventCreate"),
        calls("cuEventDestroy_v2") + 1,
        "{trace}"
    );
    let out = fake().replay_ok(&arch, &[]);
    assert_contains(&out, " 0 fail, 0 skipped");
}

/// An async D2H call is no synchronisation: it does not wait for results of earlier copies to
/// be recorded (that wait held each copy of a loop for the previous one's hashing). With the
/// fake synchronous, `copy_app reuse`'s first copy has completed when the second is issued into
/// the same buffer; nothing told the program so, so its result is dropped, never recorded.
#[test]
fn an_async_d2h_call_does_not_record_earlier_results() {
    let (_tmp, arch, events) = copy_app_events(&["reuse"], 0);
    let copies = all_named(&events, "cuMemcpyDtoHAsync_v2");
    let results = all_named(&events, "hrrMemcpyResult");
    assert_eq!(copies.len(), 2);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["fields"]["copy"], copies[1]["seq"]);
    fake().replay_ok(&arch, &[]);
}

/// simpleMultiCopy's serialized loop (`copy_app multicopy`): eight page-locked buffers mapped
/// into the device, async uploads from one and downloads into another, the host changing a
/// third every round. Each round's download is recorded once, as its copy's result, and
/// checked there, not read again as a check of its buffer at the round's synchronisation
/// (which read all eight buffers before). The host's changes to a buffer no device code was
/// handed a pointer into are not read at all (the first work of each round read all eight
/// before): with `HRR_CAPTURE_HOSTMEM_READ_ALL=1` they are, as host writes.
#[test]
fn downloads_into_mapped_buffers_are_recorded_once() {
    let (_tmp, arch, events) = copy_app_events(&["multicopy", "5", "1"], 0);
    assert_eq!(all_named(&events, "hrrHostMemCheck").len(), 0);
    assert_eq!(all_named(&events, "hrrMemcpyResult").len(), 5);
    assert_eq!(all_named(&events, "hrrHostMemWrite").len(), 0);
    let out = fake().replay_ok(&arch, &[]);
    assert_contains(&out, "D2H checks      : 5 pass");

    let (_tmp, arch) = temp_path("all.hrr");
    let env = [("HRR_CAPTURE_HOSTMEM_READ_ALL", "1")];
    succeeded(fake().capture_env(&arch, "copy_app", &["multicopy", "5", "1"], &env));
    let events = events_json(&arch);
    assert!(all_named(&events, "hrrHostMemWrite").len() >= 4);
    assert_eq!(all_named(&events, "hrrMemcpyResult").len(), 5);
}

/// A synchronisation that finds async copies complete records their results on its own thread
/// (it waits for them anyway): not handed to capture's recorder thread and waited for, two
/// thread wake-ups per synchronisation in simpleMultiCopy's serialized loop. The results carry
/// the program's thread, as its copies do.
#[test]
fn results_a_synchronisation_finds_complete_are_recorded_on_its_thread() {
    let (_tmp, _arch, events) = copy_app_events(&["multicopy", "5", "1"], 0);
    let results = all_named(&events, "hrrMemcpyResult");
    assert_eq!(results.len(), 5);
    for r in results {
        let copy = events
            .iter()
            .find(|e| e["seq"] == r["fields"]["copy"])
            .unwrap();
        assert_eq!(r["thread_id"], copy["thread_id"], "{r}");
    }
}

/// 300 async D2H copies into one buffer and no synchronisation until the end: past 256 results
/// waiting for their event, those whose copies completed are handed over (all but the newest
/// dropped: later copies overwrote them unseen), so events do not pile up; the last copy's
/// result is recorded, and hardly any other.
#[test]
fn results_waiting_for_their_event_are_bounded() {
    let (_tmp, arch) = temp_path("run.hrr");
    let env = [("FAKE_CUDA_ASYNC_GBPS", "0"), ("FAKE_CUDA_TRACE", "1")];
    let o = succeeded(fake().capture_env(&arch, "copy_app", &["many"], &env));
    assert!(String::from_utf8_lossy(&o.stdout).contains("many last=299"));
    let trace = String::from_utf8_lossy(&o.stderr);
    let before_sync = trace
        .split("] cuStreamSynchronize")
        .next()
        .unwrap_or_default();
    let destroyed = before_sync.matches("] cuEventDestroy_v2 -> 0").count();
    assert!(destroyed >= 1, "no event let go before the synchronisation");
    let events = events_json(&arch);
    assert_eq!(all_named(&events, "cuMemcpyDtoHAsync_v2").len(), 300);
    let results = all_named(&events, "hrrMemcpyResult");
    assert!((1..=3).contains(&results.len()), "{results:?}");
    let last = all_named(&events, "cuMemcpyDtoHAsync_v2")[299]["seq"].clone();
    assert!(
        results.iter().any(|r| r["fields"]["copy"] == last),
        "{results:?}"
    );
}

/// A context destroyed while an async D2H copy into page-locked memory is still running, with
/// no synchronisation before: the result is waited for and recorded before the context goes
/// (its event would go with it), ahead of the `cuCtxDestroy` event.
#[test]
fn a_context_destroyed_behind_a_running_copy_still_records_its_result() {
    one_result_recorded_before("destroy", "cuCtxDestroy_v2");
}

/// `copy_app mode` captured (copies at 1 GB/s): its one async D2H copy has one result, recorded
/// before the first `call` event. The folder (kept alive) and the archive.
fn one_result_recorded_before(mode: &str, call: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, arch, events) = copy_app_events(&[mode], 1);
    let copy = first_named(&events, "cuMemcpyDtoHAsync_v2");
    let results = all_named(&events, "hrrMemcpyResult");
    assert_eq!(results.len(), 1, "{events:?}");
    assert_eq!(results[0]["fields"]["copy"], copy["seq"]);
    let destroy = first_named(&events, call);
    assert!(seq(results[0]) < seq(destroy), "{destroy}");
    (tmp, arch)
}

/// A stream destroyed behind a running async D2H copy: its result is recorded before the
/// stream goes (`cuStreamDestroy` settles it), so a later claim by a host-memory call never
/// enqueues a host function on the destroyed stream (what crashed simpleCallback once in
/// eight runs: one worker freeing its buffer claimed another's result while that worker
/// destroyed its stream); replay checks the result.
#[test]
fn a_stream_destroyed_behind_a_running_copy_records_its_result_first() {
    let (_tmp, arch) = one_result_recorded_before("streamgone", "cuStreamDestroy_v2");
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!((code, &v["verdict"]), (0, &"PASS".into()), "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
}

/// An archive whose async result comes after the destroy of its copy's stream (a worker
/// destroying its stream while another thread's synchronisation records the result, as
/// simpleCallback's did): replay waits for the copy before the stream goes, and the result
/// event compares without touching the stream (it crashed the driver before).
#[test]
fn a_result_recorded_after_its_stream_was_destroyed_is_compared() {
    let (_tmp, arch) = one_result_recorded_before("streamgone", "cuStreamDestroy_v2");
    let dir = pid_dirs(&arch).remove(0);
    move_after(&dir, "hrrMemcpyResult", "cuStreamDestroy_v2");
    let events = events_json(&dir);
    let result = first_named(&events, "hrrMemcpyResult");
    assert!(seq(result) > seq(first_named(&events, "cuStreamDestroy_v2")));
    assert_eq!(
        result["fields"]["copy"],
        first_named(&events, "cuMemcpyDtoHAsync_v2")["seq"]
    );
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!((code, &v["verdict"]), (0, &"PASS".into()), "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
}

/// Rewrite `dir`'s events with the first `moved` event placed right after the first `after`
/// event (later events renumbered; a result names its copy, which comes before both).
fn move_after(dir: &Path, moved: &str, after: &str) {
    use hrr_archive::reader::EventReader;
    use hrr_archive::writer::{EventWriter, FlushPolicy};
    let path = dir.join(hrr_archive::writer::EVENTS_FILE);
    let mut reader = EventReader::open(&path).unwrap();
    let schema = reader.schema().unwrap().clone();
    let kind_of = |name: &str| schema.calls.iter().find(|c| c.name == name).unwrap().id;
    let (moved, after) = (kind_of(moved), kind_of(after));
    let mut records = Vec::new();
    while let Some(r) = reader.next_raw().unwrap() {
        records.push(r);
    }
    drop(reader);
    let from = records.iter().position(|r| r.header.kind == moved).unwrap();
    let r = records.remove(from);
    let to = records.iter().position(|r| r.header.kind == after).unwrap();
    records.insert(to + 1, r);
    std::fs::remove_file(&path).unwrap();
    let mut w = EventWriter::create(&path, &schema, FlushPolicy::default()).unwrap();
    for r in &records {
        let h = &r.header;
        w.append_at(h.kind, h.thread_id, h.timestamp_ns, &r.payload)
            .unwrap();
    }
    w.finish().unwrap();
}

/// A stream callback (`cuStreamAddCallback`, `cudaStreamAddCallback`) is program code behind an
/// async D2H copy, as a host function is: the copy's result is recorded before the callback
/// runs (here it overwrites the destination, which a result read at the later
/// synchronisation would hold instead), and replay names the callback as not reproducible.
#[test]
fn a_stream_callback_sees_the_result_recorded_first() {
    let (_tmp, arch, events) = copy_app_events(&["callback"], 1);
    let callback = first_named(&events, "cuStreamAddCallback");
    let results = all_named(&events, "hrrMemcpyResult");
    assert_eq!(results.len(), 1, "{events:?}");
    assert!(seq(results[0]) < seq(first_named(&events, "cuStreamSynchronize")));
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!((code, &v["verdict"]), (0, &"PASS".into()), "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
    assert_eq!(
        v["unreproducible_calls"][0]["call"], "cuStreamAddCallback",
        "{v}"
    );
    assert_eq!(
        v["unreproducible_calls"][0]["first_seq"], callback["seq"],
        "{v}"
    );
}

/// An async H2D copy of 1 MiB or more from page-locked memory returns without its source being
/// hashed: the copy's event has no bytes, and exactly one `hrrMemcpySource` event after it
/// names it, before the event query that tells the program the copy is done (the program
/// refills the source right after). Replay puts that source into the copy: no copy is
/// skipped, and the bytes that come back match.
#[test]
fn async_h2d_sources_from_pinned_memory_are_read_after_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    // cuMemcpyAsync to the device takes the same path
    let arch = tmp.path().join("any.hrr");
    copy_app(&arch, &["overlap", "2", "2", "any"], 5);
    let events = events_json(&arch);
    let any: Vec<&serde_json::Value> = all_named(&events, "cuMemcpyAsync");
    assert_eq!(any.len(), 2);
    assert!(any.iter().all(|c| c["fields"]["h2d_blob"].is_null()));
    let sources = events.iter().filter(|e| e["name"] == "hrrMemcpySource");
    assert_eq!(sources.count(), 2);
    let (code, v) = fake().replay_json(&arch, &[]);
    assert_eq!((code, &v["verdict"]), (0, &"PASS".into()), "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 2, "{v}");

    let arch = tmp.path().join("run.hrr");
    copy_app(&arch, &["overlap", "3", "2"], 5);
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let copies: Vec<&serde_json::Value> = all_named(&events, "cuMemcpyHtoDAsync_v2");
    assert_eq!(copies.len(), 3);
    let mut sources = std::collections::HashSet::new();
    for c in &copies {
        assert!(c["fields"]["h2d_blob"].is_null(), "{c}");
        let named: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["name"] == "hrrMemcpySource" && e["fields"]["copy"] == c["seq"])
            .collect();
        assert_eq!(named.len(), 1, "{c}");
        assert!(seq(named[0]) > seq(c), "{c}");
        sources.insert(named[0]["fields"]["h2d_blob"].as_str().unwrap().to_string());
    }
    assert_eq!(sources.len(), 3, "each iteration's source is its own");
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 3, "{v}");

    // Cut out from the second copy to its result: the extracted archive carries the copy's
    // source in the copy itself, and replays alone.
    let (first, last) = (seq(copies[1]), seq(copies[2]) - 1);
    let small = tmp.path().join("small.hrr");
    fake().replay_ok(
        &dir,
        &[
            "--extract",
            &format!("{first}..{last}"),
            "-o",
            small.to_str().unwrap(),
        ],
    );
    let small_dir = pid_dirs(&small).remove(0);
    let cut = events_json(&small_dir);
    let copy = first_named(&cut, "cuMemcpyHtoDAsync_v2");
    assert!(copy["fields"]["h2d_blob"].is_string(), "{copy}");
    let (code, v) = fake().replay_json(&small_dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

/// Two async D2H copies into one buffer before one synchronisation: the program can only ever
/// see the second's bytes, and only those are recorded (the first copy's result is dropped
/// when the second is issued, so its host function does not stall the stream); replay checks
/// the second.
#[test]
fn a_result_overwritten_before_any_synchronisation_is_not_recorded() {
    let (_tmp, arch) = temp_path("run.hrr");
    // The second copy is issued 32 ms before the first completes; a thread descheduled that
    // long on a loaded machine lets the first result be recorded (correctly, but not what is
    // tested here): one of 3 captures must show the drop, a capture that never drops none.
    let mut seen = Vec::new();
    let dir = loop {
        let _ = std::fs::remove_dir_all(&arch);
        let o = copy_app(&arch, &["reuse"], 1);
        assert!(String::from_utf8_lossy(&o.stdout).contains("same=1"));
        let dir = pid_dirs(&arch).remove(0);
        let events = events_json(&dir);
        let copies = all_named(&events, "cuMemcpyDtoHAsync_v2");
        assert_eq!(copies.len(), 2);
        let results = all_named(&events, "hrrMemcpyResult");
        if results.len() == 1 {
            assert_eq!(results[0]["fields"]["copy"], copies[1]["seq"]);
            break dir;
        }
        seen.push(results.len());
        assert!(seen.len() < 3, "results recorded per capture: {seen:?}");
    };
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

#[test]
fn a_zeroed_async_result_blob_is_a_mismatch_naming_the_result_event() {
    let (_tmp, arch) = temp_path("run.hrr");
    // driver_app's async copy brings back what a kernel wrote (copy_app's would be the same
    // bytes as its H2D source, one blob for both, and zeroing that changes the replay too).
    assert!(capture(&arch, "driver_app", &[], 0).status.success());
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let r = first_named(&events, "hrrMemcpyResult");
    zero_blob(&dir, r["fields"]["d2h_blob"].as_str().unwrap());
    let (code, out, _) = fake().replay(&dir, &[]);
    assert_mismatch_at(code, &out, r);
}

#[test]
fn kill_9_right_after_a_sync_loses_no_recorded_blob() {
    let (_tmp, arch) = temp_path("run.hrr");
    for gbps in [0, 5] {
        let _ = std::fs::remove_dir_all(&arch);
        let o = capture(&arch, "copy_app", &["killsync"], gbps);
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("killsync synced"));
        let dir = pid_dirs(&arch).remove(0);
        let events = events_json(&dir);
        assert_eq!(results_follow_copies_and_precede_syncs(&events), 1);
        // small objects the sync journaled instead of waiting for their files come back with
        // --repair; the events the sync made durable are all kept (nothing cut)
        let (code, out, err) = playback_on(&arch, &["--repair"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(!out.contains("Still incomplete"), "{out}");
        assert!(!dir.join("blobs.journal").exists());
        let mut named = 0;
        for e in &events {
            for key in ["h2d_blob", "d2h_blob"] {
                if let Some(id) = e["fields"][key].as_str() {
                    let p = blob_path(&dir, id);
                    let bytes = std::fs::read(&p)
                        .unwrap_or_else(|err| panic!("{key} of {e}: {}: {err}", p.display()));
                    assert_eq!(bytes.len() as u64, e["fields"]["bytes"].as_u64().unwrap());
                    assert_eq!(&blake3::hash(&bytes).to_hex()[..32], id);
                    named += 1;
                }
            }
        }
        assert_eq!(named, 4, "3 H2D sources and a D2H result");
        let out = fake().replay_ok(&dir, &[]);
        assert_contains(&out, "D2H checks      : 1 pass");
    }
}

#[test]
fn async_d2h_into_pageable_memory_is_recorded_at_the_call() {
    // The program reuses the pageable buffer right after each copy; a result read later (by a
    // host function, with the fake asynchronous) would hold the reused bytes.
    let (_tmp, arch) = temp_path("pageable.hrr");
    copy_app(&arch, &["pageable"], 1);
    let results = events_json(&arch)
        .into_iter()
        .filter(|e| e["name"] == "hrrMemcpyResult")
        .count();
    assert_eq!(results, 4);
    let out = fake().replay_ok(&arch, &[]);
    assert_contains(&out, "4 pass (4 exact");
}

/// Uploads of 1 MiB or more go to the device from their blob, mapped and page-locked before the
/// clock; without preloading (`HRR_REPLAY_PRELOAD_MB=0`) through replay's ring of pinned
/// buffers, those over a slot (64 MiB) in pieces, each copied into its slot on several threads:
/// a 72 MiB upload read back whole compares equal either way (a piece out of place or short
/// would not).
#[test]
fn large_uploads_are_staged_in_pieces_and_come_back_whole() {
    let (_tmp, arch) = temp_path("large.hrr");
    copy_app(&arch, &["overlap", "1", "72"], 0);
    let events = events_json(&pid_dirs(&arch).remove(0));
    assert!(
        events.iter().any(|e| {
            e["name"].as_str().unwrap().starts_with("cuMemcpyHtoD")
                && e["fields"]["bytes"].as_u64() == Some(72 << 20)
        }),
        "no 72 MiB upload recorded"
    );
    for preload in ["0", "8192"] {
        let env = [("HRR_REPLAY_PRELOAD_MB", preload)];
        let (code, out, err) = fake().replay_env(&arch, &["-v"], &env);
        assert_eq!(code, 0, "{out}{err}");
        let line = out.lines().find(|l| l.contains("D2H checks")).unwrap();
        assert!(number_after(line, ":") >= 1, "{out}");
        assert!(line.contains(" 0 fail, 0 skipped"), "{out}");
        let pinned = err.contains("MiB) mapped and page-locked before the clock");
        assert_eq!(pinned, preload != "0", "{err}");
    }
}

/// `--multi-thread`: a thread's stream wait does not hold up the other threads. The first
/// thread of `copy_app waiting` waits ~80 ms for a copy on the device (the fake asynchronous at
/// 0.1 GB/s); the second thread's memset was recorded after that wait returned. Replayed with
/// a thread each, the memset is issued while the first thread still waits (the fake's trace
/// shows it before the first `cuStreamSynchronize` returns); replayed on one thread, after.
#[test]
fn a_stream_wait_lets_the_other_threads_go_on_under_multi_thread() {
    let (_tmp, arch) = temp_path("waiting.hrr");
    let env = [("FAKE_CUDA_ASYNC_GBPS", "0.1")];
    succeeded(fake().capture_env(&arch, "copy_app", &["waiting"], &env));
    let order = |extra: &[&str]| {
        let env = [("FAKE_CUDA_ASYNC_GBPS", "0.1"), ("FAKE_CUDA_TRACE", "1")];
        let (code, out, err) = fake().replay_env(&arch, extra, &env);
        assert_eq!(code, 0, "{out}{err}");
        assert_contains(&out, "D2H checks      : 1 pass");
        let at = |call: &str| {
            err.lines()
                .position(|l| l.starts_with(&format!("[fake-cuda] {call} ->")))
                .unwrap_or_else(|| panic!("no {call} in the trace: {err}"))
        };
        at("cuMemsetD32Async") < at("cuStreamSynchronize")
    };
    assert!(
        order(&["--multi-thread"]),
        "the memset waited for the other thread's wait"
    );
    assert!(!order(&[]), "one replay thread issues in recorded order");
}

/// A kernel's argument layout is read from the `.nv.info` records of the ELF entry its fatbin
/// carries, so the driver is never asked (the profile says so), and the replay of what capture
/// recorded with it passes. With `HRR_CAPTURE_CHECK_LAYOUTS=1` the driver is asked too: a
/// layout that differs (the image declares axpy's last parameter 8 bytes, the driver 4) is
/// reported, and the driver's answer is the one recorded, so that replay passes as well.
#[test]
fn argument_layouts_come_from_the_code_and_can_be_checked() {
    // `copy_app cubin WRONG` captured with `env`: its archive (in a folder kept while the
    // temporary lives), capture's stderr and the first launch's event.
    let cubin = |wrong: &str, env: &[(&str, &str)]| {
        let (tmp, arch) = temp_path("code.hrr");
        let out = succeeded(fake().capture_env(&arch, "copy_app", &["cubin", wrong], env));
        assert_contains(&String::from_utf8_lossy(&out.stdout), "cubin sum=13300.0");
        let launch = first_named(&events_json(&arch), "cuLaunchKernel").clone();
        assert_checks_exact(&fake().replay_ok(&arch, &[]), 1);
        (
            tmp,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            launch,
        )
    };

    let (_tmp, err, _) = cubin(
        "0",
        &[
            ("HRR_CAPTURE_PROFILE", "1"),
            ("HRR_CAPTURE_LAYOUTS_FROM_CODE", "0"),
        ],
    );
    assert_contains(
        &err,
        "capture's own: argument layouts asked of the driver: 1 (",
    );
    assert!(!err.contains("read from the code"), "{err}");
    // on by default, and with `HRR_CAPTURE_LAYOUTS_FROM_CODE=1`
    for on in [&[][..], &[("HRR_CAPTURE_LAYOUTS_FROM_CODE", "1")][..]] {
        let env = [&[("HRR_CAPTURE_PROFILE", "1")][..], on].concat();
        let (_tmp, err, launch) = cubin("0", &env);
        assert_contains(
            &err,
            "capture's own: argument layouts read from the code: 1\n",
        );
        assert!(!err.contains("asked of the driver"), "{err}");
        assert_eq!(
            launch["fields"]["arg_offsets"],
            serde_json::json!([0, 8, 16, 24])
        );
    }

    let (_tmp, err, launch) = cubin("1", &[("HRR_CAPTURE_CHECK_LAYOUTS", "1")]);
    assert_contains(
        &err,
        "hrr-capture: argument layout of axpy read from its code [(0, 4), (8, 8), (16, 8), (24, 8)] differs from the driver's [(0, 4), (8, 8), (16, 8), (24, 4)]",
    );
    assert_contains(
        &err,
        "argument layouts read from the code and checked against the driver: 1, differing: 1",
    );
    assert_eq!(
        launch["fields"]["arg_sizes"],
        serde_json::json!([4, 8, 8, 4])
    );
}
