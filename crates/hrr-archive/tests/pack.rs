//! The packed form, verify and the scrub primitives, through the library: round trips, the
//! streaming framing counter against the reader, events.bin rewrites that keep every byte but
//! the ids, and verify findings.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hrr_archive::blobs::{blob_path, CodeKind};
use hrr_archive::framing::{encode_trailer, RECORD_HEADER_LEN};
use hrr_archive::pack::{self, PackError, PackOptions, UnsafeEntry};
use hrr_archive::progress::NoProgress;
use hrr_archive::reader::EventReader;
use hrr_archive::redact::{self, RedactedObject, Redaction, RedactionsFile};
use hrr_archive::schema::{object_fields, CallClass, FieldType, PayloadBuilder, Schema};
use hrr_archive::testkit::{call, cuda_schema};
use hrr_archive::verify::{self, FramingCounter};
use hrr_archive::writer::ProcessWriter;
use hrr_archive::ObjectId;
use proptest::prelude::*;

fn schema() -> Schema {
    use FieldType::*;
    cuda_schema(vec![
        call(
            1,
            "cuModuleLoadData",
            CallClass::Other,
            &[("result", Result), ("code", Code)],
        ),
        call(
            2,
            "cuMemcpyDtoH_v2",
            CallClass::D2h,
            &[
                ("result", Result),
                ("note", Str),
                ("d2h_blob", Blob),
                ("args", Bytes),
            ],
        ),
    ])
}

/// A capture: one code object, `n` blobs each named by an event; optionally an incomplete mark.
fn capture(root: &Path, pid: u32, n: usize, mark: bool) -> Vec<ObjectId> {
    let mut w = ProcessWriter::create(root, pid, 1, &schema()).unwrap();
    let co = w.put_code_object(b"\x7fELF code", CodeKind::Cubin).unwrap();
    let mut p = PayloadBuilder::new();
    p.i32(0).object(Some(co));
    w.events().append(1, 3, p.as_bytes()).unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = w
            .put_blob(format!("blob number {i} ").repeat(100 + i).as_bytes())
            .unwrap();
        ids.push(id);
        let mut p = PayloadBuilder::new();
        p.i32(0)
            .str(&"x".repeat(i))
            .object(Some(id))
            .bytes(&[i as u8; 5]);
        w.events().append(2, 3, p.as_bytes()).unwrap();
    }
    if mark {
        w.events().mark_incomplete("disk nearly full").unwrap();
    }
    w.finish().unwrap();
    ids
}

/// `capture(archive, 10, n, mark)` of an archive `r.hrr` in a fresh folder (keep it alive): the
/// folder, the archive and the ids `capture` returns.
fn capture_in_temp(n: usize, mark: bool) -> (tempfile::TempDir, PathBuf, Vec<ObjectId>) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("r.hrr");
    let ids = capture(&src, 10, n, mark);
    (t, src, ids)
}

#[test]
fn library_round_trip_and_index() {
    let (t, src, _ids) = capture_in_temp(5, false);
    capture(&src, 11, 2, true);
    let out = t.path().join("r.hrr.tar.zst");
    let o = pack::pack_to_file(&src, Some(&out), &PackOptions::default(), &NoProgress).unwrap();
    assert_eq!(o.index.processes.len(), 2);
    assert_eq!(o.index.kind, pack::PackKind::Root);
    let index = pack::read_index(&out).unwrap();
    assert_eq!(index, o.index);
    assert_eq!(index.processes[0].event_count, 6);
    assert!(!index.processes[1].complete);
    // write_pack to memory gives the same bytes as the one-pass file writer
    let plan = pack::plan(&src, &PackOptions::default(), &NoProgress).unwrap();
    let mem = pack::write_pack(&plan, Vec::new(), &PackOptions::default(), &NoProgress).unwrap();
    assert_eq!(mem, std::fs::read(&out).unwrap());
    // verify: clean, with a warning for the incomplete capture
    let (_, report) = verify::verify_pack(&out, &NoProgress).unwrap();
    assert!(report.ok(), "{:?}", report.bad);
    assert!(report
        .warnings
        .iter()
        .any(|w| w.path == "pid-11/manifest.json"));
    let dir_report = verify::verify_dir(&src, &NoProgress).unwrap();
    assert!(dir_report.ok(), "{:?}", dir_report.bad);
    let dest = t.path().join("d");
    std::fs::create_dir(&dest).unwrap();
    let got = pack::unpack(&out, &dest, true, &NoProgress).unwrap();
    assert!(verify::verify_dir(&got, &NoProgress).unwrap().ok());
    match pack::unpack(&out, &dest, false, &NoProgress) {
        Err(PackError::Exists(p)) => assert_eq!(p, got),
        other => panic!("{other:?}"),
    }
    // one process capture packs alone, under its own name
    let one = t.path().join("one.tar.zst");
    let o = pack::pack_to_file(
        &src.join("pid-10"),
        Some(&one),
        &PackOptions::default(),
        &NoProgress,
    )
    .unwrap();
    assert_eq!(o.index.kind, pack::PackKind::Process);
    assert_eq!(o.index.root, "pid-10");
    assert_eq!(pack::default_pack_name(&src).unwrap(), "r.hrr.tar.zst");
}

