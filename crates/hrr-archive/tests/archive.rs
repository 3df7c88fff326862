//! Framing, recovery, repair and round-trip tests of the archive library.

use std::path::{Path, PathBuf};

use hrr_archive::framing::*;
use hrr_archive::reader::{Dropped, EventReader};
use hrr_archive::repair::{repair_process, repair_root, RepairOutcome};
use hrr_archive::schema::*;
use hrr_archive::testkit::{self, test_api_schema};
use hrr_archive::writer::{FlushPolicy, ProcessWriter, EVENTS_FILE};
use hrr_archive::{manifest, summary, Error};
use proptest::prelude::*;

fn schema() -> Schema {
    use FieldType::*;
    test_api_schema(1, &[("result", Result), ("kernel", Str), ("args", Bytes)])
}

/// Write a capture of `n` events with varied payload sizes; returns the pid dir.
fn write_capture(root: &Path, pid: u32, n: usize, finish: bool) -> PathBuf {
    let mut w = ProcessWriter::create(root, pid, 1, &schema()).unwrap();
    for i in 0..n {
        let mut p = PayloadBuilder::new();
        if i % 2 == 0 {
            p.i32(0)
                .u64(0x7e00_0000_0000 + i as u64)
                .u64(i as u64 * 256);
            w.events()
                .append(1, 100 + (i % 3) as u64, p.as_bytes())
                .unwrap();
        } else {
            p.i32(0)
                .str(&format!("kernel_{}", i % 4))
                .bytes(&vec![i as u8; i % 17]);
            w.events().append(2, 100, p.as_bytes()).unwrap();
        }
    }
    let dir = w.dir().to_path_buf();
    if finish {
        w.finish().unwrap();
    } else {
        w.events().flush(false).unwrap();
        std::mem::forget(w); // a crash: no trailer, no final manifest
    }
    dir
}

/// `write_capture(folder, pid, n, finish)` in a fresh folder (keep it alive): the folder, the
/// process folder and the path of its events file.
fn temp_capture(pid: u32, n: usize, finish: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = write_capture(root.path(), pid, n, finish);
    let path = dir.join(EVENTS_FILE);
    (root, dir, path)
}

/// Where each record of the events file `bytes` ends, the schema record first, read from the
/// record headers.
fn record_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut off = FILE_HEADER_LEN;
    while off < bytes.len() {
        let h = RecordHeader::decode(bytes[off..off + RECORD_HEADER_LEN].try_into().unwrap());
        off += h.total_len as usize;
        ends.push(off);
    }
    ends
}

fn read_all(
    path: &Path,
) -> (
    Vec<hrr_archive::reader::Record>,
    hrr_archive::reader::Recovery,
) {
    let mut r = EventReader::open(path).unwrap();
    let recs: Vec<_> = r.by_ref().map(|x| x.unwrap()).collect();
    (recs, r.recovery().clone())
}

#[test]
fn clean_capture_reads_back_complete() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_capture(root.path(), 5, 10, true);
    let (recs, rec) = read_all(&dir.join(EVENTS_FILE));
    assert_eq!(recs.len(), 10);
    assert!(rec.complete());
    assert!(recs.windows(2).all(|w| w[0].header.seq < w[1].header.seq));
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert!(m.status.complete && m.status.event_count == 10);
    assert!(!dir.join("active").exists());
    let rm = manifest::read_root_manifest(root.path()).unwrap();
    assert_eq!(rm.processes.len(), 1);
    let s = summary::summarize(&dir).unwrap();
    assert_eq!(s.calls["apiAlloc"], 5);
    assert_eq!(s.kernels["kernel_1"], 3);
    assert_eq!(s.threads, vec![100, 102, 101]);
}

#[test]
fn truncation_at_every_offset_of_the_last_records_keeps_exactly_the_complete_prefix() {
    let (root, _dir, path) = temp_capture(6, 6, true);
    let full = std::fs::read(&path).unwrap();
    let ends = record_ends(&full);
    // ends[0] = schema, ends[1..=6] = events, ends[7] = trailer
    let first_cut = ends[3];
    for cut in first_cut..full.len() {
        let t = root.path().join("cut.bin");
        std::fs::write(&t, &full[..cut]).unwrap();
        let (recs, rec) = read_all(&t);
        let expected = ends[1..7].iter().filter(|&&e| e <= cut).count();
        assert_eq!(recs.len(), expected, "cut at {cut}");
        assert_eq!(rec.complete(), cut == full.len(), "cut at {cut}");
        let at_boundary = ends.contains(&cut);
        assert_eq!(rec.dropped.is_some(), !at_boundary, "cut at {cut}");
        assert_eq!(rec.good_len as usize, ends[expected], "cut at {cut}");
    }
}

