//! Hostile archives, built here: links planted where the format has files and folders,
//! non-canonical pid folders, junk `active` markers, damaged manifests, sparse tails, forged
//! pack summaries and temp files left by killed runs. Each case is refused (naming the path) or
//! handled safely.

use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};

use hrr_archive::blobs::{self, count_objects, open_blob, open_code_object, ObjectId};
use hrr_archive::layout::{self, WriterState};
use hrr_archive::manifest::{self, ProcessManifest};
use hrr_archive::pack::{self, PackOptions};
use hrr_archive::progress::NoProgress;
use hrr_archive::repair::{self, repair_process, RepairOutcome};
use hrr_archive::schema::ApiFamily;
use hrr_archive::testkit::{self, copy_schema, write_copy_capture, CopyCapture};
use hrr_archive::{fsutil, summary, verify, Error};

use hrr_archive::testkit::assert_contains;

const PID: u32 = 2674;

/// A finished capture of three blobs and one code object under `root/pid-2674/`.
fn capture(root: &Path) -> (PathBuf, Vec<ObjectId>) {
    let blobs = (0..3u8).map(|i| vec![i + 1; 100 + i as usize]);
    let ids = write_copy_capture(root, &copy_schema(&[]), &CopyCapture::small(PID), blobs).unwrap();
    (root.join(layout::pid_dir_name(PID)), ids)
}

/// [`capture`] at `run.hrr` in a new temp folder: the folder, the archive, its pid folder and
/// the blob ids.
fn temp_capture() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<ObjectId>) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("run.hrr");
    let (dir, ids) = capture(&root);
    (t, root, dir, ids)
}

/// Replace `dir/name` by a link to a copy of it outside the archive.
fn plant_link(dir: &Path, name: &str, outside: &Path) -> PathBuf {
    let p = dir.join(name);
    let target = outside.join(name.replace('/', "_"));
    if std::fs::symlink_metadata(&p).is_ok() {
        std::fs::rename(&p, &target).unwrap();
    } else {
        std::fs::create_dir_all(&target).unwrap();
    }
    symlink(&target, &p).unwrap();
    p
}

fn is_symlink_error(e: &Error, p: &Path) -> bool {
    matches!(e, Error::Symlink(q) if q == p)
}

/// A pid that no process holds: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn a_symlinked_folder_or_file_inside_a_capture_is_refused_naming_it() {
    for name in [
        "blobs",
        "code_objects",
        "regions",
        "events.bin",
        "manifest.json",
    ] {
        let (t, _, dir, _) = temp_capture();
        let outside = tempfile::tempdir().unwrap();
        let link = plant_link(&dir, name, outside.path());
        let e = summary::summarize(&dir).unwrap_err();
        assert!(is_symlink_error(&e, &link), "{name}: --info: {e}");
        let e = repair_process(&dir).unwrap_err();
        assert!(is_symlink_error(&e, &link), "{name}: --repair: {e}");
        match verify::verify_dir(&dir, &NoProgress) {
            Ok(report) => assert!(
                report
                    .bad
                    .iter()
                    .any(|f| f.path == name && f.problem.contains("symbolic link")),
                "{name}: verify: {:?}",
                report.bad
            ),
            Err(e) => assert!(is_symlink_error(&e, &link), "{name}: verify: {e}"),
        }
        let e = pack::pack_to_file(
            &dir,
            Some(&t.path().join("x.hrr.tar.zst")),
            &PackOptions::default(),
            &NoProgress,
        )
        .unwrap_err();
        assert!(e.to_string().contains(name), "{name}: pack: {e}");
    }
}

#[test]
fn a_symlinked_pid_folder_is_refused_naming_it() {
    let (_t, root, _, _) = temp_capture();
    let outside = tempfile::tempdir().unwrap();
    let link = plant_link(&root, "pid-99", outside.path());
    let e = layout::resolve(&root).unwrap_err();
    assert!(is_symlink_error(&e, &link), "{e}");
    let e = repair::repair_root(&root).unwrap_err();
    assert!(is_symlink_error(&e, &link), "{e}");
    assert!(manifest::rebuild_root_index(&root).is_err());
}

