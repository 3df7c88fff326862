//! `hrr-playback --info`, `--events` and `--repair` on hostile archives built here: planted
//! links, non-canonical pid folders, junk `active` markers, damaged manifests, a disk that
//! fills up during a repair, temp files of killed runs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use hrr_archive::manifest;
use hrr_archive::testkit::{link_folder_out, write_small_capture};

use hrr_archive::testkit::assert_contains;

const PID: u32 = 2674;

fn capture(root: &Path) -> PathBuf {
    write_small_capture(root, PID).unwrap()
}

/// A small capture in a new temporary folder (kept alive): the folder, the archive root
/// `run.hrr` and its process folder.
fn captured() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("run.hrr");
    let dir = capture(&root);
    (t, root, dir)
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String) {
    let o = Command::cargo_bin("hrr-playback")
        .unwrap()
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn links_inside_a_capture_are_refused_by_info_events_and_repair() {
    for name in ["blobs", "code_objects", "regions"] {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = t.path().join("run.hrr");
        let dir = capture(&root);
        link_folder_out(&dir, name, outside.path()).unwrap();
        let shown = dir.join(name).display().to_string();
        for args in [vec!["--info"], vec!["--info", "--events"], vec!["--repair"]] {
            for at in [&root, &dir] {
                let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![at];
                a.extend(args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
                let (code, text) = run(&a);
                assert_ne!(code, 0, "{name} {args:?} on {}: {text}", at.display());
                assert!(
                    text.contains(&shown) && text.contains("symbolic link"),
                    "{name} {args:?} on {}: {text}",
                    at.display()
                );
            }
        }
    }
}

#[test]
fn a_non_canonical_pid_folder_beside_the_canonical_one_is_refused() {
    let (_t, root, dir) = captured();
    let twin = root.join("pid-02674");
    std::fs::create_dir(&twin).unwrap();
    for f in ["events.bin", "manifest.json"] {
        std::fs::copy(dir.join(f), twin.join(f)).unwrap();
    }
    for args in [&["--info"][..], &["--repair"], &["--info", "--events"]] {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&root];
        a.extend(args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
        let (code, text) = run(&a);
        assert_ne!(code, 0, "{args:?}: {text}");
        assert!(
            text.contains("pid-02674") && text.contains("canonical"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn a_junk_active_marker_is_an_error_for_repair_and_info() {
    let (_t, root, dir) = captured();
    std::fs::write(dir.join("active"), b"definitely not a pid").unwrap();
    let (code, text) = run(&[&dir, &"--repair"]);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("active") && text.contains("not a writer's"),
        "{text}"
    );
    assert!(
        dir.join("active").exists(),
        "a refused repair removed the marker"
    );
    let (code, text) = run(&[&dir, &"--info"]);
    assert_ne!(code, 0, "{text}");
    assert_contains(&text, "not a writer's");
    let (_, text) = run(&[&root, &"--info"]);
    assert_contains(&text, "not a writer's");
}

#[test]
fn repair_keeps_the_keys_of_a_truncated_manifest_and_says_so() {
    let (_t, _, dir) = captured();
    let mut m = manifest::read_process_manifest(&dir).unwrap();
    m.metadata = Some(serde_json::json!({"devices": [{"name": "NVIDIA H200"}]}));
    m.passthrough_calls.insert("cuGetProcAddress_v2".into(), 3);
    m.extra
        .insert("last_key".into(), serde_json::json!("written last"));
    manifest::write_process_manifest(&dir, &m).unwrap();
    let bytes = std::fs::read(dir.join("manifest.json")).unwrap();
    // cut inside the last key's value
    std::fs::write(dir.join("manifest.json"), &bytes[..bytes.len() - 8]).unwrap();
    let (code, text) = run(&[&dir, &"--repair"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("manifest.json was damaged") && text.contains("rebuilt"),
        "{text}"
    );
    let after = manifest::read_process_manifest(&dir).unwrap();
    assert_eq!(after.metadata, m.metadata);
    assert_eq!(after.passthrough_calls, m.passthrough_calls);
    assert_eq!(after.api, m.api);
    assert!(after.status.complete && !after.extra.contains_key("last_key"));
}

#[test]
fn repair_removes_temp_files_of_a_killed_run_with_a_notice() {
    let (_t, root, dir) = captured();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(format!(".manifest.json.{dead}.0.tmp"));
    let stale_root = root.join(format!(".manifest.json.{dead}.1.tmp"));
    std::fs::write(&stale, b"{").unwrap();
    std::fs::write(&stale_root, b"{").unwrap();
    let (code, text) = run(&[&root, &"--repair"]);
    assert_eq!(code, 0, "{text}");
    assert!(!stale.exists() && !stale_root.exists(), "{text}");
    assert_contains(&text, "stale temp file");
}

/// ENOSPC for real: the capture is copied into a 1 MiB tmpfs (in a private mount namespace)
/// with a torn tail too big to save there; the repair must fail and leave no temp file.
#[test]
fn enospc_during_repair_leaves_no_temp_files() {
    let (t, _, dir) = captured();
    // ~700 KiB of non-zero garbage after the trailer's place
    let ev = dir.join("events.bin");
    let len = std::fs::metadata(&ev).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&ev).unwrap();
    f.set_len(len - 44).unwrap();
    let mut rng = hrr_archive::testkit::Rng(7);
    std::os::unix::fs::FileExt::write_all_at(&f, &rng.bytes(700 << 10), len - 44).unwrap();
    drop(f);
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hrr-playback");
    let script = format!(
        "mount -t tmpfs -o size=1m hrr-test '{m}' || exit 77; cp -a '{d}' '{m}/' || exit 78; \
         '{b}' '{m}/pid-{PID}' --repair; echo \"rc=$?\"; echo LEFT:; ls -a '{m}/pid-{PID}'",
        m = mnt.display(),
        d = dir.display(),
        b = bin.display()
    );
    let o = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .output();
    let Ok(o) = o else {
        eprintln!("skipped: no unshare");
        return;
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if matches!(o.status.code(), Some(77) | Some(1)) && !text.contains("rc=") {
        eprintln!("skipped: cannot mount a tmpfs here: {text}");
        return;
    }
    assert!(text.contains("rc=") && !text.contains("rc=0"), "{text}");
    assert_contains(&text, "No space left");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let left = stdout.split("LEFT:").nth(1).unwrap_or_default();
    assert!(!left.contains(".tmp"), "temp files left behind: {text}");
    assert!(
        left.contains("events.bin") && !left.contains("dropped-at"),
        "{text}"
    );
}

#[test]
fn repair_keeps_a_2_gib_hole_at_the_tail_sparse() {
    use std::os::unix::fs::MetadataExt;
    let (_t, _, dir) = captured();
    let ev = dir.join("events.bin");
    let len = std::fs::metadata(&ev).unwrap().len();
    let hole: u64 = 2 << 30;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&ev)
        .unwrap()
        .set_len(len - 44 + hole)
        .unwrap();
    let (code, text) = run(&[&dir, &"--repair"]);
    assert_eq!(code, 0, "{text}");
    let tail = dir.join(format!("events.bin.dropped-at-{}", len - 44));
    let meta = std::fs::metadata(&tail).unwrap();
    assert_eq!(meta.len(), hole, "{text}");
    assert!(
        meta.blocks() * 512 < 1 << 20,
        "a {hole}-byte hole became {} bytes on disk",
        meta.blocks() * 512
    );
}

#[test]
fn a_repair_is_refused_while_another_command_holds_the_archive() {
    let (_t, root, dir) = captured();
    let held = hrr_archive::lock::exclusive(&root, "scrub").unwrap();
    for at in [&root, &dir] {
        let (code, text) = run(&[at, &"--repair"]);
        assert_ne!(code, 0, "{text}");
        assert_contains(&text, "in use by another");
    }
    drop(held);
    let (code, text) = run(&[&root, &"--repair"]);
    assert_eq!(code, 0, "{text}");
}
