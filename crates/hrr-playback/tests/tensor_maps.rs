//! Hopper TMA descriptors (tensor maps), captured and replayed on the CPU against the fake
//! `libcuda.so.1` (`tests/fake-cuda/apps/tma_app.c`): a map by value, after
//! `cuTensorMapReplaceAddress`, copied to device memory, an im2col map, and a map in a graph's
//! kernel node. The fake encodes
//! the address so that no 8-byte word of the map holds it: only encoding the map again at the
//! translated address lets its kernels read the right memory when allocations move.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first) and a C compiler.

use std::path::PathBuf;

mod common;
use common::*;

/// The D2H results `tma_app` reads back.
const CHECKS: u64 = 5;

/// Another address space for replay's allocations (with `--no-placement`: every pointer moves).
const ELSEWHERE: (&str, &str) = ("FAKE_CUDA_VA_BASE", "0x7f3000000000");

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-tma")
}

/// `tma_app` captured into `run.hrr` of a new temporary folder: the folder (kept alive) and
/// the archive.
fn captured() -> (tempfile::TempDir, PathBuf) {
    let (tmp, arch) = temp_path("run.hrr");
    let o = succeeded(fake().capture_env(&arch, "tma_app", &[], &[]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.ends_with("tma_app: OK\n"), "{out}");
    (tmp, arch)
}

#[test]
fn encode_calls_are_recorded_with_the_bytes_they_made() {
    let (_tmp, arch) = captured();
    let events = events_json(&arch);
    let named = |call: &str| {
        events
            .iter()
            .filter(|e| e["name"] == call)
            .collect::<Vec<_>>()
    };
    let tiled = named("cuTensorMapEncodeTiled");
    assert_eq!(tiled.len(), 1, "{events:?}");
    let f = &tiled[0]["fields"];
    assert_eq!(
        (f["rank"].as_u64(), f["dtype"].as_i64()),
        (Some(2), Some(7)),
        "{f}"
    );
    // 128 bytes of map (hex), two u64 dimensions, one stride, two u32 box sizes
    let hex_len = |k: &str| f[k].as_str().map(str::len);
    assert_eq!(hex_len("map"), Some(256), "{f}");
    assert_eq!(
        (hex_len("dims"), hex_len("strides"), hex_len("box_dim")),
        (Some(32), Some(16), Some(16)),
        "{f}"
    );
    assert!(f["map"].as_str().unwrap().starts_with("46544d31"), "{f}"); // "FTM1"
    let im2col = named("cuTensorMapEncodeIm2col");
    assert_eq!(im2col.len(), 1);
    let f = &im2col[0]["fields"];
    assert_eq!(
        (f["im2col"].as_u64(), f["channels"].as_u64()),
        (Some(1), Some(8)),
        "{f}"
    );
    assert_eq!(f["lower"].as_str().map(str::len), Some(8), "{f}"); // rank 3: one corner entry
    let replaced = named("cuTensorMapReplaceAddress");
    assert_eq!(replaced.len(), 1);
    let f = &replaced[0]["fields"];
    assert_ne!(f["before"], f["map"], "{f}");
}

#[test]
fn maps_are_encoded_again_where_allocations_moved() {
    let (_tmp, arch) = captured();
    // at the recorded addresses, and with every allocation elsewhere
    for (extra, env) in [
        (&[][..], &[][..]),
        (&["--no-placement"][..], &[ELSEWHERE][..]),
    ] {
        let (code, v) = fake().replay_json_env(&arch, extra, env);
        assert_eq!(code, 0, "{extra:?}: {v}");
        assert_eq!(v["result"], "PASS", "{v}");
        assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
        assert_eq!(v["skipped_calls_total"], 0, "{v}");
    }
}

#[test]
fn a_map_that_cannot_be_encoded_again_is_named_and_its_kernel_reads_the_recorded_address() {
    // The control for the test above: without the encode at replay, the maps still hold the
    // recorded addresses, where the moved replay has nothing.
    let (_tmp, arch) = captured();
    let env = [ELSEWHERE, ("FAKE_CUDA_FAIL", "cuTensorMapEncodeTiled")];
    let (code, v) = fake().replay_json_env(&arch, &["--no-placement"], &env);
    assert_ne!(code, 0, "{v}");
    assert_eq!(v["result"], "FAIL", "{v}");
    let skipped = v["skipped_calls"].to_string();
    assert!(
        skipped.contains("cuTensorMapEncodeTiled")
            && skipped.contains("could not be encoded again"),
        "{v}"
    );
    // at the recorded addresses the recorded bytes serve: the failed encode changes nothing
    let env = [("FAKE_CUDA_FAIL", "cuTensorMapEncodeTiled")];
    let (code, v) = fake().replay_json_env(&arch, &[], &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
}
