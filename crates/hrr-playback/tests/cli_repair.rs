//! The `hrr-playback` command line on archives to repair and bad input: `--repair` on copies of
//! the demo archive and on captures written here (the writer's own incomplete mark kept, a root's
//! failures counted), and every kind of damaged or wrong input answered with one error line,
//! exit 1, never a panic. Golden outputs and the rest: `cli.rs`; helpers: `cli_common/mod.rs`.

use std::os::unix::fs::PermissionsExt;

use hrr_archive::framing::{FileHeader, RecordHeader, FILE_HEADER_LEN, FORMAT_VERSION};
use hrr_archive::writer::ProcessWriter;

mod cli_common;
use cli_common::*;

use hrr_archive::testkit::{assert_contains, write_marked_incomplete};

// ---------------------------------------------------------------------------------------------
// Repair

#[test]
fn repair_the_demo_root_then_everything_is_complete() {
    let (t, d) = demo_copy();
    let arg = d.display().to_string();
    let o = run(&[&arg, "--repair"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    golden("repair-root.txt", &filter(&o.stdout, t.path()));
    assert!(d.join("pid-1204/events.bin.dropped-at-2746").is_file());
    assert!(!d.join("pid-1204/active").exists());

    let o = run(&[&arg, "--info"]);
    assert_eq!(o.code, 0);
    golden("info-root-repaired.txt", &filter(&o.stdout, t.path()));
    assert!(!o.stdout.contains("NO"), "{}", o.stdout);
    assert!(!o.stdout.contains("To repair"));

    let o = run(&[&arg, "--repair"]);
    assert_eq!(o.code, 0);
    assert_eq!(
        filter(&o.stdout, t.path()),
        "[HRR] Repairing 2 process captures under <TMP>/demo.hrr\n\
         [HRR] --- pid-1180 ---\n\
         [HRR] Archive already complete (16 events); nothing to repair\n\
         [HRR] --- pid-1204 ---\n\
         [HRR] Archive already complete (9 events); nothing to repair\n\
         [HRR] Repair summary: 0 repaired, 2 already complete, 0 failed\n"
    );
    let o = run(&[&format!("{arg}/pid-1204"), "--info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["complete"], true);
    assert_eq!(v["events"], 9);
}

/// A killed capture's blob journal is named by `--info` and turned back into files by
/// `--repair`, which says so in its text and in `--json` (`journal_restored`), and leaves no
/// journal behind.
#[test]
fn repair_restores_the_blob_journal_and_says_so() {
    use hrr_archive::journal::Journal;
    use hrr_archive::ObjectId;
    let bytes = b"a result a synchronisation journaled".as_slice();
    let id = ObjectId::of(bytes);
    for json in [false, true] {
        let (_t, d) = demo_copy();
        let pid = d.join("pid-1204");
        Journal::new(&pid).append(&[(id, None, bytes)]).unwrap();
        let info = run_at(&pid, &["--info"]);
        assert_contains(
            &info.stdout,
            "This capture holds 1 object(s) in blobs.journal whose files were never written",
        );
        let args: &[&str] = if json {
            &["--repair", "--json"]
        } else {
            &["--repair"]
        };
        let o = run_at(&pid, args);
        assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
        if json {
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(v["processes"][0]["journal_restored"], 1, "{v}");
        } else {
            assert_contains(
                &o.stdout,
                "[HRR] Blob journal: 1 object(s) restored from 1 record(s)\n",
            );
        }
        assert_eq!(
            std::fs::read(hrr_archive::blobs::blob_path(&pid, &id)).unwrap(),
            bytes
        );
        assert!(!pid.join("blobs.journal").exists());
    }
}

#[test]
fn repair_one_process_dir() {
    let (t, d) = demo_copy();
    let pid = d.join("pid-1204");
    let o = run_at(&pid, &["--repair"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        filter(&o.stdout, t.path()),
        "[HRR] Repaired archive: 9 events kept, clean trailer + manifest written; \
         saved 56 dropped tail bytes to <TMP>/demo.hrr/pid-1204/events.bin.dropped-at-2746\n"
    );
    let o = run_at(&pid, &["--repair"]);
    assert_eq!(
        o.stdout,
        "[HRR] Archive already complete (9 events); nothing to repair\n"
    );
    let o = run_at(&d.join("pid-1180"), &["--repair"]);
    assert_eq!(
        o.stdout,
        "[HRR] Archive already complete (16 events); nothing to repair\n"
    );
}

#[test]
fn repair_keeps_a_capture_the_writer_marked_incomplete_incomplete() {
    let t = tempfile::tempdir().unwrap();
    let reason = "blob write failed: disk full";
    let mut w = write_marked_incomplete(t.path(), 5, &test_schema(), reason).unwrap();
    let dir = w.dir().to_path_buf();
    w.events().flush(true).unwrap();
    std::mem::forget(w);
    std::fs::remove_file(dir.join("active")).unwrap();
    let o = run_at(&dir, &["--repair"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "[HRR] Repaired archive: 2 events kept, clean trailer + manifest written\n\
         [HRR] Still incomplete: writer marked it incomplete: blob write failed: disk full\n"
    );
    let o = run_at(&dir, &["--info"]);
    assert!(
        o.stdout.contains("Complete:           NO\n"),
        "{}",
        o.stdout
    );
    assert!(o
        .stdout
        .contains("- writer marked it incomplete: blob write failed: disk full"));
    let o = run_at(&dir, &["--events"]);
    assert!(o.stdout.ends_with(
        "# end: 2 events, incomplete: writer marked it incomplete: blob write failed: disk full\n"
    ));
}

#[test]
fn repair_of_a_root_reports_failures_with_exit_1() {
    let t = tempfile::tempdir().unwrap();
    capture(t.path(), 10, 3);
    let bad = capture(t.path(), 11, 3);
    let mut b = std::fs::read(bad.join("events.bin")).unwrap();
    b[4] = 9; // another format version
    std::fs::write(bad.join("events.bin"), b).unwrap();
    let o = run_at(t.path(), &["--repair"]);
    assert_eq!(o.code, 1);
    let out = filter(&o.stdout, t.path());
    assert_contains(&out, "[HRR] --- pid-11 ---\n[HRR] Repair failed: Version mismatch in <TMP>/pid-11/events.bin: file=9 reader=1\n");
    assert!(out.ends_with("[HRR] Repair summary: 0 repaired, 1 already complete, 1 failed\n"));
}

// ---------------------------------------------------------------------------------------------
// Bad input: one line on stderr, exit 1, never a panic

#[test]
fn missing_path_file_and_non_archive() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nope.hrr");
    let o = run_at(&missing, &["--info"]);
    assert_eq!(
        one_error_line(&o),
        format!(
            "hrr-playback: error: {}: no such file or directory",
            missing.display()
        )
    );
    let file = t.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let o = run_at(&file, &["--info"]);
    assert_eq!(
        one_error_line(&o),
        format!("hrr-playback: error: {}: not a directory", file.display())
    );
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for flag in ["--info", "--events", "--repair"] {
        let o = run_at(&empty, &[flag]);
        assert_eq!(
            one_error_line(&o),
            format!(
                "hrr-playback: error: {}: not an hrr archive (no manifest.json, events.bin or pid-*/ inside)",
                empty.display()
            )
        );
    }
    // a pid folder that lost its events.bin
    let pid = t.path().join("pid-77");
    std::fs::create_dir(&pid).unwrap();
    std::fs::write(pid.join("manifest.json"), r#"{"pid":77}"#).unwrap();
    let o = run_at(&pid, &["--info"]);
    assert_eq!(
        one_error_line(&o),
        format!(
            "hrr-playback: error: {}: no such file or directory",
            pid.join("events.bin").display()
        )
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&[]).code, 2);
    assert_eq!(run(&["examples/demo.hrr", "--bogus"]).code, 2);
    assert_eq!(run(&["examples/demo.hrr", "--repair", "--info"]).code, 2);
    assert_eq!(run(&["examples/demo.hrr", "--loop", "0"]).code, 2);
    assert_eq!(run(&["examples/demo.hrr", "--rtol", "x"]).code, 2);
}

#[test]
fn bad_headers() {
    let (t, dir, events) = capture_in_temp(4, 5);
    let good = std::fs::read(&events).unwrap();

    let mut b = good.clone();
    b[..4].copy_from_slice(b"ABCD");
    std::fs::write(&events, &b).unwrap();
    let o = run_at(&dir, &["--info"]);
    assert_eq!(
        one_error_line(&o),
        format!(
            "hrr-playback: error: Bad magic 0x44434241 in {} (expected 0x52524845)",
            events.display()
        )
    );

    let mut b = good.clone();
    b[4..6].copy_from_slice(&4u16.to_le_bytes());
    std::fs::write(&events, &b).unwrap();
    let mismatch = format!(
        "[HRR] Version mismatch in {}/events.bin: file=4 reader={FORMAT_VERSION}",
        dir.display()
    );
    for args in [
        vec!["--info"],
        vec!["--events"],
        vec![],
        vec!["--info", "--json"],
    ] {
        let o = run_at(&dir, &args);
        assert_eq!(one_error_line(&o), mismatch, "{args:?}");
    }
    // on a root with two processes, the listing is printed and the mismatch reported
    capture(t.path(), 5, 2);
    let o = run_at(t.path(), &["--info"]);
    assert_eq!(one_error_line(&o), mismatch);
    assert!(
        o.stdout
            .contains("pid-4 could not be read by this hrr-playback (the error follows on stderr)"),
        "{}",
        o.stdout
    );

    std::fs::write(&events, &good[..5]).unwrap();
    let o = run_at(&dir, &["--info"]);
    assert_eq!(
        one_error_line(&o),
        format!(
            "hrr-playback: error: {}: too short (5 bytes; missing the 8-byte file header)",
            events.display()
        )
    );
    std::fs::write(&events, FileHeader::current().encode()).unwrap();
    let o = run_at(&dir, &["--events"]);
    assert!(
        one_error_line(&o).contains("bad schema record: the file ends before its schema record")
    );
}

#[test]
fn implausible_record_lengths_are_recovered_not_errors() {
    let (t, dir, events) = capture_in_temp(4, 6);
    let good = std::fs::read(&events).unwrap();
    // offset of the third event: header, schema record, two events
    let mut off = FILE_HEADER_LEN;
    for _ in 0..3 {
        off += RecordHeader::decode(good[off..off + 32].try_into().unwrap()).total_len as usize;
    }
    for (bad, what) in [
        (5u32, "implausible record length 5"),
        (0x7fff_ffff, "implausible record length 2147483647"),
    ] {
        let mut b = good.clone();
        b[off + 26..off + 30].copy_from_slice(&bad.to_le_bytes());
        std::fs::write(&events, &b).unwrap();
        let o = run_at(&dir, &["--info"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stdout.contains("Complete:           NO\n"));
        assert!(o.stdout.contains("Events:             2\n"), "{}", o.stdout);
        assert!(o.stdout.contains(what), "{}", o.stdout);
        let o = run_at(t.path(), &["--info"]);
        assert_eq!(o.code, 0);
        let o = run_at(&dir, &["--events"]);
        assert_eq!(o.code, 0);
        assert_eq!(o.stdout.lines().count(), 3);
    }
}

#[test]
fn unknown_types_and_undecodable_payloads_are_shown_not_fatal() {
    let t = tempfile::tempdir().unwrap();
    let mut w = ProcessWriter::create(t.path(), 6, 1, &test_schema()).unwrap();
    w.events().append_at(77, 1, 10, b"abc").unwrap();
    w.events().append_at(1, 1, 11, &[0, 0, 0, 0, 1]).unwrap();
    let dir = w.dir().to_path_buf();
    w.finish().unwrap();
    let o = run_at(&dir, &["--events"]);
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout,
        "#1 T1 +0.000 type-0x004d 3 bytes\n\
         #2 T1 +0.000 apiAlloc(<undecodable: payload ends inside field `ptr` (offset 4, 1 bytes left, 8 needed)>)\n\
         # end: 2 events, complete\n"
    );
    let o = run_at(&dir, &["--events", "--json"]);
    let lines: Vec<serde_json::Value> = json_lines(&o.stdout);
    assert_eq!(lines[0]["name"], "type-0x004d");
    assert_eq!(lines[0]["payload_bytes"], 3);
    assert!(lines[1]["error"].as_str().unwrap().contains("`ptr`"));
    let o = run_at(&dir, &["--info"]);
    assert!(o.stdout.contains("  type-0x004d  1\n"), "{}", o.stdout);
}

#[test]
fn invalid_or_missing_manifests() {
    let (t, d) = demo_copy();
    let pid = d.join("pid-1180");
    std::fs::write(pid.join("manifest.json"), "{not json").unwrap();
    let o = run_at(&pid, &["--info"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let out = filter(&o.stdout, t.path());
    assert_contains(&out, "Events:             16\n");
    assert_contains(&out, "- manifest problem: <TMP>/demo.hrr/pid-1180/manifest.json: invalid manifest: key must be a string");
    let o = run_at(&d, &["--info"]);
    assert_eq!(o.code, 0);
    let out = filter(&o.stdout, t.path());
    assert_contains(&out, "1180  ?           NO        16");
    assert_contains(&out, "pid-1180 is incomplete: manifest problem: ");

    std::fs::remove_file(pid.join("manifest.json")).unwrap();
    let o = run_at(&pid, &["--info"]);
    assert!(
        o.stdout.contains("- manifest.json is missing\n"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("PID:                1180\n"));

    std::fs::write(d.join("manifest.json"), "[]").unwrap();
    let o = run_at(&d, &["--info"]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout.contains("Note: root manifest problem: "),
        "{}",
        o.stdout
    );
    std::fs::remove_file(d.join("manifest.json")).unwrap();
    let o = run_at(&d, &["--info"]);
    assert!(o
        .stdout
        .contains("Note: root manifest.json is missing; the index above was rebuilt in memory\n"));
    assert!(o.stdout.contains("Owner PID: 1204\n") || o.stdout.contains("Owner PID: 1180\n"));
}

#[test]
fn unreadable_files() {
    let (_t, d) = demo_copy();
    let events = d.join("pid-1180/events.bin");
    std::fs::set_permissions(&events, std::fs::Permissions::from_mode(0o000)).unwrap();
    let o = run_at(&d.join("pid-1180"), &["--info"]);
    if !is_root() {
        assert_eq!(
            one_error_line(&o),
            format!(
                "hrr-playback: error: {}: Permission denied (os error 13)",
                events.display()
            )
        );
    } else {
        assert_eq!(o.code, 0); // root reads it anyway
    }
    std::fs::set_permissions(&events, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn symlinks_inside_an_archive_are_refused() {
    let (_t, d) = demo_copy();
    let pid = d.join("pid-1180");
    for name in ["events.bin", "manifest.json"] {
        let real = d.join(format!("real-{name}"));
        std::fs::rename(pid.join(name), &real).unwrap();
        std::os::unix::fs::symlink(&real, pid.join(name)).unwrap();
        let link = pid.join(name).display().to_string();
        for args in [vec!["--info"], vec!["--events"], vec!["--repair"], vec![]] {
            let o = run_at(&pid, &args);
            assert_eq!(
                one_error_line(&o),
                format!(
                    "hrr-playback: error: {link}: is a symbolic link; archives never follow links"
                ),
                "{name} {args:?}"
            );
        }
        let torn = std::fs::read(d.join("pid-1204/events.bin")).unwrap();
        for flag in ["--info", "--repair"] {
            let o = run_at(&d, &[flag]);
            assert_eq!(
                one_error_line(&o),
                format!(
                    "hrr-playback: error: {link}: is a symbolic link; archives never follow links"
                )
            );
        }
        // refused before anything was written
        assert_eq!(std::fs::read(d.join("pid-1204/events.bin")).unwrap(), torn);
        std::fs::remove_file(pid.join(name)).unwrap();
        std::fs::rename(&real, pid.join(name)).unwrap();
    }
}

#[test]
fn a_mismatch_on_a_root_is_said_once_and_repair_is_not_advised() {
    let (t, _dir, events) = capture_in_temp(4, 5);
    let mut b = std::fs::read(&events).unwrap();
    b[4..6].copy_from_slice(&4u16.to_le_bytes());
    std::fs::write(&events, &b).unwrap();
    capture(t.path(), 5, 2);
    let o = run_at(t.path(), &["--info"]);
    assert_eq!(o.code, 1);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert_eq!(all.matches("Version mismatch").count(), 1, "{all}");
    assert!(
        !all.contains("--repair\n") || !all.contains(&format!("{} --repair", t.path().display())),
        "{all}"
    );
    assert!(
        o.stderr
            .contains("hint: this hrr-playback reads format version"),
        "{}",
        o.stderr
    );
}
