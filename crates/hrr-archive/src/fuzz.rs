//! The bodies of the fuzz targets (`fuzz/fuzz_targets/reader.rs`: [`fuzz_one`];
//! `fuzz/fuzz_targets/pack.rs`: [`fuzz_pack_one`]), shared with stable-Rust tests that run them
//! over mutated seeds (`tests/fuzz_seeds.rs`, `tests/pack.rs`). Not part of the API.
//!
//! Input: `u16` manifest length (little endian, taken modulo what is left), the manifest bytes,
//! then the events.bin bytes. They are written as one `pid-7/` capture in a fresh temp folder and
//! put through everything that reads untrusted archives: layout resolution, the streaming reader
//! and payload decoding, the summary, manifest parsing, the root index, and repair. Panics are
//! the bugs; so are broken invariants, which are asserted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::{EVENTS_FILE, MANIFEST};
use crate::manifest;
use crate::reader::{EventReader, Recovery};
use crate::repair::{repair_process, RepairOutcome};
use crate::schema::decode_fields;
use crate::{layout, summary};

static RUN: AtomicU64 = AtomicU64::new(0);

/// Build a fuzz input from a manifest and an events.bin.
pub fn fuzz_input(manifest: &[u8], events: &[u8]) -> Vec<u8> {
    let len = manifest.len().min(u16::MAX as usize);
    let mut v = (len as u16).to_le_bytes().to_vec();
    v.extend_from_slice(&manifest[..len]);
    v.extend_from_slice(events);
    v
}

struct TempRoot(PathBuf);

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Read everything once with payloads; the record count and final recovery.
fn read_all(path: &Path) -> crate::Result<(u64, Recovery)> {
    let mut r = EventReader::open(path)?;
    let schema = r.schema().cloned();
    let mut raw = 0u64;
    while let Some(rec) = r.next_raw()? {
        raw += 1;
        if let Some(call) = schema.as_ref().and_then(|s| s.call(rec.header.kind)) {
            if let Ok(fields) = decode_fields(call, &rec.payload) {
                for (_, v) in &fields {
                    let _ = v.to_json();
                    let _ = v.to_string();
                }
            }
        }
    }
    let rec = r.recovery().clone();
    assert_eq!(rec.records, raw, "recovery counts every record delivered");
    assert!(rec.good_len <= r.file_len(), "good_len within the file");
    if rec.complete() {
        assert!(rec.dropped.is_none() && rec.incomplete_marks.is_empty());
    }
    Ok((raw, rec))
}

