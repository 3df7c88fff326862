//! scrub: no secret left anywhere, the archive valid and replayable, --allow, staging copies,
//! running captures refused.

use std::io::Write;

use super::*;

#[test]
fn the_staging_copy_of_a_killed_scrub_to_o_is_removed_by_the_next_scrub_of_the_source() {
    let (t, src, secrets) = secrets_in_temp();
    // What `scrub -o out.hrr` leaves when killed while building: its staging folder (a full,
    // unscrubbed copy) beside OUT and its note beside the source; OUT itself never appeared.
    let out_dir = t.path().join("elsewhere");
    std::fs::create_dir(&out_dir).unwrap();
    let stage = out_dir.join(".out.hrr.hrr-scrub");
    std::fs::create_dir(&stage).unwrap();
    for f in walkdir::WalkDir::new(&src).min_depth(1) {
        let f = f.unwrap();
        let to = stage.join(f.path().strip_prefix(&src).unwrap());
        if f.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(f.path(), &to).unwrap();
        }
    }
    assert!(!grep_tree(&stage, &secrets).is_empty());
    std::fs::write(
        t.path().join(".sec.hrr.hrr-scrub-out"),
        stage.as_os_str().as_encoded_bytes(),
    )
    .unwrap();

    let o = succeeds(&[&"scrub", &src]);
    assert!(
        text(&o).contains("left by an interrupted scrub -o"),
        "{}",
        text(&o)
    );
    assert!(!stage.exists(), "the unscrubbed staging copy is gone");
    assert!(!t.path().join(".sec.hrr.hrr-scrub-out").exists());
    assert!(grep_tree(&src, &secrets).is_empty());
}

#[test]
fn scrub_leaves_no_secret_anywhere_and_keeps_the_archive_valid() {
    let (t, src, secrets) = secrets_in_temp();
    assert!(
        !grep_tree(&src, &secrets).is_empty(),
        "the secrets were planted"
    );
    let before = tree(&src);
    let mut outputs = Vec::new();

    // -o leaves the original alone
    let copy = t.path().join("copy.hrr");
    let o = succeeds(&[&"scrub", &src, &"-o", &copy]);
    outputs.push(o);
    assert_eq!(tree(&src), before, "scrub -o changed the original");
    assert!(
        grep_tree(&copy, &secrets).is_empty(),
        "{:?}",
        grep_tree(&copy, &secrets)
    );

    // a staging folder left by a crashed scrub is cleaned up
    let stale = t.path().join(".sec.hrr.hrr-scrub");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("junk"), b"x").unwrap();

    let o = succeeds(&[&"scrub", &src, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["changed"], true);
    assert!(v["redacted"].as_u64().unwrap() >= 40, "{v}");
    outputs.push(o);
    assert!(!stale.exists());
    assert_eq!(
        std::fs::read_dir(t.path()).unwrap().count(),
        2,
        "only sec.hrr and copy.hrr remain"
    );
    let hits = grep_tree(&src, &secrets);
    assert!(hits.is_empty(), "{hits:?}");

    // still valid: verify (objects match ids, every referenced blob exists), scan is clean
    for args in [
        vec!["verify"],
        vec!["verify", "--json"],
        vec!["list", "--json"],
        vec!["scan"],
        vec!["scan", "--json"],
    ] {
        let mut c = bin();
        c.args(&args).arg(&src);
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        outputs.push(o);
    }
    let o = run(&[&"list", &src, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["processes"][0]["scrubbed"], true);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(src.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["scrubbed"], true);

    // redactions.json: new ids, ranges, rule names and fingerprints, no secrets
    let red = hrr_archive::redact::read_redactions(&src.join("pid-300"))
        .unwrap()
        .unwrap();
    assert!(red.objects.len() >= 4, "{red:?}");
    let ranges = hrr_archive::redact::redacted_ranges(&src.join("pid-300")).unwrap();
    for (id, rs) in &ranges {
        let path = hrr_archive::blobs::blob_path(&src.join("pid-300"), id);
        let code = hrr_archive::blobs::find_code_object(&src.join("pid-300"), id);
        assert!(path.exists() || code.is_some(), "{id} missing");
        assert!(!rs.is_empty());
    }
    // the events now point at the scrubbed blobs: every D2H blob named by an event exists and
    // the redacted ones are exactly those with ranges
    let mut reader =
        hrr_archive::reader::EventReader::open(&src.join("pid-300/events.bin")).unwrap();
    let schema = reader.schema().unwrap().clone();
    let mut referenced = std::collections::BTreeSet::new();
    for rec in reader.by_ref() {
        let rec = rec.unwrap();
        let call = schema.call(rec.header.kind).unwrap();
        for r in hrr_archive::schema::object_fields(call, &rec.payload).unwrap() {
            referenced.insert(r.id.unwrap());
        }
    }
    assert!(reader.recovery().complete());
    for id in ranges.keys() {
        assert!(
            referenced.contains(id),
            "redacted object {id} is not referenced"
        );
    }

    // packed and shipped: still no secret in the pack's bytes (decompressed) nor its outputs
    let packed = t.path().join("sec.hrr.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &packed]);
    assert!(o.status.success());
    outputs.push(o);
    let tar = zstd_decompress(&std::fs::read(&packed).unwrap());
    for n in &secrets {
        assert!(
            !tar.windows(n.len()).any(|w| w == &n[..]),
            "a secret is in the pack"
        );
    }
    std::fs::remove_file(&packed).unwrap();

    // idempotent: a second scrub changes nothing
    let after = tree(&src);
    let o = succeeds(&[&"scrub", &src]);
    assert!(text(&o).contains("nothing to scrub"), "{}", text(&o));
    outputs.push(o);
    assert_eq!(tree(&src), after);
    for o in &outputs {
        grep_output(o, &secrets);
    }
}

#[test]
fn scrub_allow_keeps_an_allowed_secret() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a.hrr");
    let mut r = Rng(5);
    let token = format!("ghp_{}", r.text(36, ALNUM));
    let other = format!("npm_{}", r.text(36, ALNUM));
    let blob = format!("A={token}\0B={other}\0").into_bytes();
    write_process(&src, 9, &[blob], b"code");
    let o = run(&[&"scan", &src, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fp = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "github-token")
        .unwrap()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let allow_file = t.path().join("allow.txt");
    std::fs::File::create(&allow_file)
        .unwrap()
        .write_all(format!("# ok to ship\n{fp}\n").as_bytes())
        .unwrap();
    succeeds(&[&"scrub", &src, &"--allow-file", &allow_file]);
    assert!(!grep_tree(&src, &[token.clone().into_bytes()]).is_empty());
    assert!(grep_tree(&src, &[other.into_bytes()]).is_empty());
    exits(&[&"scan", &src, &"--allow", &fp], 0);
}

#[test]
fn refuses_to_scrub_a_running_capture() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a.hrr");
    write_process(&src, 9, &[b"x".to_vec()], b"code");
    std::fs::write(src.join("pid-9/active"), b"9\n").unwrap();
    fails_saying(&[&"scrub", &src], 1, "active");
}

#[test]
fn usage_errors_exit_2_and_json_errors_are_objects() {
    let o = run(&[&"pack", &"x", &"--level", &"30"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[&"list", &"/nonexistent/x.tar.zst", &"--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
}