#[test]
fn verify_finds_inconsistent_manifests() {
    let (t, src, _ids) = capture_in_temp(3, false);
    let m = src.join("pid-10/manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replace("\"event_count\": 4", "\"event_count\": 9")).unwrap();
    let r = verify::verify_dir(&src, &NoProgress).unwrap();
    assert!(
        r.bad
            .iter()
            .any(|f| f.path == "pid-10/manifest.json" && f.problem.contains("event_count 9")),
        "{:?}",
        r.bad
    );
    // the same in a pack
    let out = t.path().join("x.tar.zst");
    pack::pack_to_file(&src, Some(&out), &PackOptions::default(), &NoProgress).unwrap();
    let (_, r) = verify::verify_pack(&out, &NoProgress).unwrap();
    assert!(
        r.bad_files().contains(&"pid-10/manifest.json".to_string()),
        "{:?}",
        r.bad
    );
    // a root index that disagrees with a complete archive is damage
    std::fs::write(&m, text).unwrap();
    let root = src.join("manifest.json");
    let rt = std::fs::read_to_string(&root).unwrap();
    std::fs::write(&root, rt.replace("\"pid\": 10", "\"pid\": 12")).unwrap();
    let r = verify::verify_dir(&src, &NoProgress).unwrap();
    assert!(
        r.bad_files().contains(&"manifest.json".to_string()),
        "{:?}",
        r.bad
    );
}

#[test]
fn unsafe_paths_are_named() {
    assert_eq!(
        UnsafeEntry::ParentDir.to_string(),
        "`..` in a path is refused"
    );
    let t = tempfile::tempdir().unwrap();
    let not_pack = t.path().join("x");
    std::fs::write(&not_pack, b"not zstd").unwrap();
    assert!(matches!(
        pack::read_index(&not_pack),
        Err(PackError::NotAPack { .. })
    ));
    assert!(!pack::is_pack_file(&not_pack));
}

#[test]
fn rewrite_events_changes_only_the_ids_and_payload_ranges() {
    let (t, src, ids) = capture_in_temp(4, true);
    let events = src.join("pid-10/events.bin");
    // a torn tail after the trailer must be carried over too
    let mut bytes = std::fs::read(&events).unwrap();
    bytes.extend_from_slice(&encode_trailer(99, 0, 1)[..20]);
    std::fs::write(&events, &bytes).unwrap();
    let new_id = ObjectId::of(b"replacement");
    let renames: HashMap<ObjectId, ObjectId> = [(ids[2], new_id)].into();
    // redact 3 bytes of the `args` field of the event naming blob 0, and try to touch a header
    let mut reader = EventReader::open(&events).unwrap();
    let schema = reader.schema().unwrap().clone();
    let mut pos = reader.recovery().good_len;
    let mut args_at = None;
    let mut header_at = None;
    while let Some(rec) = reader.next_raw().unwrap() {
        if let Some(call) = schema.call(rec.header.kind) {
            if let Ok(refs) = object_fields(call, &rec.payload) {
                if refs.iter().any(|r| r.id == Some(ids[0])) {
                    let spans = hrr_archive::schema::field_offsets(call, &rec.payload).unwrap();
                    let args = spans.iter().find(|s| s.name == "args").unwrap();
                    args_at = Some(pos + RECORD_HEADER_LEN as u64 + args.offset as u64 + 4);
                    header_at = Some(pos);
                }
            }
        }
        pos = reader.recovery().good_len;
    }
    let dst = t.path().join("events.new");
    let redactions = vec![
        (args_at.unwrap(), b"XXX".to_vec()),
        (header_at.unwrap(), vec![0xEE; 4]),
    ];
    let rw = redact::rewrite_events(&events, &dst, &renames, &redactions).unwrap();
    assert_eq!(rw.references, 1);
    assert_eq!(rw.redacted, vec![args_at.unwrap()..args_at.unwrap() + 3]);
    let new = std::fs::read(&dst).unwrap();
    assert_eq!(new.len(), bytes.len());
    let diff: Vec<usize> = (0..new.len()).filter(|&i| new[i] != bytes[i]).collect();
    assert_eq!(
        diff.len(),
        16 + 3,
        "only the id and the 3 redacted bytes changed"
    );
    // the new file reads the same way: same records, marks, trailer and dropped tail
    let scan = |p: &Path| {
        let mut r = EventReader::open(p).unwrap();
        while r.next_raw().unwrap().is_some() {}
        r.recovery().clone()
    };
    assert_eq!(scan(&events), scan(&dst));
    let mut r = EventReader::open(&dst).unwrap();
    let schema = r.schema().unwrap().clone();
    let mut seen_new = false;
    for rec in r.by_ref() {
        let rec = rec.unwrap();
        let call = schema.call(rec.header.kind).unwrap();
        for o in object_fields(call, &rec.payload).unwrap() {
            assert_ne!(o.id, Some(ids[2]));
            seen_new |= o.id == Some(new_id);
        }
    }
    assert!(seen_new);
}

