//! pack, unpack, list and verify: round trips, determinism, running captures, corruption.

use super::*;

#[test]
fn pack_unpack_round_trip_is_identical_and_private() {
    let (t, src) = clean_in_temp();
    let packed = t.path().join("run.hrr.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &packed]);
    // The pack is for shipping: readable by others (0644 less the umask), so a container running
    // as another user can read it mounted; what it holds unpacks 0600/0700 (below). --private
    // keeps it 0600.
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022);
    let mode = std::fs::metadata(&packed).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644 & !umask);
    let private = t.path().join("private.hrr.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &private, &"--private"]);
    let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    succeeds(&[&"unpack", &packed, &"-C", &dest]);
    let a = tree(&src);
    let b = tree(&dest.join("run.hrr"));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, (_, content)) in &a {
        assert_eq!(content, &b[k].1, "{k}");
        let want = if content.is_empty() && std::fs::metadata(src.join(k)).unwrap().is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(b[k].0, want, "{k}");
    }
    // nothing else was left in the destination (no temp folder)
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 1);
    // verify, on both
    for p in [&packed, &dest.join("run.hrr")] {
        let o = succeeds(&[&"verify", p]);
        assert!(text(&o).contains("OK"), "{}", text(&o));
    }
    // never overwrites
    fails_saying(&[&"unpack", &packed, &"-C", &dest], 1, "already exists");
    fails_saying(&[&"pack", &src, &"-o", &packed], 1, "already exists");
}