#[test]
fn the_checked_openers_refuse_links_non_files_and_wrong_sizes() {
    let (_t, _, dir, ids) = temp_capture();
    let outside = tempfile::tempdir().unwrap();
    let len = |i: usize| 100 + i as u64;
    // fine: right size, or no size to check
    assert_eq!(
        open_blob(&dir, &ids[0], Some(len(0)))
            .unwrap()
            .metadata()
            .unwrap()
            .len(),
        100
    );
    open_blob(&dir, &ids[1], None).unwrap();
    // a blob shorter or longer than the event recorded
    match open_blob(&dir, &ids[1], Some(4096)) {
        Err(Error::SizeMismatch {
            expected: 4096,
            found: 101,
            path,
        }) => assert_eq!(path, blobs::blob_path(&dir, &ids[1])),
        r => panic!("{r:?}"),
    }
    // missing
    let none = ObjectId::of(b"never stored");
    assert!(matches!(
        open_blob(&dir, &none, None),
        Err(Error::Missing(_))
    ));
    // a link at the file, at its `<2 hex>/` folder, at `blobs/`
    let p = blobs::blob_path(&dir, &ids[0]);
    std::fs::rename(&p, outside.path().join("b")).unwrap();
    symlink(outside.path().join("b"), &p).unwrap();
    let e = open_blob(&dir, &ids[0], None).unwrap_err();
    assert!(is_symlink_error(&e, &p), "{e}");
    let hex = ids[1].to_hex();
    let sub = plant_link(&dir, &format!("blobs/{}", &hex[..2]), outside.path());
    let e = open_blob(&dir, &ids[1], None).unwrap_err();
    assert!(is_symlink_error(&e, &sub), "{e}");
    let e = count_objects(&dir).unwrap_err();
    assert!(matches!(e, Error::Symlink(_)), "{e}");
    let top = plant_link(&dir, "blobs", outside.path());
    let e = open_blob(&dir, &ids[2], None).unwrap_err();
    assert!(is_symlink_error(&e, &top), "{e}");
    // a FIFO where a blob should be: refused without blocking
    let t2 = tempfile::tempdir().unwrap();
    let (dir2, ids2) = capture(&t2.path().join("run.hrr"));
    let p = blobs::blob_path(&dir2, &ids2[0]);
    std::fs::remove_file(&p).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .unwrap()
        .success());
    assert!(matches!(
        open_blob(&dir2, &ids2[0], None),
        Err(Error::NotAFile(_))
    ));
    // code objects: found through a real folder only
    let code = ObjectId::of(b"\x7fELF code object");
    assert!(open_code_object(&dir2, &code).unwrap().is_some());
    assert!(blobs::find_code_object(&dir2, &code).is_some());
    let link = plant_link(&dir2, "code_objects", outside.path());
    let e = open_code_object(&dir2, &code).unwrap_err();
    assert!(is_symlink_error(&e, &link), "{e}");
    assert!(blobs::find_code_object(&dir2, &code).is_none());
    std::fs::remove_file(&link).unwrap();
    assert!(open_code_object(&dir2, &code).unwrap().is_none());
}

#[test]
fn a_non_canonical_pid_folder_is_refused_not_counted_twice() {
    for bad in ["pid-02674", "pid-+2674", "pid- 2674", "pid-99999999999"] {
        let (_t, root, dir, _) = temp_capture();
        let twin = root.join(bad);
        std::fs::create_dir(&twin).unwrap();
        for f in ["events.bin", "manifest.json"] {
            std::fs::copy(dir.join(f), twin.join(f)).unwrap();
        }
        for e in [
            layout::resolve(&root).unwrap_err(),
            layout::list_pid_dirs(&root).unwrap_err(),
            manifest::build_root_index(&root).unwrap_err(),
            repair::repair_root(&root).unwrap_err(),
            verify::verify_dir(&root, &NoProgress).unwrap_err(),
        ] {
            assert!(
                matches!(&e, Error::NonCanonicalPid { path, .. } if path == &twin),
                "{bad}: {e}"
            );
        }
    }
}

