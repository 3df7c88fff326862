//! The `hrr-playback` command line, run as a user would: golden outputs on the checked-in demo
//! archive (`examples/demo.hrr`), choosing a process of a root, `--version`, pipes and read-only
//! archives, and `--pid`, `--list`, packs, JSON everywhere and help. Repair and bad input:
//! `cli_repair.rs`; the helpers both use: `cli_common/mod.rs`.
//!
//! Golden files live in `tests/golden/`; after an intended output change, regenerate them with
//! `HRR_BLESS=1 cargo test -p hrr-playback --test cli --test cli_repair` and review the diff.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use hrr_archive::framing::FORMAT_VERSION;
use serde::Deserialize;

mod cli_common;
use cli_common::*;

use hrr_archive::testkit::assert_contains;

#[allow(dead_code)]
#[path = "../../hrr-archive/examples/make_demo.rs"]
mod make_demo;

// ---------------------------------------------------------------------------------------------
// Golden outputs on the demo archive

#[test]
fn demo_archive_is_what_make_demo_writes() {
    let t = tempfile::tempdir().unwrap();
    let fresh = t.path().join("demo.hrr");
    make_demo::write_demo(&fresh).unwrap();
    let rel = |m: BTreeMap<PathBuf, _>, base: &Path| -> Vec<PathBuf> {
        m.into_keys()
            .map(|p| p.strip_prefix(base).unwrap().to_path_buf())
            .collect()
    };
    let a = rel(listing(&fresh), &fresh);
    let b = rel(listing(&demo()), &demo());
    assert_eq!(
        a, b,
        "regenerate with: cargo run -p hrr-archive --example make_demo"
    );
    for p in a {
        let (x, y) = (fresh.join(&p), demo().join(&p));
        if x.is_file() {
            assert_eq!(
                std::fs::read(&x).unwrap(),
                std::fs::read(&y).unwrap(),
                "{}",
                p.display()
            );
        }
    }
}

