//! `--extract` and `--replace-kernel` on the CPU, against the fake `libcuda.so.1`: a launch cut
//! out of the multi-kernel `driver_app` capture replays alone (PASS, smaller, provenance in
//! `--info`), fails when its snapshot is corrupted, reaches fewer bytes with `--extract-reach
//! args`, keeps a recorded fault as its expected outcome (REPRODUCED); a replacement kernel
//! computing something else fails the checks, an equivalent one passes and is counted, and one
//! taking other arguments is refused before the first launch.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first) and a C compiler.

use std::path::{Path, PathBuf};

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-extract")
}

/// A capture of `driver_app args` in a new temporary folder: the folder (kept while it lives)
/// and the archive.
fn captured(args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let arch = tmp
        .path()
        .join(format!("{}.hrr", args.first().unwrap_or(&"run")));
    let o = fake().capture(&arch, "driver_app", args);
    assert!(
        args.contains(&"fault") || o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (tmp, arch)
}

/// `--extract what -o out extra --json`: the extraction's JSON object.
fn extract(arch: &Path, what: &str, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--extract", what, "-o", out.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = fake().replay(arch, &args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    serde_json::from_str(stdout.trim()).unwrap()
}

/// A capture of `driver_app` with `what` extracted from it into `file` beside it, which must
/// hold launches of `kernel` only: the folder, the capture, the extracted archive and the
/// extraction's JSON object.
fn extracted(
    what: &str,
    file: &str,
    kernel: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf, serde_json::Value) {
    let (tmp, arch) = captured(&[]);
    let small = tmp.path().join(file);
    let x = extract(&arch, what, &small, &[]);
    assert_eq!(x["kernels"], serde_json::json!([kernel]), "{x}");
    (tmp, arch, small, x)
}

/// Replay of `arch` with `args` passes with at least one D2H check passed: its output.
fn assert_passes_checked(arch: &Path, args: &[&str]) -> String {
    let out = fake().replay_ok(arch, args);
    assert!(
        out.contains("[HRR] PASS") && checks_passed(&out) > 0,
        "{out}"
    );
    out
}

/// Replay of `arch` with `args` fails, and its error output says `why`.
fn assert_refused(arch: &Path, args: &[&str], why: &str) {
    let (code, _, err) = fake().replay(arch, args);
    assert_ne!(code, 0);
    assert_contains(&err, why);
}

/// Bytes of the files under `p`.
fn tree_bytes(p: &Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| tree_bytes(&e.unwrap().path()))
            .sum()
    } else {
        std::fs::metadata(p).unwrap().len()
    }
}

/// The `N pass` of the `D2H checks` line.
fn checks_passed(out: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with("[HRR] D2H checks"))
        .unwrap_or_else(|| panic!("no D2H checks line in {out}"));
    line.split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn an_extracted_launch_replays_alone_is_smaller_and_says_where_it_came_from() {
    let (_tmp, arch, small, x) = extracted("gather", "gather.hrr", "gather");
    assert!(x["snapshot_bytes"].as_u64().unwrap() > 0, "{x}");
    assert!(x["d2h_checks"].as_u64().unwrap() > 0, "{x}");
    assert!(tree_bytes(&small) < tree_bytes(&arch));

    let out = fake().replay_ok(&small, &[]);
    assert_contains(&out, "[HRR] Kernels launched: 1");
    assert_contains(&out, "[HRR] PASS");
    assert!(
        checks_passed(&out) >= x["d2h_checks"].as_u64().unwrap(),
        "{out}"
    );

    // Provenance in --info (text and JSON).
    let (code, info, err) = fake().replay(&small, &["--info"]);
    assert_eq!(code, 0, "{err}");
    let line = info
        .lines()
        .find(|l| l.starts_with("Extracted from:"))
        .unwrap();
    assert!(
        line.contains("run.hrr") && line.contains("(gather)") && line.contains("reach all"),
        "{line}"
    );
    let pid = &pid_dirs(&small)[0];
    let (_, v) = fake().replay_json(pid, &["--info"]);
    assert_eq!(v["extracted_from"]["segment"], "gather");
    assert_eq!(v["extracted_from"]["reach"], "all");
    // Only the code object the launch runs (the library; not the PTX module).
    assert_eq!(v["code_objects"], 1, "{v}");
    // The source capture has no provenance.
    let (_, v) = fake().replay_json(&pid_dirs(&arch)[0], &["--info"]);
    assert!(v.get("extracted_from").is_none());
    assert_eq!(v["code_objects"], 2, "{v}");

    // An existing output is never overwritten.
    assert_refused(
        &arch,
        &["--extract", "gather", "-o", small.to_str().unwrap()],
        "exists",
    );
}