#[test]
fn pack_is_byte_identical_across_threads_and_mtimes() {
    let (t, src) = clean_in_temp();
    let a = t.path().join("a.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &a, &"-T", &"1"]);
    // touch every file and folder with another time
    let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_234_567_890);
    for e in walkdir::WalkDir::new(&src) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let f = std::fs::File::options()
                .append(true)
                .open(e.path())
                .unwrap();
            f.set_modified(when).unwrap();
        }
    }
    let b = t.path().join("b.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &b, &"-T", &"2"]);
    let c = t.path().join("c.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &c, &"-T", &"0"]);
    let (a, b, c) = (
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        std::fs::read(&c).unwrap(),
    );
    assert!(a == b && b == c, "packs differ");
    // written to standard output (front to back, hashed first): the same bytes again
    let o = succeeds(&[&"pack", &src, &"-o", &"-", &"-T", &"2", &"--level", &"3"]);
    assert!(o.stdout == a, "stdout pack differs");
    // and plain zstd + tar read it (the head's padding is a skippable frame)
    let names = testkit::tar_names(&zstd_decompress(&a));
    assert_eq!(names[0], "hrr-pack-index.json");
    assert_eq!(names[1], "run.hrr");
    assert!(names.contains(&"run.hrr/pid-100/events.bin".to_string()));
}

#[test]
fn pack_refuses_running_captures_unless_forced() {
    let (t, src) = clean_in_temp();
    std::fs::write(src.join("pid-101/active"), b"101\n").unwrap();
    let out = t.path().join("x.tar.zst");
    fails_saying(&[&"pack", &src, &"-o", &out], 1, "`active` marker");
    assert!(!out.exists());
    succeeds(&[&"pack", &src, &"-o", &out, &"--force"]);
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(src.join("pid-101/active")).unwrap();
    // writer state: a temp file of an interrupted write
    std::fs::write(src.join("pid-100/blobs/.x.blob.9.0.tmp"), b"half").unwrap();
    fails_saying(&[&"pack", &src, &"-o", &out], 1, "writer state");
    let o = succeeds(&[&"pack", &src, &"-o", &out, &"--force", &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["skipped"][0], "pid-100/blobs/.x.blob.9.0.tmp");
    // a link inside the archive is refused, never followed
    std::fs::remove_file(src.join("pid-100/blobs/.x.blob.9.0.tmp")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", src.join("pid-100/blobs/link")).unwrap();
    let o = run(&[&"pack", &src, &"-o", &t.path().join("y.tar.zst")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
}

#[test]
fn list_reads_the_index_of_a_pack_and_an_archive_alike() {
    let (t, src) = clean_in_temp();
    let packed = t.path().join("run.hrr.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &packed]);
    let from_pack: serde_json::Value =
        serde_json::from_slice(&run(&[&"list", &packed, &"--json"]).stdout).unwrap();
    let from_dir: serde_json::Value =
        serde_json::from_slice(&run(&[&"list", &src, &"--json"]).stdout).unwrap();
    assert_eq!(from_pack["processes"], from_dir["processes"]);
    assert_eq!(from_pack["totals"], from_dir["totals"]);
    assert_eq!(from_pack["totals"]["processes"], 2);
    assert_eq!(from_pack["processes"][0]["pid"], 100);
    assert_eq!(from_pack["processes"][0]["blobs"], 3);
    assert_eq!(from_pack["processes"][0]["events"], 7);
    assert_eq!(from_pack["processes"][1]["code_objects"], 1);
    let o = run(&[&"list", &packed, &"--files"]);
    assert!(text(&o).contains("pid-100/events.bin"), "{}", text(&o));
    // list needs only the index: a pack cut after its first members still lists
    let bytes = std::fs::read(&packed).unwrap();
    let cut = t.path().join("cut.tar.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    succeeds(&[&"list", &cut]);
    exits(&[&"verify", &cut], 1);
}

#[test]
fn corrupt_byte_is_named_by_verify_and_unpack() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    let mut r = Rng(7);
    let marker = r.bytes(200_000);
    let ids = write_process(&src, 5, &[marker.clone(), vec![3u8; 1000]], b"code");
    let blob_rel = format!(
        "pid-5/blobs/{}/{}.blob",
        &ids[0].to_hex()[..2],
        ids[0].to_hex()
    );
    let packed = t.path().join("run.hrr.tar.zst");
    succeeds(&[&"pack", &src, &"-o", &packed]);

    // 1. a byte changed inside the tar (then recompressed): the hash check names the file
    let mut tar = zstd_decompress(&std::fs::read(&packed).unwrap());
    let at = tar
        .windows(64)
        .position(|w| w == &marker[1000..1064])
        .unwrap();
    tar[at + 10] ^= 0x40;
    let bad = t.path().join("bad.tar.zst");
    std::fs::write(&bad, zstd_compress(&tar)).unwrap();
    fails_saying(&[&"verify", &bad], 1, &blob_rel);
    let o = run(&[&"verify", &bad, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["bad_files"][0], blob_rel.as_str());
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    fails_saying(&[&"unpack", &bad, &"-C", &dest], 1, &blob_rel);
    assert_eq!(
        std::fs::read_dir(&dest).unwrap().count(),
        0,
        "nothing left behind"
    );

    // 2. a byte flipped in the compressed file itself (random data is stored raw by zstd)
    let mut z = std::fs::read(&packed).unwrap();
    let at = z
        .windows(64)
        .position(|w| w == &marker[5000..5064])
        .unwrap();
    z[at + 3] ^= 0x01;
    std::fs::write(&bad, &z).unwrap();
    fails_saying(&[&"verify", &bad], 1, &blob_rel);
    fails_saying(&[&"unpack", &bad, &"-C", &dest], 1, &blob_rel);
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);

    // 3. a byte changed in an archive folder: verify names the blob
    let mut b = std::fs::read(src.join(&blob_rel)).unwrap();
    b[77] ^= 1;
    std::fs::write(src.join(&blob_rel), &b).unwrap();
    fails_saying(&[&"verify", &src], 1, &blob_rel);
    // and a missing blob is named through the event that refers to it
    std::fs::remove_file(src.join(&blob_rel)).unwrap();
    fails_saying(&[&"verify", &src], 1, "which is missing");
}