#[test]
fn implausible_lengths_and_garbage_after_trailer_are_reported() {
    let (_root, _dir, path) = temp_capture(7, 4, true);
    let full = std::fs::read(&path).unwrap();
    // garbage after the trailer
    let mut g = full.clone();
    g.extend_from_slice(b"garbage!");
    std::fs::write(&path, &g).unwrap();
    let (recs, rec) = read_all(&path);
    assert_eq!(recs.len(), 4);
    assert_eq!(rec.bytes_after_trailer, 8);
    // a length of 5 in the third event's header (where the schema and two events end), then
    // one of 2^31
    let off = record_ends(&full)[2];
    for bad in [5u32, 0x8000_0000] {
        let mut b = full.clone();
        b[off + 26..off + 30].copy_from_slice(&bad.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        let (recs, rec) = read_all(&path);
        assert_eq!(recs.len(), 2);
        assert_eq!(rec.dropped, Some(Dropped::ImplausibleLength { len: bad }));
        assert!(!rec.complete());
    }
}

#[test]
fn bad_headers_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.bin");
    std::fs::write(&p, b"EHR").unwrap();
    assert!(matches!(
        EventReader::open(&p),
        Err(Error::TooShort { len: 3, .. })
    ));
    std::fs::write(&p, b"XXXXXXXXXXXX").unwrap();
    assert!(matches!(EventReader::open(&p), Err(Error::BadMagic { .. })));
    let mut h = FileHeader::current();
    h.version = 9;
    std::fs::write(&p, h.encode()).unwrap();
    let e = EventReader::open(&p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "Version mismatch in {}: file=9 reader={FORMAT_VERSION}",
            p.display()
        )
    );
    std::fs::write(&p, FileHeader::current().encode()).unwrap();
    assert!(matches!(
        EventReader::open(&p),
        Err(Error::BadSchema { .. })
    ));
    let link = dir.path().join("link.bin");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert!(matches!(EventReader::open(&link), Err(Error::Symlink(_))));
}

#[test]
fn repair_recovers_a_crashed_capture_and_saves_the_tail() {
    let (_root, dir, path) = temp_capture(8, 9, false);
    testkit::cut_tail(&path, 3).unwrap(); // tear the last record
    std::fs::remove_file(dir.join("active")).unwrap();
    match repair_process(&dir).unwrap() {
        RepairOutcome::Repaired {
            events,
            dropped_bytes,
            saved_tail,
            still_incomplete,
            ..
        } => {
            assert_eq!(events, 8);
            assert!(dropped_bytes > 0);
            assert_eq!(
                std::fs::metadata(saved_tail.unwrap()).unwrap().len(),
                dropped_bytes
            );
            assert!(still_incomplete.is_empty());
        }
        o => panic!("{o:?}"),
    }
    let (recs, rec) = read_all(&path);
    assert_eq!(recs.len(), 8);
    assert!(rec.complete());
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert!(m.status.complete);
    assert_eq!(
        repair_process(&dir).unwrap(),
        RepairOutcome::AlreadyComplete { events: 8 }
    );
}

#[test]
fn repair_never_blesses_a_capture_the_writer_marked_incomplete() {
    let root = tempfile::tempdir().unwrap();
    let reason = "disk nearly full; capture stopped";
    let w = testkit::write_marked_incomplete(root.path(), 9, &schema(), reason).unwrap();
    let dir = w.dir().to_path_buf();
    let m = w.finish().unwrap();
    assert!(!m.status.complete);
    assert!(m.incomplete_reason.unwrap().contains("disk nearly full"));
    match repair_process(&dir).unwrap() {
        RepairOutcome::Repaired {
            still_incomplete, ..
        } => assert_eq!(still_incomplete.len(), 1),
        o => panic!("{o:?}"),
    }
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert!(!m.status.complete);
    let (_, rec) = read_all(&dir.join(EVENTS_FILE));
    assert!(!rec.complete() && rec.clean_trailer());
}