#[test]
fn a_corrupted_snapshot_makes_the_extracted_launch_fail() {
    // The second launch of axpy: y = a*x + y over the state the first one left.
    let (tmp, arch, small, x) = extracted("axpy#2", "axpy.hrr", "axpy");
    assert_eq!(x["prefix_mismatches"], 0, "{x}");
    fake().replay_ok(&small, &[]);
    // Zero every snapshot blob written as an H2D copy (sizes kept).
    let pid = &pid_dirs(&small)[0];
    let mut zeroed = 0;
    for e in events_json(&small) {
        if e["name"] == "cuMemcpyHtoD_v2" {
            zero_blob(pid, e["fields"]["h2d_blob"].as_str().unwrap());
            zeroed += 1;
        }
    }
    assert!(zeroed > 0);
    let (code, out, err) = fake().replay(&small, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert_contains(&out, "MISMATCH");
    // A source whose replay before the segment already differs: the extraction says so.
    let events = events_json(&arch);
    let first_d2h = first_named(&events, "cuMemcpyDtoH_v2");
    zero_blob(
        &pid_dirs(&arch)[0],
        first_d2h["fields"]["d2h_blob"].as_str().unwrap(),
    );
    let x = extract(&arch, "axpy#2", &tmp.path().join("again.hrr"), &[]);
    assert_eq!(x["prefix_mismatches"], 1, "{x}");
}

#[test]
fn reach_args_snapshots_fewer_bytes_and_still_passes() {
    let (tmp, arch) = captured(&[]);
    let all = extract(&arch, "gather", &tmp.path().join("all.hrr"), &[]);
    let args_out = tmp.path().join("args.hrr");
    let args = extract(&arch, "gather", &args_out, &["--extract-reach", "args"]);
    let (a, b) = (
        all["snapshot_bytes"].as_u64().unwrap(),
        args["snapshot_bytes"].as_u64().unwrap(),
    );
    assert!(0 < b && b < a, "args {b} bytes, all {a} bytes");
    assert_passes_checked(&args_out, &[]);
}

#[test]
fn a_reach_over_the_limit_and_a_non_launch_are_refused() {
    let (tmp, arch) = captured(&[]);
    let out = tmp.path().join("big.hrr");
    let o = out.to_str().unwrap();
    assert_refused(
        &arch,
        &["--extract", "gather", "-o", o, "--extract-max-bytes", "1K"],
        "more than --extract-max-bytes 1024",
    );
    assert!(!out.exists(), "a refused extraction leaves nothing");
    assert_refused(&arch, &["--extract", "1", "-o", o], "not a kernel launch");
    assert_refused(&arch, &["--extract", "axpy#9", "-o", o], "2 launch(es)");
}

#[test]
fn a_faulting_launch_is_extracted_with_its_fault_and_reproduces_alone() {
    let (tmp, arch) = captured(&["fault"]);
    let small = tmp.path().join("fault-small.hrr");
    let x = extract(&arch, "fault", &small, &[]);
    assert_eq!(x["fault"]["code"], 700, "{x}");
    assert_eq!(x["d2h_checks"], 0, "{x}");
    let out = fake().replay_ok(&small, &[]);
    assert_contains(&out, "REPRODUCED");
    // A fixed kernel (one that does not fault) in place of the faulting one: PASS, said why, in
    // the whole capture and in the small archive.
    let fixed = tmp.path().join("fixed.ptx");
    std::fs::write(&fixed, ".entry fault =noop\n").unwrap();
    let fix = format!("fault={}", fixed.display());
    for target in [&arch, &small] {
        let out = fake().replay_ok(target, &["--replace-kernel", &fix]);
        assert_contains(&out, "[HRR] PASS");
        assert_contains(&out, "did not happen with the replaced kernel");
    }
    // Its recorded fault removed, it no longer reproduces: the fault is what the archive expects.
    let (code, out, _) = fake().replay(&small, &["--kernel-filter", "nothing-matches"]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "NOT REPRODUCED");
}

#[test]
fn replaced_kernels_change_the_result_pass_when_equivalent_and_are_counted() {
    let (tmp, arch) = captured(&[]);
    let file = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        format!("axpy={}", p.display())
    };
    let other = file("axmy.ptx", ".entry axpy =axmy\n");
    let same = file("axpy.ptx", ".entry axpy\n");
    let bad = file("bad.ptx", ".entry axpy =fill_u32\n");

    let (code, out, err) = fake().replay(&arch, &["--replace-kernel", &other]);
    assert_eq!(code, 1, "{out}{err}");
    assert_contains(&out, "MISMATCH");
    assert_contains(&out, "Replaced kernel : axpy by");
    assert_contains(&out, "(2 launches)");

    assert_passes_checked(&arch, &["--replace-kernel", &same]);
    let (code, v) = fake().replay_json(&arch, &["--replace-kernel", &same]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["replaced_kernels"][0]["kernel"], "axpy");
    assert_eq!(v["replaced_kernels"][0]["launches"], 2);

    let (code, out, err) = fake().replay(&arch, &["--replace-kernel", &bad]);
    assert_ne!(code, 0);
    assert!(
        err.contains("argument sizes differ") && err.contains("4@0 8@8 8@16 4@24"),
        "{err}"
    );
    assert!(
        !out.contains("Kernels launched"),
        "refused before the first launch: {out}"
    );

    // In an extracted launch too.
    let small = tmp.path().join("axpy.hrr");
    extract(&arch, "axpy", &small, &[]);
    let (code, out, _) = fake().replay(&small, &["--replace-kernel", &other]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "(1 launch)");
}

