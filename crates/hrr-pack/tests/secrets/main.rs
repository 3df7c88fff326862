//! The planted-secret corpus: a secret of every rule, in every context a process image holds
//! (plain C string, JSON, environment block, HTTP header, UTF-16LE, between random bytes, right
//! next to alphanumeric bytes, across a 1 MiB read boundary, base64-wrapped), written into the
//! blobs of real archives; `hrr-pack scan` must find 100% of them and, after `hrr-pack scrub`,
//! not one byte-window of any secret may be left anywhere in the archive.
//! Also: no false positive on the system's own binaries; the archive lock; a `kill -9` sweep
//! over scrub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hrr_archive::testkit::Rng;
use hrr_pack::scan::rules::ids;

#[path = "../common/mod.rs"]
mod common;
mod corpus;
mod plants;

use common::{bin, exits, run, succeeds, text};
use corpus::{contains, corpus, files, occurring, residue_needles, write_process, Form};
use plants::{binary_plants, github_style, text_plants};

// ---------------------------------------------------------------------------------------------
// Recall and residue

#[test]
fn every_rule_in_every_context_is_found_and_fully_scrubbed() {
    let mut r = Rng(0x5ec2e7);
    let mut plants = text_plants(&mut r);
    plants.extend(binary_plants(&mut r));
    // every rule has a plant
    for id in ids() {
        assert!(
            plants.iter().any(|p| p.rule == id),
            "no plant for rule {id}"
        );
    }
    let (blobs, placed) = corpus(&plants, &mut r);
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("corpus.hrr");
    write_process(&src, 4242, &blobs, b"\x7fELF code");
    let o = exits(&[&"scan", &src, &"--json", &"--no-progress"], 3);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // findings by blob content hash (the file name's id): map blob index -> file
    let mut by_file: BTreeMap<String, Vec<(u64, u64, String)>> = BTreeMap::new();
    let raw_needles: Vec<(String, Vec<u8>)> = plants
        .iter()
        .flat_map(|p| {
            residue_needles(p, &Form::Raw)
                .into_iter()
                .map(move |n| (p.rule.to_string(), n))
        })
        .collect();
    let shown = occurring(&o.stdout, &raw_needles);
    assert!(shown.is_empty(), "scan output shows secrets of {shown:?}");
    for f in v["findings"].as_array().unwrap() {
        by_file
            .entry(f["file"].as_str().unwrap().to_string())
            .or_default()
            .push((
                f["offset"].as_u64().unwrap(),
                f["length"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_string(),
            ));
    }
    let ids_of: Vec<String> = blobs
        .iter()
        .map(|b| {
            let h = blake3::hash(b);
            let hex = h.to_hex();
            format!("pid-4242/blobs/{}/{}.blob", &hex[..2], &hex[..32])
        })
        .collect();
    let mut missed = Vec::new();
    let mut wrong_rule = Vec::new();
    for pl in &placed {
        let p = &plants[pl.plant];
        let blob = &blobs[pl.blob];
        let (start, end) = pl.secret_range(p, blob);
        let file = &ids_of[pl.blob];
        let hit = by_file.get(file).and_then(|fs| {
            fs.iter()
                .find(|(o, l, _)| (*o as usize) <= start + 2 && (*o + *l) as usize + 2 >= end)
        });
        match hit {
            None => missed.push(format!(
                "{} in {}: {:?} in {:?}",
                p.rule,
                pl.context,
                String::from_utf8_lossy(&p.text),
                &blob[pl.at.saturating_sub(8)..(pl.at + p.text.len() + 8).min(blob.len())]
            )),
            Some((_, _, rule)) if rule != p.rule => {
                wrong_rule.push(format!("{} in {} found as {rule}", p.rule, pl.context))
            }
            _ => {}
        }
    }
    let total = placed.len();
    eprintln!(
        "recall: {}/{total} planted secrets ({} plants of {} rules); {} found under another rule",
        total - missed.len(),
        plants.len(),
        ids().len(),
        wrong_rule.len()
    );
    assert!(
        missed.is_empty(),
        "missed {}/{total}: {missed:#?}",
        missed.len()
    );
    assert!(wrong_rule.is_empty(), "{wrong_rule:#?}");

    // scrub in place: zero residue anywhere in the folder (archive and beside it)
    succeeds(&[&"scrub", &src, &"--no-progress"]);
    let mut needles: Vec<(String, Vec<u8>)> = Vec::new();
    for pl in &placed {
        let p = &plants[pl.plant];
        for n in residue_needles(p, &pl.form) {
            needles.push((format!("{} ({})", p.rule, pl.context), n));
        }
    }
    let mut residue = Vec::new();
    for (path, content) in files(t.path()) {
        for l in occurring(&content, &needles) {
            residue.push(format!("{l} left in {}", path.display()));
        }
    }
    assert!(residue.is_empty(), "{residue:#?}");
    // and the scrubbed archive is valid and clean
    succeeds(&[&"verify", &src]);
    exits(&[&"scan", &src, &"--no-progress"], 0);
}

// ---------------------------------------------------------------------------------------------
// False positives on the system's own binaries

#[test]
fn no_false_positive_on_system_binaries_and_the_readme() {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in ["/usr/bin", "/bin"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                let p = e.path();
                if n.starts_with("python3") && !n.ends_with("-config") && p.is_file() {
                    candidates.push(p);
                }
            }
        }
    }
    for lib in ["libc.so.6", "libssl.so.3", "libcrypto.so.3"] {
        for dir in [
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib64",
            "/usr/lib64",
        ] {
            let p = Path::new(dir).join(lib);
            if p.exists() {
                candidates.push(p);
                break;
            }
        }
    }
    candidates.push(PathBuf::from(env!("CARGO_BIN_EXE_hrr-pack")));
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"));
    // a path that does not exist is skipped; links are resolved (scan opens no link)
    let mut seen = std::collections::HashSet::new();
    let candidates: Vec<PathBuf> = candidates
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| seen.insert(p.clone()))
        .collect();
    let system = candidates
        .iter()
        .filter(|p| !p.starts_with(env!("CARGO_MANIFEST_DIR")) && !p.ends_with("hrr-pack"))
        .count();
    assert!(
        system > 0,
        "none of the system binaries exist: {candidates:?}"
    );
    let mut found = Vec::new();
    for p in &candidates {
        let o = run(&[&"scan", p, &"--json", &"--no-progress"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}: {}", p.display(), text(&o)));
        eprintln!(
            "{}: {} findings in {} bytes",
            p.display(),
            v["found"],
            v["bytes_scanned"]
        );
        for f in v["findings"].as_array().unwrap() {
            found.push(format!("{}: {f}", p.display()));
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

// ---------------------------------------------------------------------------------------------
// Lock and crash safety

/// A capture with a few secrets and enough blobs that a scrub takes a while.
fn small_secret_archive(root: &Path, r: &mut Rng) -> Vec<Vec<u8>> {
    let mut secrets = Vec::new();
    let mut blobs = Vec::new();
    for i in 0..200 {
        let mut b = r.bytes(20_000);
        if i % 4 == 0 {
            let body = github_style(r);
            let tok = format!("\0GITHUB_TOKEN=ghp_{body}\0");
            b.splice(5000..5000, tok.bytes());
            secrets.push(body.into_bytes());
        }
        blobs.push(b);
    }
    write_process(root, 777, &blobs, b"code");
    secrets
}

fn leftovers(dir: &Path, secrets: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    for (p, c) in files(dir) {
        for s in secrets {
            if contains(&c, s) {
                out.push(p.display().to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn a_second_scrub_or_pack_is_refused_while_one_holds_the_lock() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("locked.hrr");
    small_secret_archive(&src, &mut Rng(7));
    let held = hrr_archive::lock::exclusive(&src, "scrub").unwrap();
    for args in [
        vec!["scrub", "--no-progress"],
        vec!["pack", "--no-progress", "-o"],
    ] {
        let mut c = bin();
        c.args(&args);
        if args[0] == "pack" {
            c.arg(t.path().join("x.hrr.tar.zst"));
        }
        let o = c.arg(&src).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let msg = text(&o);
        assert!(
            msg.contains("in use by another hrr-pack") && msg.contains("scrub"),
            "{msg}"
        );
    }
    drop(held);
    succeeds(&[&"scrub", &src, &"--no-progress"]);
    // nothing left beside the archive: no lock file, no staging folder
    let names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["locked.hrr".to_string()]);
}

#[test]
fn kill_9_at_any_instant_of_scrub_never_loses_the_archive_nor_leaves_a_secret() {
    let mut r = Rng(0xdead);
    // how long one scrub takes here
    let t = tempfile::tempdir().unwrap();
    let probe = t.path().join("probe.hrr");
    small_secret_archive(&probe, &mut r);
    let t0 = std::time::Instant::now();
    succeeds(&[&"scrub", &probe, &"--no-progress"]);
    let full = t0.elapsed();
    let instants = 24u32;
    let mut killed_before_end = 0;
    for i in 0..instants {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("run.hrr");
        let secrets = small_secret_archive(&src, &mut r);
        let mut child = bin()
            .arg("scrub")
            .arg("--no-progress")
            .arg(&src)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(full.mul_f64(i as f64 / instants as f64 * 1.1));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if !status.success() {
            killed_before_end += 1;
        }
        // the archive is at its name (or parked, which the next command puts back)
        let parked = t.path().join(".run.hrr.hrr-scrub-old");
        assert!(src.exists() || parked.exists(), "instant {i}: archive lost");
        // the next scrub finishes or rolls back, then completes: no secret anywhere
        let o = run(&[&"scrub", &src, &"--no-progress"]);
        assert!(o.status.success(), "instant {i}: {}", text(&o));
        let left = leftovers(t.path(), &secrets);
        assert!(left.is_empty(), "instant {i}: secrets left in {left:?}");
        let o = run(&[&"verify", &src]);
        assert!(o.status.success(), "instant {i}: {}", text(&o));
        let names: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["run.hrr".to_string()], "instant {i}");
    }
    eprintln!("kill -9 sweep: {instants} instants, {killed_before_end} killed before the end");
    // Instants are spread over the measured length of one scrub; on a loaded machine many may
    // land after the end, but the sweep must have killed scrubs in flight.
    assert!(
        killed_before_end >= 2,
        "the sweep killed no scrub in flight"
    );
}

#[test]
fn pack_completes_an_interrupted_scrub_before_packing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("p.hrr");
    let secrets = small_secret_archive(&src, &mut Rng(11));
    // leftovers of a scrub killed after its swap: the unscrubbed tree in the staging folder
    succeeds(&[
        &"scrub",
        &src,
        &"-o",
        &t.path().join("scrubbed.hrr"),
        &"--no-progress",
    ]);
    let stage = t.path().join(".p.hrr.hrr-scrub");
    std::fs::rename(&src, &stage).unwrap();
    std::fs::rename(t.path().join("scrubbed.hrr"), &src).unwrap();
    std::fs::write(t.path().join(".p.hrr.hrr-scrub-ready"), b"").unwrap();
    let out = t.path().join("p.hrr.tar.zst");
    let o = succeeds(&[&"pack", &src, &"-o", &out, &"--no-progress"]);
    assert!(text(&o).contains("interrupted scrub"), "{}", text(&o));
    assert!(!stage.exists());
    let left = leftovers(t.path(), &secrets);
    assert!(left.is_empty(), "{left:?}");
    exits(&[&"scan", &out, &"--no-progress"], 0);
}