#[test]
fn repair_root_repairs_every_process_and_rebuilds_the_index() {
    let root = tempfile::tempdir().unwrap();
    write_capture(root.path(), 11, 3, true);
    let crashed = write_capture(root.path(), 12, 5, false);
    std::fs::remove_file(crashed.join("active")).unwrap();
    let r = repair_root(root.path()).unwrap();
    let outcomes: Vec<_> = r
        .processes
        .iter()
        .map(|(_, o)| o.as_ref().unwrap().clone())
        .collect();
    assert!(matches!(
        outcomes[0],
        RepairOutcome::AlreadyComplete { events: 3 }
    ));
    assert!(matches!(
        outcomes[1],
        RepairOutcome::Repaired { events: 5, .. }
    ));
    let rm = manifest::read_root_manifest(root.path()).unwrap();
    assert!(rm.processes.iter().all(|p| p.status.complete));
    assert_eq!(rm.processes[1].status.event_count, 5);
}

#[test]
fn repair_refuses_a_running_capture() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_capture(root.path(), 13, 2, false);
    std::fs::write(dir.join("active"), format!("{}\n", std::process::id())).unwrap();
    // our own pid is allowed (tests), a live foreign pid is not: use pid 1
    std::fs::write(dir.join("active"), "1\n").unwrap();
    let e = repair_process(&dir).unwrap_err();
    assert!(e.to_string().contains("still running"), "{e}");
}

#[test]
fn periodic_flush_makes_records_visible_before_finish() {
    let root = tempfile::tempdir().unwrap();
    let policy = FlushPolicy {
        buffer_bytes: 1 << 20,
        flush_every_events: 4,
        sync_every_events: 8,
    };
    let mut w = ProcessWriter::create_with(root.path(), 14, 1, &schema(), policy).unwrap();
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(1).u64(2);
    for _ in 0..9 {
        w.events().append(1, 1, p.as_bytes()).unwrap();
    }
    let (recs, rec) = read_all(&w.dir().join(EVENTS_FILE));
    assert_eq!(recs.len(), 8);
    assert!(!rec.complete());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn any_events_round_trip(events in proptest::collection::vec(
        (any::<u64>(), any::<u64>(), "[a-z_]{0,20}", proptest::collection::vec(any::<u8>(), 0..300), any::<bool>()),
        0..40)) {
        let root = tempfile::tempdir().unwrap();
        let mut w = ProcessWriter::create(root.path(), 1, 0, &schema()).unwrap();
        for (a, b, name, bytes, launch) in &events {
            let mut p = PayloadBuilder::new();
            if *launch { p.i32(0).str(name).bytes(bytes); w.events().append(2, *a, p.as_bytes()).unwrap(); }
            else { p.i32(-1).u64(*a).u64(*b); w.events().append(1, *b, p.as_bytes()).unwrap(); }
        }
        let dir = w.dir().to_path_buf();
        w.finish().unwrap();
        let mut r = EventReader::open(&dir.join(EVENTS_FILE)).unwrap();
        let sch = r.schema().unwrap().clone();
        let mut n = 0;
        for (rec, (a, b, name, bytes, launch)) in r.by_ref().zip(&events) {
            let rec = rec.unwrap();
            let call = sch.call(rec.header.kind).unwrap();
            let f = decode_fields(call, &rec.payload).unwrap();
            if *launch {
                prop_assert_eq!(rec.header.thread_id, *a);
                prop_assert_eq!(field(&f, "kernel"), Some(&Value::Str(name.clone())));
                prop_assert_eq!(field(&f, "args"), Some(&Value::Bytes(bytes.clone())));
            } else {
                prop_assert_eq!(field(&f, "ptr"), Some(&Value::Ptr(*a)));
                prop_assert_eq!(field(&f, "size"), Some(&Value::U64(*b)));
            }
            n += 1;
        }
        prop_assert_eq!(n, events.len());
        prop_assert!(r.recovery().complete());
    }
}