#[test]
fn a_launch_captured_into_a_graph_is_refused_but_a_range_with_its_graph_extracts() {
    let (tmp, arch) = captured(&["graph"]);
    let out = tmp.path().join("graph-small.hrr");
    let o = out.to_str().unwrap();
    assert_refused(
        &arch,
        &["--extract", "axpy", "-o", o],
        "captured into a CUDA graph",
    );
    // From the stream capture's start to the graph's launches.
    let events = events_json(&arch);
    // the three launches of the captured graph (each after the host bytes it reads)
    let third = events
        .iter()
        .filter(|e| e["name"] == "cuGraphLaunch")
        .nth(2)
        .unwrap();
    let (a, b) = (
        first_named(&events, "cuStreamBeginCapture_v2")["seq"]
            .as_u64()
            .unwrap(),
        third["seq"].as_u64().unwrap(),
    );
    let x = extract(&arch, &format!("{a}..{b}"), &out, &[]);
    assert!(x["d2h_checks"].as_u64().unwrap() > 0, "{x}");
    let out = fake().replay_ok(&out, &[]);
    assert_contains(&out, "[HRR] Graphs launched : 3");
    assert_contains(&out, "[HRR] PASS");
}

#[test]
fn a_launch_on_mapped_or_managed_memory_extracts_with_the_hosts_writes() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in ["zerocopy", "managed"] {
        let arch = tmp.path().join(format!("{mode}.hrr"));
        fake().captured(&arch, "hostmem_app", &[mode]);
        let small = tmp.path().join(format!("{mode}-axpy.hrr"));
        let x = extract(&arch, "axpy#2", &small, &[]);
        assert!(x["d2h_checks"].as_u64().unwrap() > 0, "{x}");
        // The host's writes into host-visible memory before the launch are kept (that memory is
        // not in the snapshot).
        let kept = events_json(&small)
            .iter()
            .filter(|e| e["name"].as_str().unwrap().starts_with("hrrHost"))
            .count();
        assert!(kept > 0, "{mode}: no host writes kept");
        assert_passes_checked(&small, &[]);
    }
}
