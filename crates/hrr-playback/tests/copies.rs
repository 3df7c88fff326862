//! 2D/3D copies, CUDA arrays, mipmapped arrays, texture and surface objects, and stream memory
//! operations, captured and replayed on the CPU against the fake `libcuda.so.1`
//! (`tests/fake-cuda/apps/copies_app.c`).
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first) and a C compiler.

use std::path::{Path, PathBuf};

mod common;
use common::*;

/// The D2H results `copies_app` reads back (2D x3, 2D memsets, 3D, array 2D, texture, surface,
/// 1D array x2, mipmap level, mipmap texture, stream values).
const CHECKS: u64 = 13;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-copies")
}

/// `copies_app` captured, with texture/surface object values starting at `object_base`, into
/// `run.hrr` of a new temporary folder: the folder (kept alive) and the archive.
fn captured(object_base: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, arch) = temp_path("run.hrr");
    let env = [("FAKE_CUDA_OBJECT_BASE", object_base)];
    let o = succeeded(fake().capture_env(&arch, "copies_app", &[], &env));
    assert!(
        String::from_utf8_lossy(&o.stdout).ends_with("copies_app: OK\n"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    (tmp, arch)
}

/// Replay `--json` with object values starting at `object_base`: exit code and the report.
fn replay(target: &Path, object_base: &str) -> (i32, serde_json::Value) {
    fake().replay_json_env(target, &[], &[("FAKE_CUDA_OBJECT_BASE", object_base)])
}

/// Capture, zero the H2D blob of the first `call` event, replay: a MISMATCH.
fn zeroed_h2d_blob_of(call: &str) {
    let (_tmp, arch) = captured("0x5000");
    let dir = pid_dirs(&arch).remove(0);
    let ev = events_json(&dir)
        .into_iter()
        .find(|e| e["name"] == call && e["fields"]["h2d_blob"].is_string())
        .unwrap_or_else(|| panic!("no {call} with an H2D blob"));
    let p = blob_path(&dir, ev["fields"]["h2d_blob"].as_str().unwrap());
    let len = std::fs::metadata(&p).unwrap().len() as usize;
    let packed = ev["fields"]["width_bytes"].as_u64().unwrap()
        * ev["fields"]["height"].as_u64().unwrap()
        * ev["fields"]["depth"].as_u64().unwrap();
    assert_eq!(len as u64, packed, "the source is stored packed");
    std::fs::write(&p, vec![0u8; len]).unwrap();
    let (code, v) = replay(&dir, "0x5000");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["result"], "FAIL", "{v}");
    assert_eq!(v["verdict"], "MISMATCH", "{v}");
    assert!(v["d2h_checks"]["fail"].as_u64().unwrap() >= 1, "{v}");
}

#[test]
fn pitched_and_array_copies_replay_with_every_d2h_checked() {
    let (_tmp, arch) = captured("0x5000");
    let events = events_json(&arch);
    assert_recorded(
        &events,
        &[
            "cuMemcpy2D_v2",
            "cuMemcpy2DAsync_v2",
            "cuMemcpy2DUnaligned_v2",
            "cuMemcpy3D_v2",
            "cuMemcpy3DAsync_v2",
            "cuArrayCreate_v2",
            "cuArray3DCreate_v2",
            "cuMemcpyHtoA_v2",
            "cuMemcpyAtoA_v2",
            "cuMemcpyAtoD_v2",
            "cuMemcpyDtoA_v2",
            "cuMemcpyAtoH_v2",
            "cuMemcpyAtoHAsync_v2",
            "cuMipmappedArrayCreate",
            "cuMipmappedArrayGetLevel",
            "cuTexObjectCreate",
            "cuSurfObjectCreate",
            "cuTexObjectDestroy",
            "cuSurfObjectDestroy",
            "cuArrayDestroy",
            "cuMipmappedArrayDestroy",
        ],
    );
    // A unified destination the driver calls host memory is a D2H with its result recorded.
    let unified = first_named(&events, "cuMemcpy2DAsync_v2");
    assert_eq!(unified["fields"]["dst_type"], 4);
    assert_eq!(unified["fields"]["direction"], 2);
    assert!(unified["fields"]["d2h_blob"].is_string(), "{unified}");

    let (code, v) = replay(&arch, "0x9000");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"], "PASS", "{v}");
    assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
}