#[test]
fn a_junk_active_marker_is_an_error_not_stale() {
    let (_t, _, dir, _) = temp_capture();
    let marker = dir.join(layout::ACTIVE_MARKER);
    assert_eq!(layout::writer_state(&dir).unwrap(), WriterState::None);
    let dead = dead_pid();
    std::fs::write(&marker, format!("{dead}\n")).unwrap();
    assert_eq!(
        layout::writer_state(&dir).unwrap(),
        WriterState::Stale { pid: dead }
    );
    let junks: [&[u8]; 10] = [
        b"hello",
        b"",
        b"1234",
        b"01234\n",
        b"-5\n",
        b"0\n",
        b"12 34\n",
        b"99999999999\n",
        b"\xff\xfe\n",
        &[b'7'; 40],
    ];
    for junk in junks {
        std::fs::write(&marker, junk).unwrap();
        for e in [
            layout::writer_state(&dir).unwrap_err(),
            layout::running_writer(&dir).unwrap_err(),
            repair_process(&dir).unwrap_err(),
        ] {
            assert!(
                matches!(&e, Error::BadMarker { path, .. } if path == &marker),
                "{junk:?}: {e}"
            );
        }
    }
    // still there: a repair refused never removes it
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    std::fs::create_dir(&marker).unwrap();
    assert!(matches!(
        layout::writer_state(&dir),
        Err(Error::BadMarker { .. })
    ));
}

/// A crashed capture whose manifest holds every key, then damaged by `damage`.
fn crashed_with_rich_manifest(root: &Path, damage: impl Fn(&mut Vec<u8>)) -> PathBuf {
    let (dir, _) = capture(root);
    let mut m = manifest::read_process_manifest(&dir).unwrap();
    m.metadata = Some(serde_json::json!({"driver_version": 13000,
        "devices": [{"name": "NVIDIA H200", "compute_capability": [9, 0]}]}));
    m.passthrough_calls.insert("cuGetProcAddress_v2".into(), 12);
    m.unreplayable_apis
        .insert("cuIpcOpenMemHandle".into(), vec!["ipc".into()]);
    m.extra
        .insert("future_key".into(), serde_json::json!({"x": [1, 2]}));
    manifest::write_process_manifest(&dir, &m).unwrap();
    let mut bytes = std::fs::read(dir.join("manifest.json")).unwrap();
    damage(&mut bytes);
    std::fs::write(dir.join("manifest.json"), bytes).unwrap();
    // and a torn tail
    testkit::cut_tail(&dir.join("events.bin"), 50).unwrap();
    dir
}

fn notes(o: &RepairOutcome) -> Vec<String> {
    match o {
        RepairOutcome::Repaired { manifest_notes, .. } => manifest_notes.clone(),
        o => panic!("{o:?}"),
    }
}

#[test]
fn repair_of_a_damaged_manifest_keeps_every_key_it_can_parse() {
    // a key of the wrong type: everything else is kept
    let t = tempfile::tempdir().unwrap();
    let dir = crashed_with_rich_manifest(&t.path().join("a.hrr"), |b| {
        let s = String::from_utf8(b.clone()).unwrap();
        *b = s
            .replace("\"parent_pid\": 1", "\"parent_pid\": \"one\"")
            .into_bytes();
    });
    let o = repair_process(&dir).unwrap();
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert_eq!(m.status.pid, PID);
    assert_eq!(m.api, Some(ApiFamily::CudaDriver));
    assert_eq!(m.metadata.as_ref().unwrap()["driver_version"], 13000);
    assert_eq!(m.passthrough_calls["cuGetProcAddress_v2"], 12);
    assert_eq!(m.unreplayable_apis.len(), 1);
    assert_eq!(m.extra["future_key"]["x"][1], 2);
    assert_eq!(m.status.event_count, 6);
    let n = notes(&o).join("\n");
    assert!(n.contains("damaged") && n.contains("parent_pid"), "{n}");

    // truncated in its last key: what precedes is kept, the rest rebuilt from events.bin
    let t = tempfile::tempdir().unwrap();
    let dir = crashed_with_rich_manifest(&t.path().join("b.hrr"), |b| {
        let at = String::from_utf8_lossy(b).find("\"future_key\"").unwrap() + 5;
        b.truncate(at);
    });
    let o = repair_process(&dir).unwrap();
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert_eq!((m.status.pid, m.status.parent_pid), (PID, 1));
    assert_eq!(
        m.metadata.as_ref().unwrap()["devices"][0]["name"],
        "NVIDIA H200"
    );
    assert_eq!(m.passthrough_calls["cuGetProcAddress_v2"], 12);
    assert_eq!(m.api, Some(ApiFamily::CudaDriver));
    assert!(m.status.complete && m.status.event_count == 6 && m.status.blob_count == 4);
    assert!(!m.extra.contains_key("future_key"));
    let n = notes(&o).join("\n");
    assert!(n.contains("truncated") && n.contains("rebuilt"), "{n}");

    // garbled from the start: pid from the folder, api from the schema record
    let t = tempfile::tempdir().unwrap();
    let dir = crashed_with_rich_manifest(&t.path().join("c.hrr"), |b| {
        b[..40].fill(0);
    });
    let o = repair_process(&dir).unwrap();
    let m = manifest::read_process_manifest(&dir).unwrap();
    assert_eq!(m.status.pid, PID);
    assert_eq!(m.api, Some(ApiFamily::CudaDriver));
    assert!(
        m.metadata.is_some(),
        "keys after the damage are kept: {m:?}"
    );
    let n = notes(&o).join("\n");
    assert_contains(&n, "rebuilt pid, ");
    assert_ne!(m, ProcessManifest::new(PID, 0));
}

