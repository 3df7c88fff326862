//! issue 20: one error style, JSON types, completions, man pages, counts shared with --info,
//! `-` for standard input.

use super::*;

use hrr_archive::testkit::assert_contains;

#[test]
fn errors_are_one_line_each_cause_once_with_the_users_path() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nosuch.hrr");
    for cmd in ["list", "verify", "unpack", "scan"] {
        let o = run(&[&cmd, &missing]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.starts_with("hrr-pack: error: "), "{cmd}: {err}");
        assert!(!err.contains("(os error"), "{cmd}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count()
                + err.matches("no such file or directory").count(),
            1,
            "{cmd}: {err}"
        );
    }
    // the writer's temp file is never named, the user's output is
    let pid = demo_root().join("pid-1180");
    let o = run(&[&"pack", &pid, &"-o", &"/nonexistent/dir/x.hrr.tar.zst"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1));
    assert_contains(&err, "/nonexistent/dir/x.hrr.tar.zst");
    assert!(!err.contains(".tmp"), "{err}");
    // a damaged pack: the cause once
    let packed = t.path().join("p.hrr.tar.zst");
    succeeds(&[&"pack", &pid, &"-o", &packed]);
    let bytes = std::fs::read(&packed).unwrap();
    let cut = t.path().join("cut.hrr.tar.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&[&"unpack", &cut, &"-C", &t.path()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1));
    assert!(!err.contains(".hrr-unpack-"), "{err}");
    for word in err.split(": ") {
        assert!(err.matches(word).count() == 1 || word.len() < 12, "{err}");
    }
}

#[test]
fn json_outputs_decode_with_their_types_and_counts_agree_with_info() {
    use hrr_cli::json::{ErrorJson, ListJson};
    let t = tempfile::tempdir().unwrap();
    let o = run(&[&"list", &demo_root(), &"--json"]);
    let dir: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    // pid-1204 crashed: its manifest says 6, events.bin holds 9 records (what --info shows)
    assert_eq!(dir.processes[1].pid, 1204);
    assert_eq!(dir.processes[1].events, 9);
    let packed = t.path().join("demo.hrr.tar.zst");
    succeeds(&[&"pack", &demo_root(), &"-o", &packed, &"--force"]);
    let o = run(&[&"list", &packed, &"--json", &"--files"]);
    let pack: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(pack.processes, dir.processes);
    assert_eq!(pack.totals, dir.totals);
    assert!(pack.files.is_some());
    let o = run(&[&"list", &t.path().join("nosuch"), &"--json"]);
    let e: ErrorJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((e.ok, e.exit_code), (false, 1));
    let o = run(&[&"list", &"--json"]);
    let e: ErrorJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e.exit_code, 2);
    let o = run(&[&"--version", &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.version/1");
}

#[test]
fn pack_unpack_verify_scan_scrub_json_decode_with_their_types_and_counts_agree() {
    use hrr_cli::json::{ListJson, PackJson, ScanJson, ScrubJson, UnpackJson, VerifyJson};
    let (t, root, _) = secrets_in_temp();
    let packed = t.path().join("sec.hrr.tar.zst");
    let o = succeeds(&[&"pack", &root, &"-o", &packed, &"--json"]);
    let p: PackJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((p.schema.as_str(), p.kind.as_str()), ("hrr.pack/1", "root"));
    // One count for the files of an archive: pack, list --files, verify of the pack and of a
    // folder (an unpacked or pulled one) all say the same.
    let o = run(&[&"list", &packed, &"--files", &"--json"]);
    let l: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(l.files.unwrap().len() as u64, p.files);
    let o = run(&[&"verify", &packed, &"--json"]);
    let vp: VerifyJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(vp.ok, "{vp:?}");
    let o = run(&[&"verify", &root, &"--json"]);
    let vd: VerifyJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(vd.ok, "{vd:?}");
    assert_eq!(
        (vp.files_checked, vp.bytes_checked, vp.objects_checked),
        (p.files, p.bytes_in, vd.objects_checked)
    );
    assert_eq!((vd.files_checked, vd.bytes_checked), (p.files, p.bytes_in));
    assert_eq!(vd.objects_checked, l.totals.blobs + l.totals.code_objects);
    let o = run(&[&"verify", &packed]);
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        line.contains(&format!("{} files (", p.files))
            && line.contains(&format!(
                "{} objects (blobs, code objects)",
                vd.objects_checked
            )),
        "{line}"
    );
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = run(&[&"unpack", &packed, &"-C", &out, &"--json"]);
    let u: UnpackJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((u.files, u.bytes), (p.files, p.bytes_in));
    // scan finds the planted secrets (exit 3), scrub redacts them, a second scan finds none.
    let o = run(&[&"scan", &packed, &"--json"]);
    assert_eq!(o.status.code(), Some(3));
    let s: ScanJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (s.source.as_str(), s.found),
        ("pack", s.findings.len() as u64)
    );
    assert!(s.found > 0);
    let o = succeeds(&[&"scrub", &root, &"--json"]);
    let r: ScrubJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r.ok && r.changed && r.redacted > 0, "{r:?}");
    assert!(!r.objects.is_empty() && !r.events.is_empty());
    let o = run(&[&"scan", &root, &"--json"]);
    let s: ScanJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), s.found), (Some(0), 0));
}

#[test]
fn completions_man_pages_and_exit_codes_in_help() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&[&"completions", &shell]);
        assert!(o.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("unpack"),
            "{shell}"
        );
    }
    let t = tempfile::tempdir().unwrap();
    succeeds(&[&"man", &t.path()]);
    for page in ["hrr-pack.1", "hrr-pack-pack.1", "hrr-pack-scan.1"] {
        assert!(t.path().join(page).exists(), "{page}");
    }
    for args in [&["--help"][..], &["scan", "--help"], &["push", "--help"]] {
        let mut c = bin();
        c.args(args);
        let s = String::from_utf8(c.output().unwrap().stdout).unwrap();
        assert!(
            s.contains("3 scan found secrets") && s.contains("2 usage"),
            "{args:?}"
        );
    }
}

#[test]
fn dash_reads_standard_input() {
    let t = tempfile::tempdir().unwrap();
    let packed = t.path().join("p.hrr.tar.zst");
    assert!(
        run(&[&"pack", &demo_root().join("pid-1180"), &"-o", &packed])
            .status
            .success()
    );
    for cmd in [&["list", "-"][..], &["verify", "-"], &["unpack", "-", "-C"]] {
        let mut c = bin();
        c.args(cmd);
        if cmd[0] == "unpack" {
            c.arg(t.path());
        }
        c.stdin(std::fs::File::open(&packed).unwrap());
        let o = c.output().unwrap();
        assert!(o.status.success(), "{cmd:?}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("-") && !out.contains("hrr-stdin-"),
            "{cmd:?}: {out}"
        );
    }
    assert!(t.path().join("pid-1180/events.bin").exists());
}