/// Events written in place (`begin_record` .. `end_record`) are the records `append_at` writes
/// from a finished payload; a cancelled record and one over the record limit leave nothing
/// behind (the events after them are intact and numbered on).
#[test]
fn records_written_in_place_are_the_appended_ones_and_cancelled_ones_leave_nothing() {
    let payload = |i: u64| {
        let mut p = PayloadBuilder::new();
        p.i32(0)
            .str(&format!("kernel_{i}"))
            .bytes(&vec![i as u8; i as usize * 7]);
        p.into_bytes()
    };
    let root = tempfile::tempdir().unwrap();
    // every event after the schema record (which the reader takes as the file's own)
    let read = |pid: u32| -> Vec<(u16, u64, u64, u64, Vec<u8>)> {
        let path = root.path().join(format!("pid-{pid}")).join(EVENTS_FILE);
        EventReader::open(&path)
            .unwrap()
            .map(|r| r.unwrap())
            .map(|r| {
                let h = r.header;
                (h.kind, h.seq, h.timestamp_ns, h.thread_id, r.payload)
            })
            .collect()
    };

    let mut appended = ProcessWriter::create(root.path(), 1, 0, &schema()).unwrap();
    for i in 0..40u64 {
        appended
            .events()
            .append_at(2, 7, 1000 + i, &payload(i))
            .unwrap();
    }
    appended.finish().unwrap();

    let mut in_place = ProcessWriter::create(root.path(), 2, 0, &schema()).unwrap();
    for i in 0..40u64 {
        if i % 5 == 0 {
            // a record abandoned halfway (its fill panicked): nothing of it stays
            let mut open = in_place.events().begin_record();
            open.payload().i32(0).str("abandoned");
            in_place.events().cancel_record(open);
        }
        if i == 20 {
            let mut open = in_place.events().begin_record();
            open.payload().bytes(&vec![0u8; MAX_RECORD_LEN as usize]);
            let err = in_place.events().end_record(open, 2, 7, 1).unwrap_err();
            assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        }
        let mut open = in_place.events().begin_record();
        open.payload().encoded(&payload(i));
        let seq = in_place.events().end_record(open, 2, 7, 1000 + i).unwrap();
        assert_eq!(
            seq,
            i + 1,
            "numbered after the schema record, cancelled ones not counted"
        );
    }
    in_place.finish().unwrap();

    let (a, b) = (read(1), read(2));
    assert_eq!(a.len(), 40);
    assert_eq!(a, b);
}

/// A capture killed after recording a code object load (`code`) and one upload per blob of
/// `blobs` (events flushed, no trailer or final manifest, its `active` marker gone), the objects
/// stored by `store` beforehand: the root (kept alive) and the process capture.
fn killed_capture(
    pid: u32,
    code: hrr_archive::ObjectId,
    blobs: &[hrr_archive::ObjectId],
    store: impl FnOnce(&mut ProcessWriter),
) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let schema = testkit::copy_schema(&[]);
    let mut w = ProcessWriter::create(root.path(), pid, 1, &schema).unwrap();
    store(&mut w);
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(0x1000).object(Some(code));
    w.events().append(1, 7, p.as_bytes()).unwrap();
    for (i, id) in blobs.iter().enumerate() {
        let mut p = PayloadBuilder::new();
        p.i32(0).u64(0x7e00 + i as u64).u64(64).object(Some(*id));
        w.events().append(2, 7, p.as_bytes()).unwrap();
    }
    let dir = w.dir().to_path_buf();
    w.events().flush(false).unwrap();
    std::mem::forget(w); // killed: no trailer, no final manifest
    std::fs::remove_file(dir.join("active")).unwrap();
    (root, dir)
}