#[test]
fn a_sparse_hole_at_the_tail_stays_a_hole_in_the_dropped_at_file() {
    let (_t, _, dir, _) = temp_capture();
    let ev = dir.join("events.bin");
    let good = std::fs::metadata(&ev).unwrap().len() - 44; // cut the trailer...
    let f = std::fs::OpenOptions::new().write(true).open(&ev).unwrap();
    f.set_len(good).unwrap();
    // ...then some torn bytes and a 2 GiB hole
    std::os::unix::fs::FileExt::write_all_at(&f, &[0x55; 20], good).unwrap();
    let hole: u64 = 2 << 30;
    f.set_len(good + 20 + hole).unwrap();
    drop(f);
    let o = repair_process(&dir).unwrap();
    let RepairOutcome::Repaired {
        saved_tail: Some(tail),
        dropped_bytes,
        events: 7,
        ..
    } = o
    else {
        panic!("{o:?}")
    };
    assert_eq!(dropped_bytes, 20 + hole);
    let meta = std::fs::metadata(&tail).unwrap();
    assert_eq!(meta.len(), 20 + hole);
    assert!(
        meta.blocks() * 512 < 1 << 20,
        "{} bytes allocated for a {}-byte tail that is a hole",
        meta.blocks() * 512,
        meta.len()
    );
    let mut head = [0u8; 24];
    std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::open(&tail).unwrap(), &mut head, 0)
        .unwrap();
    assert_eq!(&head[..20], &[0x55; 20]);
    assert_eq!(&head[20..], &[0; 4]);
    assert!(summary::summarize(&dir).unwrap().complete());
}

#[test]
fn a_forged_pack_summary_fails_verify() {
    let (t, root, _, _) = temp_capture();
    let honest = t.path().join("honest.hrr.tar.zst");
    pack::pack_to_file(&root, Some(&honest), &PackOptions::default(), &NoProgress).unwrap();
    let (_, r) = verify::verify_pack(&honest, &NoProgress).unwrap();
    assert!(r.ok(), "{:?}", r.bad);
    type Forge = fn(&mut pack::PackIndex);
    let forgeries: [(&str, Forge); 5] = [
        ("event_count", |i| {
            i.processes[0].event_count = 1_000_000_000_000_000
        }),
        ("blob_bytes", |i| i.processes[0].blob_bytes += 1),
        ("complete", |i| i.processes[0].complete = false),
        ("does not hold", |i| {
            let mut extra = i.processes[0].clone();
            extra.dir = "pid-1".into();
            i.processes.push(extra);
        }),
        ("does not list", |i| i.processes.clear()),
    ];
    for (what, forge) in forgeries {
        let mut plan = pack::plan(&root, &PackOptions::default(), &NoProgress).unwrap();
        forge(&mut plan.index);
        let forged = t
            .path()
            .join(format!("forged-{}.hrr.tar.zst", what.replace(' ', "-")));
        let f = std::fs::File::create(&forged).unwrap();
        pack::write_pack(&plan, f, &PackOptions::default(), &NoProgress).unwrap();
        let (index, r) = verify::verify_pack(&forged, &NoProgress).unwrap();
        assert!(!r.ok(), "{what}: a forged summary passed verify");
        assert!(
            r.bad
                .iter()
                .any(|b| b.path == "hrr-pack-index.json" && b.problem.contains(what)),
            "{what}: {:?}",
            r.bad
        );
        assert_eq!(index, plan.index);
    }
}