#[test]
fn info_on_the_demo_root() {
    let o = run(&["examples/demo.hrr", "--info"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "");
    golden("info-root.txt", &o.stdout);
    assert!(o.stdout.starts_with(
        "HRR Archive Root: examples/demo.hrr\n========================================\n\
         Capture Mode: in-tree\nOwner PID: 1180\nProcesses: 2\n"
    ));
}

#[test]
fn info_on_each_process_of_the_demo() {
    for (pid, arg) in [
        (1180, "examples/demo.hrr/pid-1180"),
        (1204, "examples/demo.hrr/pid-1204/"),
    ] {
        let o = run(&[arg, "--info"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        golden(&format!("info-pid-{pid}.txt"), &o.stdout);
    }
}

#[test]
fn events_of_the_demo_as_text() {
    for pid in [1180, 1204] {
        let o = run(&[&format!("examples/demo.hrr/pid-{pid}"), "--events"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        golden(&format!("events-pid-{pid}.txt"), &o.stdout);
    }
    let both = run(&["examples/demo.hrr/pid-1204", "--info", "--events"]);
    assert_contains(
        &both.stdout,
        "\nEvents:\n#1 T1204 +0.000 cuInit(result=0, Flags=0)\n",
    );
}

/// Our own copy of the `--events --json` wire format: catches drift in either direction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEvent {
    seq: u64,
    timestamp_ns: u64,
    thread_id: u64,
    #[serde(rename = "type")]
    kind: u16,
    name: String,
    fields: serde_json::Map<String, serde_json::Value>,
}

#[test]
fn events_of_the_demo_as_json_lines() {
    let o = run(&["examples/demo.hrr/pid-1180", "--events", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let events: Vec<JsonEvent> = json_lines(&o.stdout);
    assert_eq!(events.len(), 16);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    let first = &events[0];
    assert_eq!(
        (first.seq, first.kind, first.name.as_str()),
        (1, 1, "cuInit")
    );
    assert_eq!(first.timestamp_ns, 1_700_000_000_000_000_000);
    assert_eq!(first.thread_id, 1180);
    assert_eq!(first.fields["result"], 0);
    assert_eq!(first.fields["Flags"], 0);
    let by_name = |n: &'static str| events.iter().filter(move |e| e.name == n);
    let launch = by_name("cuLaunchKernel").next().unwrap();
    assert_eq!(launch.thread_id, 1181);
    assert_eq!(launch.fields["kernel"], "vector_add");
    assert_eq!(launch.fields["f"], "0x555500003000");
    assert_eq!(launch.fields["blockDimX"], 256);
    assert_eq!(launch.fields["hStream"], "0x0");
    assert_eq!(
        launch.fields["params"],
        "00002000007f000000102000007f000000202000007f000000040000"
    );
    let keys: Vec<&str> = launch.fields.keys().map(String::as_str).collect();
    assert_eq!(
        keys[..3],
        ["result", "f", "kernel"],
        "fields keep schema order"
    );
    let alloc: Vec<_> = by_name("cuMemAlloc_v2").collect();
    assert_eq!(alloc.len(), 3);
    assert_eq!(alloc[0].fields["dptr"], "0x7f0000200000");
    assert_eq!(alloc[0].fields["bytesize"], 4096);
    // every blob an H2D or D2H copy names is in the store
    for e in by_name("cuMemcpyHtoD_v2").chain(by_name("cuMemcpyDtoH_v2")) {
        let id = e
            .fields
            .get("h2d_blob")
            .or(e.fields.get("d2h_blob"))
            .unwrap();
        let id = id.as_str().unwrap();
        assert_eq!(id.len(), 32);
        let blob = demo().join(format!("pid-1180/blobs/{}/{id}.blob", &id[..2]));
        assert_eq!(
            std::fs::metadata(&blob).unwrap().len(),
            4096,
            "{}",
            blob.display()
        );
    }
    // the crashed child: end-of-stream facts go to stderr, stdout stays pure JSON Lines
    let o = run(&["examples/demo.hrr/pid-1204", "--events", "--json"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.lines().count(), 9);
    assert!(
        o.stderr.contains("incomplete: no clean-shutdown trailer"),
        "{}",
        o.stderr
    );
}

#[test]
fn events_of_every_process_of_a_root() {
    let o = run(&["examples/demo.hrr", "--events", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let pids: Vec<u64> = json_lines::<serde_json::Value>(&o.stdout)
        .iter()
        .map(|v| v["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 25);
    assert_eq!((pids[0], pids[24]), (1180, 1204));
    let o = run(&["examples/demo.hrr", "--events"]);
    assert!(o
        .stdout
        .starts_with("# pid-1180 (examples/demo.hrr/pid-1180)\n#1 T1180"));
    assert_contains(&o.stdout, "\n# pid-1204 (examples/demo.hrr/pid-1204)\n");
}

#[test]
fn info_as_json() {
    let o = run(&["examples/demo.hrr", "--info", "--json"]);
    assert_eq!(o.code, 0);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["kind"], "root");
    assert_eq!(v["owner_pid"], 1180);
    assert_eq!(v["root_manifest"], "stale");
    assert_eq!(v["processes"][0]["complete"], true);
    assert_eq!(v["processes"][1]["complete"], false);
    assert_eq!(v["processes"][1]["events"], 9);
    assert_eq!(v["processes"][1]["blobs"], 1);
    let o = run(&["examples/demo.hrr/pid-1180", "--info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["kind"], "process");
    assert_eq!(v["api"], "cuda-driver");
    assert_eq!(v["api_version"], 13000);
    assert_eq!(v["complete"], true);
    assert_eq!(v["events"], 16);
    assert_eq!(v["threads"], serde_json::json!([1180, 1181]));
    assert_eq!(v["kernel_launches"], 1);
    assert_eq!(v["d2h_copies"], 1);
    assert_eq!(v["blobs"], 3);
    assert_eq!(v["blob_bytes"], 12288);
    assert_eq!(v["code_objects"], 1);
    assert_eq!(
        v["calls"][0],
        serde_json::json!({"name": "cuMemAlloc_v2", "count": 3})
    );
    assert_eq!(
        v["kernels"][0],
        serde_json::json!({"name": "vector_add", "demangled": "vector_add", "launches": 1})
    );
    assert_eq!(v["device_name"], "NVIDIA H200");
    assert_eq!(v["compute_capability"], "9.0");
    assert_eq!(v["passthrough_calls"]["cuGetExportTable"], 2);
    assert_eq!(v["duration_ns"], 97_020_000);
}

// ---------------------------------------------------------------------------------------------
// Roots: choosing a process

#[test]
fn a_root_with_several_processes_asks_to_choose() {
    let o = run(&["examples/demo.hrr"]);
    assert_eq!(o.code, 2);
    assert_eq!(o.stdout, "");
    assert!(o.stderr.contains("1180  0           yes"), "{}", o.stderr);
    assert!(o.stderr.contains("examples/demo.hrr/pid-1204"));
    assert!(o.stderr.ends_with(
        "[HRR] This archive holds 2 processes; choose one: hrr-playback examples/demo.hrr --pid <pid> (or hrr-playback examples/demo.hrr/pid-<pid>/), or replay them together with --all\n"
    ), "{}", o.stderr);
}

#[test]
fn a_root_with_one_process_resolves_by_itself() {
    let (t, d) = demo_copy();
    std::fs::remove_dir_all(d.join("pid-1204")).unwrap();
    let o = run_at(&d, &["--info"]);
    assert_eq!(o.code, 0);
    // the root table the guide shows first, then the process
    let out = filter(&o.stdout, t.path());
    assert!(
        out.starts_with("HRR Archive Root: <TMP>/demo.hrr\n"),
        "{out}"
    );
    assert_contains(&out, "\nHRR Archive: <TMP>/demo.hrr/pid-1180\n");
    let o = run_at(&d, &[]);
    assert_ne!(o.code, 2, "{}", o.stderr);
    assert!(!o.stderr.contains("choose one"));
}

// ---------------------------------------------------------------------------------------------
// --version, pipes, read-only archives

#[test]
fn version_needs_no_archive_and_no_gpu_library() {
    let o = hrr()
        .arg("--version")
        .env("LD_LIBRARY_PATH", "")
        .output()
        .unwrap();
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 5, "{s}");
    assert_eq!(
        lines[0],
        format!("hrr-playback {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(lines[1], format!("Format version: {FORMAT_VERSION}"));
    assert!(lines[2].starts_with("Revision: ") && lines[2].len() > "Revision: ".len());
    assert!(lines[3].starts_with("Runtime: "));
    assert!(lines[4].starts_with("HIP runtime: "));
    let o = hrr()
        .args(["--version", "--runtime", "/nonexistent/libcuda.so.1"])
        .output()
        .unwrap();
    let s = String::from_utf8(o.stdout).unwrap();
    assert_contains(
        &s,
        "Runtime: none found (/nonexistent/libcuda.so.1 not loadable)\n",
    );
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let t = tempfile::tempdir().unwrap();
    let dir = capture(t.path(), 3, 20_000);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hrr-playback"))
        .arg(&dir)
        .arg("--events")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("#1 T9 +0.000 apiAlloc("), "{first}");
    // the reader (and the pipe) is gone now
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

#[test]
fn info_and_events_never_write() {
    let (_t, d) = demo_copy();
    // read-only tree (root ignores modes; the listing comparison is the real check)
    let before = listing(&d);
    for p in before.keys() {
        let m = std::fs::metadata(p).unwrap();
        let mode = if m.is_dir() { 0o555 } else { 0o444 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = listing(&d);
    let pid = d.join("pid-1204");
    for args in [
        vec![d.as_os_str(), "--info".as_ref()],
        vec![d.as_os_str(), "--info".as_ref(), "--json".as_ref()],
        vec![d.as_os_str(), "--events".as_ref()],
        vec![d.as_os_str()],
        vec![pid.as_os_str(), "--info".as_ref(), "--events".as_ref()],
        vec![pid.as_os_str(), "--events".as_ref(), "--json".as_ref()],
    ] {
        let o = run_in(&args);
        assert!(o.code == 0 || o.code == 2, "{args:?}: {}", o.stderr);
    }
    assert_eq!(listing(&d), before);
    let o = run_at(&d, &["--info"]);
    assert!(o.stdout.contains("1204  1180        NO"));
    // restore so the temp dir can be removed
    for p in before.keys().chain([&d]) {
        let m = std::fs::metadata(p).unwrap();
        let mode = if m.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// issue 20: --pid, --list, packs, one error style, hints

fn pack_demo(dir: &Path) -> PathBuf {
    let pack = dir.join("demo.hrr.tar.zst");
    hrr_archive::pack::pack_to_file(
        &demo(),
        Some(&pack),
        &hrr_archive::pack::PackOptions {
            level: 3,
            threads: 1,
            force: true,
            sync: false,
            private: false,
        },
        &hrr_archive::progress::NoProgress,
    )
    .unwrap();
    pack
}

#[test]
fn pid_and_list_on_roots_and_packs() {
    let o = run(&["examples/demo.hrr", "--list"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o
        .stdout
        .starts_with("PID   Parent PID  Complete  Events  Blobs  Path\n"));
    assert_contains(
        &o.stdout,
        "1204  1180        NO        9       1      examples/demo.hrr/pid-1204\n",
    );
    let o = run(&["examples/demo.hrr", "--pid", "1204", "--info"]);
    assert_eq!(o.code, 0);
    assert!(o
        .stdout
        .starts_with("HRR Archive: examples/demo.hrr/pid-1204\n"));
    let o = run(&["examples/demo.hrr", "--pid", "77", "--info"]);
    assert_eq!(
        one_error_line(&o),
        "hrr-playback: error: examples/demo.hrr: no process 77 in this archive (it holds pid-1180, pid-1204)"
    );
    assert!(o.stderr.ends_with("hint: --list shows the processes\n"));

    let t = tempfile::tempdir().unwrap();
    let pack = pack_demo(t.path());
    let o = run_at(&pack, &["--list"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // paths inside the pack, never the temp folder it was unpacked into
    assert!(o.stdout.contains("  demo.hrr/pid-1180\n"), "{}", o.stdout);
    assert!(!o.stdout.contains("hrr-playback-"));
    let o = run_at(&pack, &[]);
    assert_eq!(o.code, 2);
    assert!(!o.stderr.contains("hrr-playback-"), "{}", o.stderr);
    assert!(o.stderr.contains(&format!(
        "choose one: hrr-playback {} --pid <pid>, or replay them together with --all\n",
        pack.display()
    )));
    let o = run_at(&pack, &["--pid", "1204", "--info"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("HRR Archive: demo.hrr/pid-1204\n"));
    // replay of one process of a pack reaches the driver (none here: the error says what works)
    let o = run_at(
        &pack,
        &["--pid", "1180", "--runtime", "/nonexistent/libcuda.so.1"],
    );
    assert_ne!(o.code, 0);
    assert!(
        o.stderr
            .contains("hint: --info, --events and --list need no GPU"),
        "{}",
        o.stderr
    );
}

#[test]
fn json_everywhere_and_errors_as_objects() {
    let o = run(&["--version", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.version/1");
    assert_eq!(v["format_version"], FORMAT_VERSION);
    let o = run(&["examples/demo.hrr", "--list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.processes/1");
    assert_eq!(v["processes"][1]["events"], 9);
    let o = run(&["nosuch.hrr", "--info", "--json"]);
    assert_eq!(o.code, 1);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.error/1");
    assert_eq!(v["error"], "nosuch.hrr: no such file or directory");
    assert_eq!(v["exit_code"], 1);
    let o = run(&["examples/demo.hrr", "--bogus", "--json"]);
    assert_eq!(o.code, 2);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["exit_code"], 2);
    let (_t, d) = demo_copy();
    let o = run_at(&d, &["--repair", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.repair/1");
    assert_eq!(
        (v["repaired"].as_u64(), v["already_complete"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn help_lists_exit_codes_and_completions_and_man_pages_are_generated() {
    let o = run(&["--help"]);
    assert!(o.stdout.contains("3 FAULT") && o.stdout.contains("2 usage"));
    let o = run(&["--completions", "bash"]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("--sync-watchdog-ms") && o.stdout.contains("--pid"));
    let t = tempfile::tempdir().unwrap();
    let o = run_in(&["--generate-man".as_ref(), t.path().as_os_str()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let page = std::fs::read_to_string(t.path().join("hrr-playback.1")).unwrap();
    assert!(page.contains(".TH") && page.contains("repair"));
    let t = tempfile::tempdir().unwrap();
    let o = run_in(&[
        "--generate-man".as_ref(),
        t.path().as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: hrr_cli::json::ManJson = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v.schema, "hrr.man/1");
    assert!(
        v.files.iter().any(|f| f.ends_with("hrr-playback.1")),
        "{v:?}"
    );
}

/// Every JSON object of the tool decodes with its own serde type (`deny_unknown_fields`): a key
/// added, renamed or dropped on one side fails here. docs/json.md describes them.
#[test]
fn json_outputs_decode_with_their_types() {
    use hrr_cli::json::{ErrorJson, ProcessesJson, RepairJson, VersionJson};
    let o = run(&["--version", "--json"]);
    let v: VersionJson = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v.schema, "hrr.version/1");
    let o = run(&["examples/demo.hrr", "--list", "--json"]);
    let v: ProcessesJson = serde_json::from_str(&o.stdout).unwrap();
    // the count hrr-pack list gives too: records in events.bin, counted for the crashed capture
    assert_eq!(v.processes[1].events, Some(9));
    let (_t, d) = demo_copy();
    let o = run_at(&d, &["--repair", "--json"]);
    let v: RepairJson = serde_json::from_str(&o.stdout).unwrap();
    assert!(v.ok && v.processes.len() == 2);
    let o = run_at(&d.join("pid-1204"), &["--repair", "--json"]);
    let v: RepairJson = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v.processes[0].outcome, "already_complete");
    let o = run(&["nosuch.hrr", "--json"]);
    let v: ErrorJson = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!((v.ok, v.exit_code), (false, 1));
    let o = run(&["examples/demo.hrr", "--json"]);
    let v: ErrorJson = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v.exit_code, 2);
    assert!(v.hint.unwrap().contains("--list"));
}