/// Run one fuzz input. Panics on a bug.
pub fn fuzz_one(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let rest = &data[2..];
    let mlen = (u16::from_le_bytes([data[0], data[1]]) as usize) % (rest.len() + 1);
    let (manifest_bytes, events) = rest.split_at(mlen);

    let root = std::env::temp_dir().join(format!(
        "hrr-fuzz-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _guard = TempRoot(root.clone());
    let dir = root.join(layout::pid_dir_name(7));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let events_path = dir.join(EVENTS_FILE);
    if std::fs::write(&events_path, events).is_err()
        || std::fs::write(dir.join(MANIFEST), manifest_bytes).is_err()
        || std::fs::write(root.join(MANIFEST), manifest_bytes).is_err()
    {
        return;
    }

    let _ = layout::resolve(&root);
    let _ = layout::resolve(&dir);
    let _ = manifest::read_root_manifest(&root);
    let _ = manifest::build_root_index(&root);
    if let Ok(m) = manifest::read_process_manifest(&dir) {
        // whatever parsed must survive a rewrite
        let copy = root.join("copy");
        let _ = std::fs::create_dir(&copy);
        manifest::write_process_manifest(&copy, &m).expect("rewrite a manifest");
        let again = manifest::read_process_manifest(&copy).expect("re-read a rewritten manifest");
        assert_eq!(again.status.pid, m.status.pid);
        assert_eq!(again.extra, m.extra);
    }

    let first = read_all(&events_path);
    if let Ok(s) = summary::summarize(&dir) {
        let (n, _) = first
            .as_ref()
            .expect("summary read what the reader could not");
        assert_eq!(s.events, *n, "summary counts what the reader delivers");
        assert!(s.launches <= s.events);
    }
    // The header-only pass sees the same stream.
    if let Ok(r) = EventReader::open(&events_path) {
        let mut r = r.skip_payloads();
        let mut n = 0u64;
        while let Ok(Some(_)) = r.next_raw() {
            n += 1;
        }
        if let Ok((m, rec)) = &first {
            assert_eq!(n, *m, "skipping payloads changes nothing");
            assert_eq!(r.recovery().good_len, rec.good_len);
        }
    }

    let repaired = repair_process(&dir);
    let Ok((n, rec)) = first else {
        assert!(
            repaired.is_err(),
            "repair of an unreadable events.bin must fail"
        );
        return;
    };
    let outcome = repaired.expect("repair of a readable capture");
    let (n2, rec2) = read_all(&events_path).expect("a repaired capture reads");
    assert!(rec2.clean_trailer(), "repair leaves a clean trailer");
    assert_eq!(rec2.bytes_after_trailer, 0);
    let m = manifest::read_process_manifest(&dir).expect("repair writes a manifest");
    assert_eq!(m.status.event_count, n2);
    // An event naming an object the store lacks: the records before it kept, a mark added.
    let cut = matches!(&outcome, RepairOutcome::Repaired { still_incomplete, .. }
        if still_incomplete.last().is_some_and(|w| w.starts_with("repair: event #")));
    let second = repair_process(&dir).expect("second repair");
    if cut {
        assert!(n2 <= n + 1, "a cut keeps records before it, and its mark");
        let (mark, kept) = rec2.incomplete_marks.split_last().expect("the cut's mark");
        assert!(mark.starts_with("repair: event #"));
        assert!(rec.incomplete_marks.starts_with(kept), "earlier marks kept");
        assert!(!m.status.complete);
        assert!(
            matches!(second, RepairOutcome::Repaired { events, dropped_bytes: 0, .. } if events == n2),
            "a second repair cuts nothing more: {second:?}"
        );
        return;
    }
    assert_eq!(n2, n, "repair keeps every complete record");
    assert_eq!(
        rec2.incomplete_marks, rec.incomplete_marks,
        "repair keeps writer marks"
    );
    assert_eq!(m.status.complete, rec.incomplete_marks.is_empty());
    if let RepairOutcome::AlreadyComplete { events } = outcome {
        assert_eq!(events, n);
    }
    if rec.incomplete_marks.is_empty() {
        assert_eq!(second, RepairOutcome::AlreadyComplete { events: n });
    }
}

/// Body of the pack fuzz target (`fuzz/fuzz_targets/pack.rs`), shared with a stable-Rust test
/// over mutated seeds. `tar` is the decompressed stream of a pack: it is compressed here, so the
/// fuzzer explores the tar and the index rather than zstd's own checks. The pack is listed,
/// verified and unpacked into a fresh temp folder. Errors are expected; panics are the bugs, and
/// so is anything left in the destination after a failed unpack. Not part of the API.
#[cfg(feature = "pack")]
pub fn fuzz_pack_one(tar: &[u8]) {
    use crate::pack::{read_index, unpack};
    use crate::progress::NoProgress;
    use std::fs;
    let Ok(tmp) = tempfile::tempdir() else {
        return;
    };
    let pack = tmp.path().join("f.hrr.tar.zst");
    let Ok(z) = zstd::bulk::compress(tar, 1) else {
        return;
    };
    if fs::write(&pack, z).is_err() {
        return;
    }
    let _ = read_index(&pack);
    let _ = crate::verify::verify_pack(&pack, &NoProgress);
    let dest = tmp.path().join("dest");
    if fs::create_dir(&dest).is_err() {
        return;
    }
    match unpack(&pack, &dest, false, &NoProgress) {
        Ok(out) => {
            assert!(out.starts_with(&dest), "unpacked outside the destination");
            assert_eq!(
                fs::read_dir(&dest).map(|d| d.count()).unwrap_or(0),
                1,
                "exactly the root folder"
            );
            let _ = crate::verify::verify_dir(&out, &NoProgress);
        }
        Err(_) => assert_eq!(
            fs::read_dir(&dest).map(|d| d.count()).unwrap_or(0),
            0,
            "a failed unpack left something behind"
        ),
    }
    assert_eq!(
        fs::read_dir(tmp.path()).map(|d| d.count()).unwrap_or(0),
        2,
        "nothing written beside the pack"
    );
}