#[test]
fn redacted_ranges_come_from_redactions_json() {
    let (_t, src, ids) = capture_in_temp(2, false);
    let dir = src.join("pid-10");
    assert!(redact::redacted_ranges(&dir).unwrap().is_empty());
    let r = |offset, length| Redaction {
        offset,
        length,
        rule: "github-token".into(),
        encoding: "ascii".into(),
        fingerprint: "fp:00".into(),
    };
    let mut file = RedactionsFile {
        version: 1,
        fingerprint: redact::FINGERPRINT_SCHEME.into(),
        key_id: "k".into(),
        ..Default::default()
    };
    file.objects.insert(
        ids[0].to_hex(),
        RedactedObject {
            kind: redact::ObjectKind::Blob,
            size: std::fs::metadata(blob_path(&dir, &ids[0])).unwrap().len(),
            ranges: vec![r(10, 5), r(12, 10), r(100, 4)],
        },
    );
    redact::write_redactions(&dir, &file).unwrap();
    let ranges = redact::redacted_ranges(&dir).unwrap();
    assert_eq!(ranges[&ids[0]], vec![10..22, 100..104]);
    assert!(verify::verify_dir(&src, &NoProgress).unwrap().ok());
    // a range past the end of its blob is damage
    file.objects
        .get_mut(&ids[0].to_hex())
        .unwrap()
        .ranges
        .push(r(1 << 40, 1));
    redact::write_redactions(&dir, &file).unwrap();
    let rep = verify::verify_dir(&src, &NoProgress).unwrap();
    assert!(rep
        .bad_files()
        .contains(&"pid-10/redactions.json".to_string()));
}

#[test]
fn mutated_packs_never_panic_nor_leave_anything_behind() {
    let (t, src, _ids) = capture_in_temp(3, false);
    let out = t.path().join("r.tar.zst");
    pack::pack_to_file(&src, Some(&out), &PackOptions::default(), &NoProgress).unwrap();
    let tar = zstd::stream::decode_all(&std::fs::read(&out).unwrap()[..]).unwrap();
    hrr_archive::fuzz::fuzz_pack_one(&tar);
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for _ in 0..150 {
        let mut m = tar.clone();
        match next() % 4 {
            // flip bytes, in headers more often than in data
            0 | 1 => {
                for _ in 0..1 + next() % 4 {
                    let block = (next() as usize % (m.len() / 512)) * 512;
                    let at = if next() % 2 == 0 {
                        block + (next() as usize % 512)
                    } else {
                        next() as usize % m.len()
                    };
                    m[at] ^= 1 << (next() % 8);
                }
            }
            // cut
            2 => m.truncate(next() as usize % m.len()),
            // duplicate a 512-byte block
            _ => {
                let b = (next() as usize % (m.len() / 512)) * 512;
                let block = m[b..b + 512].to_vec();
                m.splice(b..b, block);
            }
        }
        hrr_archive::fuzz::fuzz_pack_one(&m);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The chunk-fed framing counter agrees with the reader, whatever the chunking and
    /// wherever the file is cut.
    #[test]
    fn framing_counter_agrees_with_the_reader(chunk in 1usize..700, cut in 0usize..4000, mark in any::<bool>()) {
        let (_t, src, _ids) = capture_in_temp(6, mark);
        let events = src.join("pid-10/events.bin");
        let mut bytes = std::fs::read(&events).unwrap();
        let keep = bytes.len().saturating_sub(cut).max(9);
        bytes.truncate(keep);
        std::fs::write(&events, &bytes).unwrap();
        let mut c = FramingCounter::new();
        for piece in bytes.chunks(chunk) {
            c.feed(piece);
        }
        let sum = c.finish();
        let Ok(mut r) = EventReader::open(&events) else {
            // cut inside the file header or the schema record: unreadable for both
            prop_assert!(sum.unreadable.is_some());
            return Ok(());
        };
        prop_assert!(sum.unreadable.is_none());
        while r.next_raw().unwrap().is_some() {}
        let rec = r.recovery();
        prop_assert_eq!(sum.records, rec.records);
        prop_assert_eq!(sum.trailer_total, rec.trailer_total);
        prop_assert_eq!(sum.marks, rec.incomplete_marks.len() as u64);
        prop_assert_eq!(sum.damaged.is_some(), rec.dropped.is_some());
        prop_assert_eq!(sum.complete(), rec.complete());
    }
}
