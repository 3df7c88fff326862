//! Host-visible memory and stream-ordered allocation round trips on the CPU, against the fake
//! `libcuda.so.1` and `tests/fake-cuda/apps/hostmem_app.c`: zero-copy (mapped pinned and
//! registered memory), managed memory, and stream-ordered allocation with pools. Each replay
//! passes with checks, and fails when what the host wrote is taken away.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first) and a C compiler.

use std::path::{Path, PathBuf};

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-hostmem")
}

/// Capture `hostmem_app MODE` into `archive`; the app's output, which must equal a plain run's.
fn capture(archive: &Path, mode: &str) -> String {
    let o = fake().capture_as_plain(archive, "hostmem_app", &[mode]);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Replay as JSON: exit code and the report.
fn replay(target: &Path) -> (i32, serde_json::Value) {
    fake().replay_json(target, &[])
}

fn checks(v: &serde_json::Value) -> u64 {
    v["d2h_checks"]["pass"].as_u64().unwrap_or(0)
}

/// Zero the blob of the `nth` event named `name` (field `field`); the event's sequence number.
fn zero_nth_blob(dir: &Path, name: &str, field: &str, nth: usize) -> u64 {
    let ev = events_json(dir)
        .into_iter()
        .filter(|e| e["name"] == name)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {name} #{nth}"));
    zero_blob(dir, ev["fields"][field].as_str().unwrap());
    ev["seq"].as_u64().unwrap()
}

fn names_of(dir: &Path) -> Vec<String> {
    names(&events_json(dir))
}

/// A capture of `mode` in a new temporary folder: the folder (kept while it lives) and the
/// capture's process folder.
fn captured(mode: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, arch) = temp_path(format!("{mode}.hrr"));
    capture(&arch, mode);
    let dir = pid_dirs(&arch).remove(0);
    (tmp, dir)
}

/// The capture in `dir` records exactly `count` events named `name`, for each pair of `want`.
fn assert_name_counts(dir: &Path, want: &[(&str, usize)]) {
    let n = names_of(dir);
    for &(name, count) in want {
        let got = n.iter().filter(|x| *x == name).count();
        assert_eq!(got, count, "{name}: {n:?}");
    }
}

fn assert_pass(dir: &Path, min_checks: u64) {
    let (code, v) = replay(dir);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert!(checks(&v) >= min_checks, "{v}");
}

fn assert_mismatch(dir: &Path) {
    let (code, v) = replay(dir);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["verdict"], "MISMATCH", "{v}");
}

/// With the blob of the `nth` event named `name` (field `field`) zeroed, replay of `dir`
/// reports MISMATCH: what that event recorded is what the replay's result depends on.
fn assert_mismatch_without(dir: &Path, name: &str, field: &str, nth: usize) {
    zero_nth_blob(dir, name, field, nth);
    assert_mismatch(dir);
}

/// A capture of `mode` that records exactly the event counts `counts` (name, count), replays
/// PASS with at least `min_checks` D2H checks, and MISMATCH once the blob `needed` names
/// (event name, field, which such event) is zeroed: its temporary and process folders.
fn assert_replays_checked(
    mode: &str,
    counts: &[(&str, usize)],
    min_checks: u64,
    (name, field, nth): (&str, &str, usize),
) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = captured(mode);
    assert_name_counts(&dir, counts);
    assert_pass(&dir, min_checks);
    assert_mismatch_without(&dir, name, field, nth);
    (tmp, dir)
}

#[test]
fn zero_copy_memory_replays_with_host_writes_and_reads_checked() {
    // Host writes before each kernel, host reads after each synchronisation, both regions;
    // the host's write between the kernels is what the second result depends on.
    assert_replays_checked(
        "zerocopy",
        &[("hrrHostMemWrite", 4), ("hrrHostMemCheck", 4)],
        4,
        ("hrrHostMemWrite", "h2d_blob", 1),
    );
}

