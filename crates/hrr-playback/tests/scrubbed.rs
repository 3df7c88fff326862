//! Replay of a scrubbed archive, on the CPU against the fake `libcuda.so.1`: a D2H result whose
//! recorded blob had a range redacted (as `hrr-pack scrub` leaves it: new content, new id, every
//! event repointed, `redactions.json`) is counted as skipped when it differs only there, and
//! still fails when it differs elsewhere.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first) and a C compiler, like `roundtrip.rs`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod common;
use common::*;

use hrr_archive::blobs::blob_path;
use hrr_archive::redact::{self, ObjectKind, RedactedObject, Redaction, RedactionsFile};
use hrr_archive::ObjectId;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_fake_cuda("-scrub"))
}

fn replay(dir: &Path, extra: &[&str]) -> (i32, String) {
    let o = bounded(env!("CARGO_BIN_EXE_hrr-playback"))
        .arg(dir)
        .args(extra)
        .arg("--no-progress")
        .env("LD_LIBRARY_PATH", fake())
        .output()
        .expect("run hrr-playback");
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// The first D2H event's seq and blob id.
fn first_d2h(dir: &Path) -> (u64, ObjectId) {
    let o = bounded(env!("CARGO_BIN_EXE_hrr-playback"))
        .arg(dir)
        .args(["--events", "--json"])
        .output()
        .unwrap();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let e: serde_json::Value = serde_json::from_str(l).unwrap();
        if let Some(id) = e["fields"]["d2h_blob"].as_str() {
            return (e["seq"].as_u64().unwrap(), ObjectId::from_hex(id).unwrap());
        }
    }
    panic!("no D2H event");
}

/// Do to `dir` what a scrub does when it redacts `range` of blob `old`.
fn scrub_range(dir: &Path, old: ObjectId, range: std::ops::Range<usize>) -> ObjectId {
    let mut bytes = std::fs::read(blob_path(dir, &old)).unwrap();
    for b in &mut bytes[range.clone()] {
        *b = b'X';
    }
    let new = ObjectId::of(&bytes);
    let p = blob_path(dir, &new);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, &bytes).unwrap();
    std::fs::remove_file(blob_path(dir, &old)).unwrap();
    let events = dir.join("events.bin");
    let tmp = dir.join(".events.bin.new.tmp");
    let renames: HashMap<ObjectId, ObjectId> = [(old, new)].into();
    let rw = redact::rewrite_events(&events, &tmp, &renames, &[]).unwrap();
    assert!(rw.references >= 1);
    std::fs::rename(&tmp, &events).unwrap();
    let mut file = RedactionsFile {
        version: redact::REDACTIONS_VERSION,
        fingerprint: redact::FINGERPRINT_SCHEME.into(),
        key_id: "test".into(),
        ..Default::default()
    };
    file.objects.insert(
        new.to_hex(),
        RedactedObject {
            kind: ObjectKind::Blob,
            size: bytes.len() as u64,
            ranges: vec![Redaction {
                offset: range.start as u64,
                length: range.len() as u64,
                rule: "generic-secret".into(),
                encoding: "ascii".into(),
                fingerprint: "fp:00000000000000000000000000000000".into(),
            }],
        },
    );
    redact::write_redactions(dir, &file).unwrap();
    new
}

#[test]
fn redacted_ranges_are_skipped_not_failed_and_other_damage_still_fails() {
    let (_tmp, arch) = temp_path("run.hrr");
    let st = bounded(bin_dir().join("hrr-capture"))
        .arg("-o")
        .arg(&arch)
        .arg("--")
        .arg(fake().join("driver_app"))
        .env("LD_LIBRARY_PATH", fake())
        .env("HRR_CAPTURE_MIN_FREE_MB", "1")
        .output()
        .unwrap();
    assert!(st.status.success());
    let dir = std::fs::read_dir(&arch)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("pid-"))
        .unwrap();
    let (seq, old) = first_d2h(&dir);
    let new = scrub_range(&dir, old, 5..10);
    assert_eq!(first_d2h(&dir), (seq, new), "the event names the new blob");

    let (code, out) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}");
    assert_contains(&out, "Note: scrubbed archive");
    assert_contains(&out, ", 0 fail, 1 skipped");
    let (code, out) = replay(&dir, &["--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["d2h_checks"]["skipped_redacted"], 1);

    // a difference outside the redacted range is still a failure, named
    let p = blob_path(&dir, &new);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let (code, out) = replay(&dir, &[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, &format!("event #{seq} cuMemcpyDtoH"));
    assert_contains(&out, "first at offset 20");
}
