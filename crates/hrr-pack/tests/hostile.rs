//! `hrr-pack pack`, `unpack`, `list` and `verify` on hostile archives and packs built here:
//! planted links, non-canonical pid folders, a forged pack index summary, temp folders of a
//! killed unpack.

use std::path::PathBuf;

use hrr_archive::pack::{self, PackOptions};
use hrr_archive::progress::NoProgress;
use hrr_archive::testkit::{link_folder_out, write_small_capture};

mod common;
use common::{exits, run, succeeds, text};

use hrr_archive::testkit::assert_contains;

const PID: u32 = 2674;

/// [`write_small_capture`] at `run.hrr` in a new temp folder: the folder, the archive, its pid
/// folder.
fn temp_capture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("run.hrr");
    let dir = write_small_capture(&root, PID).unwrap();
    (t, root, dir)
}

#[test]
fn verify_and_pack_refuse_a_symlinked_folder_naming_it() {
    for name in ["blobs", "code_objects", "regions"] {
        let (t, root, dir) = temp_capture();
        let outside = tempfile::tempdir().unwrap();
        link_folder_out(&dir, name, outside.path()).unwrap();
        let o = run(&[&"verify", &root]);
        assert_ne!(o.status.code(), Some(0), "{name}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("pid-{PID}/{name}")) && text(&o).contains("symbolic link"),
            "{name}: {}",
            text(&o)
        );
        let out = t.path().join("x.hrr.tar.zst");
        let o = run(&[&"pack", &root, &"-o", &out]);
        assert_ne!(o.status.code(), Some(0), "{name}: {}", text(&o));
        assert!(text(&o).contains(name), "{name}: {}", text(&o));
        assert!(!out.exists());
    }
}

#[test]
fn pack_refuses_a_non_canonical_pid_folder() {
    let (t, root, dir) = temp_capture();
    let twin = root.join("pid-02674");
    std::fs::create_dir(&twin).unwrap();
    std::fs::copy(dir.join("events.bin"), twin.join("events.bin")).unwrap();
    for args in [
        vec![
            "pack".to_string(),
            root.display().to_string(),
            "-o".into(),
            t.path().join("p.hrr.tar.zst").display().to_string(),
        ],
        vec!["verify".into(), root.display().to_string()],
        vec!["list".into(), root.display().to_string()],
    ] {
        let a: Vec<&dyn AsRef<std::ffi::OsStr>> = args
            .iter()
            .map(|s| s as &dyn AsRef<std::ffi::OsStr>)
            .collect();
        let o = run(&a);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("pid-02674"), "{args:?}: {}", text(&o));
    }
}

#[test]
fn a_made_up_index_summary_fails_verify_and_list_says_whose_numbers_it_shows() {
    let (t, root, _) = temp_capture();
    let mut plan = pack::plan(&root, &PackOptions::default(), &NoProgress).unwrap();
    plan.index.processes[0].event_count = 1_000_000_000_000_000;
    let forged = t.path().join("forged.hrr.tar.zst");
    pack::write_pack(
        &plan,
        std::fs::File::create(&forged).unwrap(),
        &PackOptions::default(),
        &NoProgress,
    )
    .unwrap();
    let o = exits(&[&"verify", &forged], 1);
    assert!(
        text(&o).contains("hrr-pack-index.json")
            && text(&o).contains("event_count 1000000000000000"),
        "{}",
        text(&o)
    );
    let o = succeeds(&[&"list", &forged]);
    let out = text(&o);
    assert_contains(&out, "not checked against its contents");
    assert_contains(&out, "IMPOSSIBLE");
    let o = run(&[&"list", &forged, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"], "index (unverified)");
    // an honest pack verifies, and its listing has no such warning
    let honest = t.path().join("honest.hrr.tar.zst");
    succeeds(&[&"pack", &root, &"-o", &honest]);
    exits(&[&"verify", &honest], 0);
    assert!(!text(&run(&[&"list", &honest])).contains("IMPOSSIBLE"));
}

#[test]
fn unpack_removes_the_temp_folder_of_a_killed_unpack_with_a_notice() {
    let (t, root, _) = temp_capture();
    let packed = t.path().join("run.hrr.tar.zst");
    succeeds(&[&"pack", &root, &"-o", &packed]);
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    // what an unpack killed by SIGKILL leaves: its staging folder, named with its (dead) pid
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dest.join(format!(".hrr-unpack-{dead}-k1lled"));
    std::fs::create_dir_all(stale.join("run.hrr/pid-2674/blobs")).unwrap();
    std::fs::write(stale.join("run.hrr/pid-2674/events.bin"), b"partial").unwrap();
    let o = succeeds(&[&"unpack", &packed, &"-C", &dest]);
    assert!(!stale.exists(), "{}", text(&o));
    assert!(text(&o).contains("stale temp folder"), "{}", text(&o));
    let left: Vec<String> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["run.hrr"]);
}