/// Pinned memory the driver put among device memory (`FAKE_CUDA_HOST_IN_DEVICE_SPACE`, as the
/// NVIDIA driver lays them out): replay reserves that range for device memory, so the host
/// memory is backed there by the driver's host memory mapped like device memory (the fake's
/// trace: created on the host), written and read through copies; PASS with the host writes
/// and reads checked, and MISMATCH without the write between the kernels.
#[test]
fn zero_copy_memory_among_device_memory_stays_at_its_address() {
    let (_tmp, arch) = temp_path("near.hrr");
    let near = [("FAKE_CUDA_HOST_IN_DEVICE_SPACE", "1")];
    succeeded(fake().capture_env(&arch, "hostmem_app", &["zerocopy"], &near));
    let dir = pid_dirs(&arch).remove(0);
    let env = [near[0], ("FAKE_CUDA_TRACE", "1")];
    let (code, out, err) = fake().replay_env(&dir, &[], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert_contains(&out, "[HRR] PASS");
    assert_contains(&out, "D2H checks      : 4 pass");
    assert_contains(&err, "[fake-cuda] cuMemCreate on the host");
    let (_, v) = fake().replay_json_env(&dir, &[], &near);
    let host = |k: &str| v["allocations"][k].as_u64().unwrap();
    assert!(
        host("host_placed") >= 2 && host("host_translated") == 0,
        "{v}"
    );
    zero_nth_blob(&dir, "hrrHostMemWrite", "h2d_blob", 1);
    let (code, v) = fake().replay_json_env(&dir, &[], &near);
    assert_eq!((code, &v["verdict"]), (1, &"MISMATCH".into()), "{v}");
}

/// Mapped flags a kernel reaches only through pointers kept in device memory (NCCL's pattern):
/// what the host wrote there before each launch is recorded although no launch argument
/// points into them, so replay's kernel reads the recorded flags (PASS, both rounds' results
/// checked) and MISMATCH once the second round's flags are taken away.
#[test]
fn memory_reached_through_pointers_in_device_memory_replays() {
    let (_tmp, dir) = captured("table");
    assert_pass(&dir, 2);
    let writes = names_of(&dir)
        .iter()
        .filter(|n| *n == "hrrHostMemWrite")
        .count();
    assert!(writes >= 2, "{:?}", names_of(&dir));
    assert_mismatch_without(&dir, "hrrHostMemWrite", "h2d_blob", writes - 1);
}

/// Mapped memory the host rewrites between kernels that reach device memory only (`escape`):
/// no device code holds a pointer into it, so the first work after each synchronisation does
/// not read it; the kernel then handed a pointer into it does, before its launch: one host
/// write, its last contents, which replay needs (the result it feeds is a MISMATCH without).
/// With `HRR_CAPTURE_HOSTMEM_READ_ALL=1` each round's first kernel reads it, as before, and so
/// it does when the program asked for its device pointer; downloading through 2D copies does
/// not make it read.
#[test]
fn unreached_tracked_memory_is_not_read_before_work() {
    assert_replays_checked(
        "escape",
        &[("hrrHostMemWrite", 1), ("hrrHostMemCheck", 0)],
        4,
        ("hrrHostMemWrite", "h2d_blob", 0),
    );
    // with the switch, and in a program that asks for the device pointer (it means to hand it
    // to device code), every round's first kernel reads it
    for var in ["HRR_CAPTURE_HOSTMEM_READ_ALL", "HOSTMEM_APP_ASK"] {
        let (_tmp, arch) = temp_path("escape-read.hrr");
        succeeded(fake().capture_env(&arch, "hostmem_app", &["escape"], &[(var, "1")]));
        let dir = pid_dirs(&arch).remove(0);
        assert_name_counts(&dir, &[("hrrHostMemWrite", 3)]);
        assert_pass(&dir, 4);
    }
    // downloads through 2D copies (their reach told from the descriptor, not taken as every
    // region): still read before the last kernel only
    let (_tmp, arch) = temp_path("escape-pitched.hrr");
    let pitched = [("HOSTMEM_APP_PITCHED", "1")];
    succeeded(fake().capture_env(&arch, "hostmem_app", &["escape"], &pitched));
    let dir = pid_dirs(&arch).remove(0);
    assert_name_counts(&dir, &[("hrrHostMemWrite", 1)]);
    assert_pass(&dir, 4);
}

/// As `table`, the pointers to the mapped flags written by the host into managed memory the
/// kernel is handed (`hosttable`): the flags are reached through those host writes, so they
/// are read before each launch too; replay needs their last write.
#[test]
fn memory_reached_through_pointers_the_host_wrote_replays() {
    let (_tmp, dir) = captured("hosttable");
    assert_pass(&dir, 2);
    // per round: the table and the flags, each written by the host
    assert_name_counts(&dir, &[("hrrHostMemWrite", 4)]);
    assert_mismatch_without(&dir, "hrrHostMemWrite", "h2d_blob", 3);
}

/// A blocking copy through `cuMemcpy` or `cuMemcpy2D` (their direction known from the pointers
/// only) waits for the kernels before it like `cuMemcpyDtoH`: what the host writes into mapped
/// memory after it is recorded before the next kernel, as a host write replay needs
/// (`blockingcopy`: the host writes are the second kernel's input).
#[test]
fn blocking_copies_of_any_direction_complete_earlier_work() {
    let (_tmp, dir) = captured("blockingcopy");
    assert_pass(&dir, 4);
    let n = names_of(&dir);
    let writes = n.iter().filter(|x| *x == "hrrHostMemWrite").count();
    assert!(writes >= 2, "{n:?}");
    assert_mismatch_without(&dir, "hrrHostMemWrite", "h2d_blob", writes - 1);
}

/// Mapped memory a kernel reads only through a texture object over it (`texmapped`): no
/// argument word points into it, yet the object hands it to device code, so the host's writes
/// of each round are recorded before the round's kernel, which replay checks (the kernel copies
/// them out: without them its results differ).
#[test]
fn memory_reached_through_a_texture_object_replays() {
    let (_tmp, dir) = captured("texmapped");
    assert_pass(&dir, 3);
    assert_name_counts(&dir, &[("hrrHostMemWrite", 3)]);
}

/// A 2D memset over mapped memory whose rows have a gap between them (`memsetgap`): the host's
/// bytes in the gap are not overwritten, so they are read (and recorded) before the memset, and
/// the bytes the synchronisation after it sees replay as they were captured.
#[test]
fn memsets_with_gaps_between_rows_keep_the_host_bytes_between() {
    assert_replays_checked(
        "memsetgap",
        &[("hrrHostMemWrite", 1)],
        1,
        ("hrrHostMemWrite", "h2d_blob", 0),
    );
}

/// A blocking download into mapped memory, 1D or one row of a 2D copy (`pitcheddown`): its
/// result is held by the copy's own event, so the synchronisations after it store no check of
/// the same bytes again, and replay checks the copy.
#[test]
fn results_of_blocking_downloads_into_tracked_memory_are_stored_once() {
    for pitched in ["", "1"] {
        let (_tmp, arch) = temp_path("pitcheddown.hrr");
        let env = [("HOSTMEM_APP_PITCHED", pitched)];
        succeeded(fake().capture_env(&arch, "hostmem_app", &["pitcheddown"], &env));
        let dir = pid_dirs(&arch).remove(0);
        assert_name_counts(&dir, &[("hrrHostMemCheck", 0)]);
        assert_pass(&dir, 1);
    }
}

#[test]
fn zero_copy_host_reads_are_checked() {
    let (_tmp, dir) = captured("zerocopy");
    assert_mismatch_without(&dir, "hrrHostMemCheck", "d2h_blob", 0);
}

/// An async, then a blocking D2H copy into registered memory the tracker follows: the bytes of
/// each are recorded once, as the copy's result (checked), not again as a host read of the
/// region after the synchronisation; each result is what replay checks.
#[test]
fn copies_into_tracked_memory_are_recorded_once() {
    assert_replays_checked(
        "regasync",
        &[
            ("hrrMemcpyResult", 1),
            ("cuMemcpyDtoH_v2", 1),
            ("hrrHostMemCheck", 0),
        ],
        2,
        ("hrrMemcpyResult", "d2h_blob", 0),
    );
    let (_tmp, dir) = captured("regasync");
    assert_mismatch_without(&dir, "cuMemcpyDtoH_v2", "d2h_blob", 0);
}

/// simpleStreams' non-streamed loop (`regloop`), its blocking results recorded as digests: the
/// fingerprints of the registered memory they land in are the (fake) GPU's, taken from the
/// copies' sources, and the tracker reads nothing more to know them: each next launch finds
/// no host write there, and replay checks the three results. (The region is read at those
/// launches only with `HRR_CAPTURE_HOSTMEM_READ_ALL=1`: no device code is handed a pointer
/// into it, so by default it is never read: `unreached_tracked_memory_is_not_read_before_work`.)
#[test]
fn results_landing_in_tracked_memory_are_fingerprinted_on_the_gpu() {
    // `wrong`: how the fake's fingerprints are wrong ("off": results stored whole, and the
    // tracker reads what they cover on the host)
    let capture = |wrong: &str| {
        let (tmp, arch) = temp_path("regloop.hrr");
        let digests = if wrong == "off" { "off" } else { "1" };
        let mut env = vec![
            ("HRR_CAPTURE_DIGEST_MIN", digests),
            ("HRR_CAPTURE_HOSTMEM_READ_ALL", "1"),
        ];
        if !wrong.is_empty() {
            env.push(("FAKE_CUDA_FINGERPRINT_WRONG", wrong));
        }
        let o = succeeded(fake().capture_env(&arch, "hostmem_app", &["regloop"], &env));
        let dir = pid_dirs(&arch).remove(0);
        let writes = names_of(&dir)
            .iter()
            .filter(|n| *n == "hrrHostMemWrite")
            .count();
        let (code, v) = replay(&dir);
        assert_eq!(code, 0, "{v}");
        assert_eq!(checks(&v), 3, "{v}");
        let by_digest = if wrong == "off" { 0 } else { 3 };
        assert_eq!(v["d2h_checks"]["by_digest"], by_digest, "{v}");
        (tmp, writes, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    const DISAGREE: &str = "GPU fingerprints of D2H results disagree with the host's";
    // the registered memory's first contents, written by the host before the first launch
    let (_t, host_read, _) = capture("off");
    assert_eq!(host_read, 1);
    let (_t, writes, err) = capture("");
    assert_eq!(writes, host_read, "{err}");
    assert!(!err.contains("GPU fingerprints"), "{err}");
    // Wrong fingerprints but for the first chunk (which capture checks): proof that they are
    // the ones the tracker keeps. The next launch finds the other chunks "changed" and records
    // them as host writes: the bytes the host holds, so replay still passes.
    let (_t, writes, err) = capture("rest");
    assert_eq!(writes, host_read + 2, "{err}");
    // All wrong: the check of the first chunk catches it, once; the host reads them.
    let (_t, writes, err) = capture("all");
    assert_eq!(writes, host_read, "{err}");
    assert_eq!(err.matches(DISAGREE).count(), 1, "{err}");
}

/// An async D2H result recorded at once (a host-memory call claims it), then a kernel on the
/// same stream overwriting the same registered memory: the synchronisation still reads the
/// region (the chunks the result hashed are taken as known only while no later work may have
/// written them), so what the kernel wrote is a check, and replay compares it.
#[test]
fn memory_written_again_behind_a_recorded_result_is_read_at_the_synchronisation() {
    assert_replays_checked(
        "regthen",
        &[("hrrMemcpyResult", 1), ("hrrHostMemCheck", 1)],
        2,
        ("hrrHostMemCheck", "d2h_blob", 0),
    );
}

/// Async H2D copies from memory a kernel may write (device-mapped pinned, managed): their
/// sources are recorded at the call, never read after it (`hrrMemcpySource`), where a kernel
/// queued behind the copy could already have changed them.
#[test]
fn async_uploads_from_memory_kernels_write_are_recorded_at_the_call() {
    let (_tmp, dir) = captured("h2dsrc");
    let events = events_json(&dir);
    let copies: Vec<&serde_json::Value> = all_named(&events, "cuMemcpyHtoDAsync_v2");
    assert_eq!(copies.len(), 2);
    assert!(
        copies.iter().all(|c| c["fields"]["h2d_blob"].is_string()),
        "{copies:?}"
    );
    assert!(!events.iter().any(|e| e["name"] == "hrrMemcpySource"));
}

#[test]
fn managed_memory_replays_with_host_writes_between_kernels() {
    let (_tmp, dir) = assert_replays_checked(
        "managed",
        &[("hrrHostMemWrite", 2), ("hrrHostMemCheck", 3)],
        3,
        ("hrrHostMemWrite", "h2d_blob", 1),
    );
    let n = names_of(&dir);
    assert!(n.iter().any(|x| x == "cuMemAllocManaged"), "{n:?}");
}

/// `concurrent`: the host fills a managed buffer no kernel is given while a kernel runs; at the
/// synchronisation that buffer's change is a host write (replayed, and feeding the next
/// kernel), the kernel's buffer's a result (compared). Taken for a result, the host's buffer
/// would be compared against what replay never wrote: a MISMATCH.
#[test]
fn managed_memory_the_host_computes_into_beside_device_work_is_an_input() {
    let (_tmp, dir) = captured("concurrent");
    let evs = events_json(&dir);
    let allocs: Vec<&serde_json::Value> = evs
        .iter()
        .filter(|e| e["name"] == "cuMemAllocManaged")
        .map(|e| &e["fields"]["dptr"])
        .collect();
    assert_eq!(allocs.len(), 2, "{evs:?}");
    let host_buf = allocs[1];
    let kinds_for = |ptr: &serde_json::Value| -> Vec<String> {
        evs.iter()
            .filter(|e| &e["fields"]["ptr"] == ptr)
            .map(|e| e["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // the host's buffer: only ever written by the host (its first contents, then the task)
    let host = kinds_for(host_buf);
    assert!(
        !host.is_empty() && host.iter().all(|n| n == "hrrHostMemWrite"),
        "{host:?}"
    );
    // the kernel's buffer: results checked after each synchronisation
    let device = kinds_for(allocs[0]);
    assert_eq!(
        device.iter().filter(|n| *n == "hrrHostMemCheck").count(),
        2,
        "{device:?}"
    );
    assert_pass(&dir, 2);
    // what the host computed feeds the second kernel: without it, its result differs
    let writes: Vec<_> = evs
        .iter()
        .filter(|e| e["name"] == "hrrHostMemWrite")
        .collect();
    let last = writes
        .iter()
        .rposition(|e| &e["fields"]["ptr"] == host_buf)
        .unwrap();
    assert_mismatch_without(&dir, "hrrHostMemWrite", "h2d_blob", last);
}

/// `streams`: a kernel on each of two streams writes a managed buffer of its own, then each
/// stream is synchronised in turn. A stream's synchronisation says nothing of the other's
/// work, so each buffer is read (and checked) after its own stream's synchronisation; read at
/// the first one, the other's could be half written on a GPU.
#[test]
fn managed_memory_written_on_a_stream_is_read_once_that_stream_completed() {
    let (_tmp, dir) = captured("streams");
    let evs = events_json(&dir);
    let seq_of = |e: &serde_json::Value| e["seq"].as_u64().unwrap();
    let allocs: Vec<&serde_json::Value> = evs
        .iter()
        .filter(|e| e["name"] == "cuMemAllocManaged")
        .map(|e| &e["fields"]["dptr"])
        .collect();
    let syncs: Vec<u64> = evs
        .iter()
        .filter(|e| e["name"] == "cuStreamSynchronize")
        .map(seq_of)
        .collect();
    assert_eq!((allocs.len(), syncs.len()), (2, 2), "{evs:?}");
    let check_of = |ptr: &serde_json::Value| {
        let checks: Vec<u64> = evs
            .iter()
            .filter(|e| e["name"] == "hrrHostMemCheck" && &e["fields"]["ptr"] == ptr)
            .map(seq_of)
            .collect();
        assert_eq!(checks.len(), 1, "{evs:?}");
        checks[0]
    };
    let (a, b) = (check_of(allocs[0]), check_of(allocs[1]));
    assert!(syncs[0] < a && a < syncs[1], "a at #{a}, syncs {syncs:?}");
    assert!(syncs[1] < b, "b at #{b}, syncs {syncs:?}");
    assert_pass(&dir, 2);
}

/// The fake driver faults a kernel still in flight when its memory is unmapped: releasing a
/// stream-ordered free at once (and mapping the next allocation, recorded at the same
/// address) fails this replay with `CUDA_ERROR_ILLEGAL_ADDRESS`; the deferred release passes.
#[test]
fn stream_ordered_frees_and_pools_replay() {
    let (_tmp, arch) = temp_path("async.hrr");
    let out = capture(&arch, "async");
    assert_contains(&out, "reused=1");
    let dir = pid_dirs(&arch).remove(0);
    assert_recorded(
        &events_json(&dir),
        &[
            "cuMemAllocAsync",
            "cuMemFreeAsync",
            "cuDeviceGetDefaultMemPool",
            "cuMemPoolSetAttribute",
            "cuMemPoolCreate",
            "cuMemPoolSetAccess",
            "cuDeviceSetMemPool",
            "cuDeviceGetMemPool",
            "cuMemAllocFromPoolAsync",
            "cuMemPoolTrimTo",
            "cuMemPoolGetAttribute",
            "cuMemPoolDestroy",
        ],
    );
    assert_pass(&dir, 2);
    // The async copy's bytes are in the result event capture recorded when it completed.
    assert_mismatch_without(&dir, "hrrMemcpyResult", "d2h_blob", 0);
}

/// A process that copies no result back (`nocopy`: kernels write device memory that is freed
/// unread): what each allocation held when freed is recorded (`hrrFreeCheck`, the 1 MiB one as
/// the fake GPU's digests) and replay checks it; what the kernels wrote is what it compares.
#[test]
fn what_a_program_frees_unread_is_checked() {
    let (_tmp, arch) = temp_path("nocopy.hrr");
    let env = [("HRR_CAPTURE_DIGEST_MIN", "65536")];
    let o = succeeded(fake().capture_env(&arch, "hostmem_app", &["nocopy"], &env));
    assert_contains(&String::from_utf8_lossy(&o.stdout), "nocopy done");
    let dir = pid_dirs(&arch).remove(0);
    // y and the 1 MiB buffer, then x (freed by the app's main)
    assert_name_counts(&dir, &[("hrrFreeCheck", 3), ("cuMemcpyDtoH_v2", 0)]);
    let (code, v) = replay(&dir);
    assert_eq!(
        (code, &v["verdict"]),
        (0, &serde_json::json!("PASS")),
        "{v}"
    );
    assert_eq!(checks(&v), 3, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], 1, "{v}");
    assert_eq!(v["d2h_checks"]["at_free"], 3, "{v}");
    let (_, out, _) = fake().replay(&dir, &[]);
    assert_contains(&out, "0 fail, 0 skipped, 1 by digest, 3 at frees\n");
    // y's bytes as recorded are 2x + 2x + y; zeroed, replay's y no longer matches
    assert_mismatch_without(&dir, "hrrFreeCheck", "d2h_blob", 0);
}

/// VMM memory unmapped unread (two mappings side by side, one `cuMemUnmap`) is checked like a
/// free: its 4 MiB, bytes a kernel wrote and bytes it left as they were, compared at replay; a
/// mapping the device was never given access to is not read.
#[test]
fn what_a_program_unmaps_unread_is_checked() {
    let (_tmp, arch) = temp_path("vmm.hrr");
    let o = succeeded(fake().capture_env(&arch, "hostmem_app", &["vmmnocopy"], &[]));
    assert_contains(&String::from_utf8_lossy(&o.stdout), "vmmnocopy done");
    let dir = pid_dirs(&arch).remove(0);
    // the mapping never opened to the device is not read (on a GPU the read could fault)
    assert_name_counts(&dir, &[("hrrFreeCheck", 1), ("cuMemUnmap", 2)]);
    let ev = events_json(&dir)
        .into_iter()
        .find(|e| e["name"] == "hrrFreeCheck")
        .unwrap();
    assert_eq!(ev["fields"]["bytes"], 4u64 << 20, "{ev}");
    let (code, v) = replay(&dir);
    assert_eq!(
        (code, &v["verdict"]),
        (0, &serde_json::json!("PASS")),
        "{v}"
    );
    assert_eq!(v["d2h_checks"]["at_free"], 1, "{v}");
    assert_eq!(v["d2h_checks"]["by_digest"], 0, "{v}");
    assert_mismatch_without(&dir, "hrrFreeCheck", "d2h_blob", 0);
}

/// At most 64 frees are checked per process, and capture says when it stops checking; none with
/// `HRR_CAPTURE_FREE_CHECKS=0`.
#[test]
fn frees_beyond_the_cap_are_not_checked_and_capture_says_so() {
    let (_tmp, arch) = temp_path("manyfrees.hrr");
    let o = succeeded(fake().capture_env(&arch, "hostmem_app", &["manyfrees"], &[]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_contains(&err, "64 freed allocations recorded for replay to check");
    let dir = pid_dirs(&arch).remove(0);
    assert_name_counts(&dir, &[("hrrFreeCheck", 64), ("cuMemFree_v2", 70)]);
    let (code, v) = replay(&dir);
    assert_eq!((code, checks(&v)), (0, 64), "{v}");
    assert_eq!(v["d2h_checks"]["at_free"], 64, "{v}");
    // HRR_CAPTURE_FREE_CHECKS=0: none
    let (_tmp, arch) = temp_path("off.hrr");
    let off = [("HRR_CAPTURE_FREE_CHECKS", "0")];
    succeeded(fake().capture_env(&arch, "hostmem_app", &["manyfrees"], &off));
    assert_name_counts(
        &pid_dirs(&arch)[0],
        &[("hrrFreeCheck", 0), ("cuMemFree_v2", 70)],
    );
}

/// Once a process copied a result back, its frees are not checked (the results are).
#[test]
fn frees_are_not_checked_after_a_result_was_copied_back() {
    let (_tmp, dir) = captured("table");
    let names = names_of(&dir);
    let count = |n: &str| names.iter().filter(|x| *x == n).count();
    assert!(count("cuMemcpyDtoH_v2") > 0, "{names:?}");
    assert!(count("cuMemFree_v2") >= 2, "{names:?}");
    assert_eq!(count("hrrFreeCheck"), 0, "{names:?}");
}

/// A freed buffer the program wrote only half of (`halfwritten`): the other half holds what the
/// memory held before (the fake's `FAKE_CUDA_ALLOC_FILL` byte: 0x11 when recorded, 0x22 at
/// replay), stable from replay to replay. The recheck's replays fill each allocation they make
/// with a byte of their own (`--fill-fresh`), so those bytes vary between them and are told
/// apart as not the program's: PASS naming exactly the unwritten half; MISMATCH with --strict.
#[test]
fn bytes_the_program_never_wrote_are_told_apart_from_its_results() {
    let (_tmp, arch) = temp_path("halfwritten.hrr");
    let env = [("FAKE_CUDA_ALLOC_FILL", "0x11")];
    succeeded(fake().capture_env(&arch, "hostmem_app", &["halfwritten"], &env));
    let dir = pid_dirs(&arch).remove(0);
    assert_name_counts(&dir, &[("hrrFreeCheck", 1)]);
    let at_replay = [("FAKE_CUDA_ALLOC_FILL", "0x22")];
    let (code, v) = fake().replay_json_env(&dir, &[], &at_replay);
    assert_eq!(
        (code, &v["verdict"]),
        (0, &serde_json::json!("PASS")),
        "{v}"
    );
    assert_contains(
        v["verdict_line"].as_str().unwrap(),
        "131072 of 262144 bytes nondeterministic",
    );
    let (code, v) = fake().replay_json_env(&dir, &["--strict"], &at_replay);
    assert_eq!(
        (code, &v["verdict"]),
        (1, &serde_json::json!("MISMATCH")),
        "{v}"
    );
}