#[test]
fn stale_temp_files_of_killed_runs_are_removed_and_live_ones_kept() {
    let (_t, _, dir, ids) = temp_capture();
    let dead = dead_pid();
    let hex = ids[0].to_hex();
    let stale = [
        dir.join(format!(".manifest.json.{dead}.0.tmp")),
        dir.join(format!(".events.bin.dropped-at-40.{dead}.3.tmp")),
        dir.join(format!("blobs/{}/.{hex}.blob.{dead}.1.tmp", &hex[..2])),
        dir.join(format!("code_objects/.x.cubin.{dead}.2.tmp")),
    ];
    // pid 1 lives and started before these files: they are its, kept; so are this process's
    let live = [
        dir.join(".manifest.json.1.0.tmp"),
        dir.join(format!(".manifest.json.{}.9.tmp", std::process::id())),
        dir.join(".not-a-writer-name.tmp"),
    ];
    for p in stale.iter().chain(&live) {
        std::fs::write(p, b"x").unwrap();
    }
    let removed = repair::remove_stale_temp_files(&dir).unwrap();
    let mut want = stale.to_vec();
    want.sort();
    assert_eq!(removed, want);
    assert!(stale.iter().all(|p| !p.exists()) && live.iter().all(|p| p.exists()));
    // a temp file older than the live process now holding its pid: that pid was reused
    let old = dir.join(format!(".manifest.json.{}.5.tmp", std::process::id()));
    std::fs::write(&old, b"x").unwrap();
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    assert_eq!(repair::remove_stale_temp_files(&dir).unwrap(), vec![old]);
    assert!(!fsutil::process_alive_since(dead, None));
}

#[test]
fn stale_unpack_and_pack_temp_files_are_removed_by_the_next_run() {
    let (t, root, _, _) = temp_capture();
    let dead = dead_pid();
    // a killed pack's temp file beside the output
    let out = t.path().join("run.hrr.tar.zst");
    let stale_pack = t.path().join(format!(".run.hrr.tar.zst.{dead}.0.tmp"));
    let other = t.path().join(format!(".other.tar.zst.{dead}.0.tmp"));
    std::fs::write(&stale_pack, b"half a pack").unwrap();
    std::fs::write(&other, b"not ours").unwrap();
    let o = pack::pack_to_file(&root, Some(&out), &PackOptions::default(), &NoProgress).unwrap();
    assert_eq!(o.removed_stale, vec![stale_pack.clone()]);
    assert!(!stale_pack.exists() && other.exists());
    // a killed unpack's staging folder
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let stale_dir = dest.join(format!(".hrr-unpack-{dead}-AbC123"));
    std::fs::create_dir_all(stale_dir.join("run.hrr/pid-2674")).unwrap();
    std::fs::write(stale_dir.join("run.hrr/pid-2674/events.bin"), b"partial").unwrap();
    let live_dir = dest.join(".hrr-unpack-1-XyZ789");
    let legacy = dest.join(".hrr-unpack-q1w2e3");
    std::fs::create_dir(&live_dir).unwrap();
    std::fs::create_dir(&legacy).unwrap();
    assert_eq!(
        pack::remove_stale_unpack_dirs(&dest).unwrap(),
        vec![stale_dir.clone()]
    );
    assert!(!stale_dir.exists() && live_dir.exists() && legacy.exists());
    let got = pack::unpack(&out, &dest, false, &NoProgress).unwrap();
    assert_eq!(got, dest.join("run.hrr"));
    let left: Vec<_> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn a_failed_tail_copy_leaves_no_temp_file() {
    // The dropped tail cannot be saved (its name is taken by a folder, so the rename fails
    // after the copy): the temp file goes, events.bin is untouched.
    let (_t, _, dir, _) = temp_capture();
    let ev = dir.join("events.bin");
    testkit::cut_tail(&ev, 10).unwrap();
    let len = std::fs::metadata(&ev).unwrap().len();
    let good = hrr_archive::reader::EventReader::scan_headers(&ev)
        .unwrap()
        .good_len;
    let blocker = dir.join(layout::dropped_tail_name(good));
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), b"x").unwrap();
    assert!(repair_process(&dir).is_err());
    let temps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
    assert_eq!(std::fs::metadata(&ev).unwrap().len(), len);
}