/// A writer killed before its background threads wrote a blob and a code object leaves events
/// naming them: repair cuts the events from the first such one on (saved with the tail), says
/// which event and object in the incomplete reason, and keeps the events before it.
#[test]
fn repair_cuts_a_crashed_capture_at_the_first_event_naming_an_unwritten_object() {
    use hrr_archive::blobs::{blob_path, CodeKind, ObjectId};
    let code_bytes = b"\x7fELF kept".as_slice();
    let code = ObjectId::of(code_bytes);
    let bytes: Vec<[u8; 64]> = (0..4u8).map(|i| [i; 64]).collect();
    let blobs: Vec<ObjectId> = bytes.iter().map(|b| ObjectId::of(b)).collect();
    let (_root, dir) = killed_capture(21, code, &blobs, |w| {
        w.put_code_object(code_bytes, CodeKind::Cubin).unwrap();
        for b in &bytes {
            w.put_blob(b).unwrap();
        }
    });
    // the third upload's blob never reached the disk
    std::fs::remove_file(blob_path(&dir, &blobs[2])).unwrap();
    let events_path = dir.join(EVENTS_FILE);
    let before = std::fs::read(&events_path).unwrap();
    let RepairOutcome::Repaired {
        events,
        dropped_bytes,
        saved_tail,
        still_incomplete,
        ..
    } = repair_process(&dir).unwrap()
    else {
        panic!("not repaired")
    };
    // kept: the load, two uploads and the mark saying why the rest was cut; the third and
    // fourth uploads saved with the tail, byte for byte
    assert_eq!(events, 4);
    let (recs, rec) = read_all(&events_path);
    assert_eq!(recs.len(), 3);
    assert!(rec.clean_trailer());
    assert_eq!(rec.incomplete_marks.len(), 1);
    let cut = before.len() - dropped_bytes as usize;
    assert_eq!(std::fs::read(saved_tail.unwrap()).unwrap(), &before[cut..]);
    assert_eq!(&std::fs::read(&events_path).unwrap()[..cut], &before[..cut]);
    assert_eq!(still_incomplete.len(), 1, "{still_incomplete:?}");
    assert!(
        still_incomplete[0].contains("cuMemcpyHtoD_v2")
            && still_incomplete[0].contains(&blobs[2].to_string()),
        "{still_incomplete:?}"
    );
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert!(!m.status.complete);
    assert_eq!(m.status.event_count, 4);
    // a second repair cuts nothing more and keeps it incomplete (the mark is in events.bin)
    let again = repair_process(&dir).unwrap();
    assert!(
        matches!(&again, RepairOutcome::Repaired { events: 4, dropped_bytes: 0, still_incomplete, .. }
            if still_incomplete.len() == 1 && still_incomplete[0].contains("repair: event #")),
        "{again:?}"
    );
    assert!(
        !manifest::read_process_manifest(&dir)
            .unwrap()
            .status
            .complete
    );
}

/// A writer killed after a synchronisation journaled a blob and a code object whose files were
/// never written: repair restores both from `blobs.journal`, removes it and cuts nothing, so
/// every event the synchronisation made durable is kept.
#[test]
fn repair_restores_journaled_objects_and_keeps_every_event() {
    use hrr_archive::blobs::{blob_path, find_code_object, CodeKind, ObjectId};
    use hrr_archive::journal::{Journal, Restored};
    let code_bytes = b"\x7fELF journaled".as_slice();
    let code = ObjectId::of(code_bytes);
    let blobs: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i; 64]).collect();
    let ids: Vec<ObjectId> = blobs.iter().map(|b| ObjectId::of(b)).collect();
    // the first blob has its file; the others and the code object are in the journal only
    let (_root, dir) = killed_capture(22, code, &ids, |w| {
        w.put_blob(&blobs[0]).unwrap();
        Journal::new(w.dir())
            .append(&[
                (code, Some(CodeKind::Cubin), code_bytes),
                (ids[1], None, &blobs[1]),
                (ids[2], None, &blobs[2]),
            ])
            .unwrap();
    });
    // verify tells journaled objects apart from missing ones: a warning, not a bad file
    let report = hrr_archive::verify::verify_dir(&dir, &hrr_archive::progress::NoProgress).unwrap();
    assert!(report.bad_files().is_empty(), "{:?}", report.bad_files());
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.path.ends_with("blobs.journal") && w.problem.contains("3 object(s)")),
        "{:?}",
        report.warnings
    );
    let outcome = repair_process(&dir).unwrap();
    let restored = Restored {
        records: 3,
        damaged: 0,
        objects: 3,
        torn: false,
    };
    assert!(
        matches!(&outcome, RepairOutcome::Repaired { events: 4, still_incomplete, journal, .. }
            if still_incomplete.is_empty() && *journal == restored),
        "{outcome:?}"
    );
    assert_eq!(std::fs::read(blob_path(&dir, &ids[2])).unwrap(), blobs[2]);
    assert!(find_code_object(&dir, &code).is_some());
    assert!(!dir.join("blobs.journal").exists());
    assert!(
        manifest::read_process_manifest(&dir)
            .unwrap()
            .status
            .complete
    );
}