#[test]
fn two_d_memsets_are_recorded_and_replayed() {
    let (_tmp, arch) = captured("0x5000");
    let events = events_json(&arch);
    assert_recorded(&events, &["cuMemsetD2D32Async", "cuMemsetD2D8_v2"]);
    let m = first_named(&events, "cuMemsetD2D32Async");
    let f = &m["fields"];
    assert_eq!(
        (&f["value"], &f["element_bytes"], &f["width"], &f["height"]),
        (
            &serde_json::json!(0xabad1deau32),
            &serde_json::json!(4),
            &serde_json::json!(11),
            &serde_json::json!(6)
        ),
        "{m}"
    );
    assert!(f["pitch"].as_u64().unwrap() >= 13 * 4, "{m}");
    let b = first_named(&events, "cuMemsetD2D8_v2");
    assert_eq!(
        (&b["fields"]["value"], &b["fields"]["element_bytes"]),
        (&serde_json::json!(0x11), &serde_json::json!(1)),
        "{b}"
    );
    // The copy after them reads what they wrote: a replay that skipped them fails that check.
    let (code, v) = replay(&arch, "0x5000");
    assert_eq!(
        (code, &v["verdict"]),
        (0, &serde_json::json!("PASS")),
        "{v}"
    );
    assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

/// A call capture passed through without recording it (no table row: the manifest counts it)
/// that writes device memory is named before replay and in the verdict, never a bare PASS;
/// a query passed through is not.
#[test]
fn device_writes_passed_through_unrecorded_are_named() {
    let (_tmp, arch) = captured("0x5000");
    let dir = pid_dirs(&arch).remove(0);
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["passthrough_calls"]["cuMemcpy3DPeer_v2"] = 2.into();
    m["passthrough_calls"]["cuDeviceGetP2PAttribute"] = 40.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let (code, v) = replay(&dir, "0x5000");
    assert_eq!(
        (code, &v["verdict"]),
        (0, &serde_json::json!("PASS")),
        "{v}"
    );
    assert_eq!(
        v["unreproducible_calls"],
        serde_json::json!([{
            "call": "cuMemcpy3DPeer_v2",
            "first_seq": null,
            "count": 2,
            "why": "capture passed it through without recording it (no table row); it writes device memory"
        }]),
        "{v}"
    );
    let line = v["verdict_line"].as_str().unwrap();
    assert!(
        line.starts_with("PASS (2 state-changing calls not reproducible, first: cuMemcpy3DPeer_v2: capture passed it through"),
        "{line}"
    );
    let (_, out, _) = fake().replay_env(&dir, &[], &[("FAKE_CUDA_OBJECT_BASE", "0x5000")]);
    assert!(
        out.contains(
            "[HRR] Not reproducible: cuMemcpy3DPeer_v2 (2 calls): capture passed it through"
        ),
        "{out}"
    );
    // --info lists both and says which writes device memory
    let (code, info, _) = fake().replay(&dir, &["--info"]);
    assert_eq!(code, 0, "{info}");
    assert!(info.contains("cuDeviceGetP2PAttribute"), "{info}");
    let line =
        "  Of these, writing device memory (replay cannot reissue them): cuMemcpy3DPeer_v2\n";
    assert!(info.contains(line), "{info}");
}

#[test]
fn stream_values_are_written_and_waited_for_again_at_replay() {
    let (_tmp, arch) = captured("0x5000");
    let events = events_json(&arch);
    let names = [
        "cuStreamWriteValue32_v2",
        "cuStreamWriteValue64_v2",
        "cuStreamWaitValue32_v2",
        "cuStreamWaitValue64_v2",
    ];
    assert_recorded(&events, &names);
    let write = first_named(&events, "cuStreamWriteValue64_v2");
    assert_eq!(write["fields"]["value"], 0x1122334455667788u64, "{write}");
    let wait = first_named(&events, "cuStreamWaitValue32_v2");
    assert_eq!(wait["fields"]["value"], 0x600dcafeu64, "{wait}");
    assert_eq!(wait["fields"]["flags"], 1, "{wait}");
    // The values come back only if replay writes them (the fake also fails a wait whose
    // condition does not hold: a replay that skipped the writes stops at the first wait).
    let (code, v) = replay(&arch, "0x5000");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

#[test]
fn a_zeroed_2d_source_is_a_mismatch() {
    zeroed_h2d_blob_of("cuMemcpy2D_v2");
}

#[test]
fn a_zeroed_3d_source_is_a_mismatch() {
    zeroed_h2d_blob_of("cuMemcpy3D_v2");
}

#[test]
fn a_zeroed_array_source_is_a_mismatch() {
    zeroed_h2d_blob_of("cuMemcpyHtoA_v2");
}

#[test]
fn texture_and_surface_kernels_pass_with_substituted_object_values() {
    let (_tmp, arch) = captured("0x5000");
    let events = events_json(&arch);
    let value = |call: &str| {
        let v = &events.iter().find(|e| e["name"] == call).unwrap()["fields"]["object"];
        u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    assert_eq!(value("cuTexObjectCreate"), 0x5000);
    assert_eq!(value("cuSurfObjectCreate"), 0x5001);
    // The kernels receive the recorded values in their arguments.
    let tex_launch = events
        .iter()
        .find(|e| e["name"] == "cuLaunchKernel" && e["fields"]["kernel"] == "tex_fetch")
        .unwrap();
    assert!(
        tex_launch["fields"]["args"]
            .as_str()
            .unwrap()
            .starts_with("0050000000000000"),
        "{tex_launch}"
    );
    // Replay's driver hands out other values (the fake's kernels fail on an unknown object):
    // the arguments are rewritten and the texture and surface results match.
    for base in ["0x5000", "0x7700"] {
        let (code, v) = replay(&arch, base);
        assert_eq!(code, 0, "object base {base}: {v}");
        assert_eq!(v["result"], "PASS", "{v}");
        assert_eq!(v["d2h_checks"]["pass"], CHECKS, "{v}");
    }
}

#[test]
fn without_the_substitution_the_texture_kernel_would_fault() {
    // The control for the test above: the fake driver really rejects a stale object value.
    let (code, out, _) = run({
        let mut c = bounded(fake().dir.join("copies_app"));
        c.env("LD_LIBRARY_PATH", &fake().dir)
            .env("FAKE_CUDA_OBJECT_BASE", "0x5000")
            .env("COPIES_APP_STALE_TEXTURE", "1");
        c
    });
    assert_ne!(code, 0, "{out}");
}
