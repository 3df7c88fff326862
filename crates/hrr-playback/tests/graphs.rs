//! CUDA graphs built node by node (`cuGraphCreate`, `cuGraphAdd*Node`, parameter and exec
//! updates), captured from the fake driver's `graph_nodes` workload and replayed: the graph is
//! rebuilt node by node, the host bytes its H2D memcpy node reads are written before each launch
//! and the host buffers its D2H memcpy nodes write are checked after it.
//!
//! Needs `libhrr_capture.so` and `hrr-capture` built beside `hrr-playback` (`cargo build
//! --workspace` first; the README's test command does) and a C compiler.

use std::path::{Path, PathBuf};

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("-graphs")
}

fn replay(target: &Path, extra: &[&str]) -> (i32, String, String) {
    fake().replay(target, extra)
}

/// The recorded blob file of an event's blob field.
fn blob_of(dir: &Path, ev: &serde_json::Value, field: &str) -> PathBuf {
    blob_path(dir, ev["fields"][field].as_str().expect("a blob id"))
}

/// Replay `dir` with the blob at `p` zeroed, then put the blob back: exit code and stdout.
fn replay_with_zeroed_blob(dir: &Path, p: &Path) -> (i32, String) {
    let saved = std::fs::read(p).unwrap();
    std::fs::write(p, vec![0u8; saved.len()]).unwrap();
    let (code, out, _) = replay(dir, &[]);
    std::fs::write(p, &saved).unwrap();
    (code, out)
}

/// Capture `app MODE`, whose plain run must print `expect` and the same as the captured one;
/// returns the temporary folder (kept alive), the pid folder and its events.
fn captured_mode(
    app: &str,
    mode: &str,
    expect: &str,
) -> (tempfile::TempDir, PathBuf, Vec<serde_json::Value>) {
    let (tmp, arch) = temp_path("run.hrr");
    let o = fake().capture_as_plain(&arch, app, &[mode]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_contains(&out, expect);
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    (tmp, dir, events)
}

/// Capture `app graph_nodes`.
fn captured(app: &str) -> (tempfile::TempDir, PathBuf, Vec<serde_json::Value>) {
    captured_mode(app, "graph_nodes", "nodes host_node_runs=3")
}

#[test]
fn graphs_built_node_by_node_are_recorded_rebuilt_and_checked() {
    for app in ["driver_app", "direct_app"] {
        let (_tmp, dir, events) = captured(app);
        let count = |n: &str| events.iter().filter(|e| e["name"] == n).count();
        // both apps reach CUDA 12's cuGraphAddKernelNode_v2 (v2 parameters)
        let kernel_node = "cuGraphAddKernelNode_v2";
        // how many times each graph call is recorded
        for (call, n) in [
            ("cuGraphCreate", 2),
            (kernel_node, 2),
            ("cuGraphAddMemcpyNode", 3),
            ("cuGraphAddNode_v2", 1),
            ("cuGraphAddChildGraphNode", 1),
            ("cuGraphAddHostNode", 2),
            ("cuGraphAddDependencies", 1),
            ("cuGraphExecUpdate_v2", 1),
            ("cuGraphLaunch", 3),
            ("cuGraphClone", 1),
            ("cuGraphUpload", 1),
            ("cuGraphExecKernelNodeSetParams_v2", 1),
            ("cuGraphKernelNodeSetParams_v2", 1),
        ] {
            assert_eq!(count(call), n, "{app}: {call}");
        }
        // one host source per launch (the program changes it between launches: 3 blobs), two
        // host results per launch
        assert_eq!(count("hrrGraphHostSource"), 3, "{app}");
        assert_eq!(count("hrrGraphHostResult"), 6, "{app}");
        let sources: std::collections::HashSet<_> = events
            .iter()
            .filter(|e| e["name"] == "hrrGraphHostSource")
            .map(|e| e["fields"]["h2d_blob"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(sources.len(), 3, "{app}: {sources:?}");
        // the axpy node: recorded as a launch is, with its dependencies
        let axpy = events
            .iter()
            .find(|e| e["name"] == kernel_node && e["fields"]["kernel"] == "axpy")
            .unwrap();
        assert_eq!(axpy["fields"]["args_known"], 1, "{axpy}");
        assert_eq!(
            axpy["fields"]["deps"].as_array().unwrap().len(),
            2,
            "{axpy}"
        );

        for extra in [&[][..], &["--no-placement"], &["--sync-after-launch"]] {
            let (code, out, err) = replay(&dir, extra);
            assert_eq!(code, 0, "{app} {extra:?}: {out}{err}");
            assert_contains(&out, "[HRR] Graphs launched : 3");
            assert_contains(&out, "[HRR] Kernels launched: 1");
            assert_checks_exact(&out, 6);
            assert_contains(&out, "[HRR] PASS");
        }
        // looped: the graphs are rebuilt again, every launch's results checked again
        let (_, v) = fake().replay_json(&dir, &["--loop", "2"]);
        assert_eq!(v["result"], "PASS", "{v}");
        assert_eq!(v["graphs_launched"], 6, "{v}");
        assert_eq!(v["d2h_checks"]["exact"], 12, "{v}");
    }
}

#[test]
fn a_zeroed_host_source_or_result_of_a_graph_launch_is_a_mismatch() {
    let (_tmp, dir, events) = captured("driver_app");
    let (code, out, _) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}");

    // The bytes the second launch's H2D memcpy node read, zeroed: that launch's axpy result
    // (checked after it) differs.
    let source = events
        .iter()
        .filter(|e| e["name"] == "hrrGraphHostSource")
        .nth(1)
        .unwrap();
    let (code, out) = replay_with_zeroed_blob(&dir, &blob_of(&dir, source, "h2d_blob"));
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "[HRR] MISMATCH");
    assert_contains(&out, "hrrGraphHostResult");
    assert_contains(&out, "0 within tol), 1 fail");

    // A recorded result of a D2H memcpy node, zeroed.
    let result = events
        .iter()
        .rfind(|e| e["name"] == "hrrGraphHostResult")
        .unwrap();
    let (code, out) = replay_with_zeroed_blob(&dir, &blob_of(&dir, result, "d2h_blob"));
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "[HRR] MISMATCH");
    let (code, out, _) = replay(&dir, &[]);
    assert_eq!(code, 0, "{out}");
}

/// A stream capture that allocates graph memory (`cuMemAllocAsync`/`cuMemFreeAsync` inside it)
/// and copies host memory both ways, a host function resetting the result after the D2H copy:
/// capture records the host bytes each launch reads and the bytes the device
/// wrote (not what the host function left), replay writes and checks them, and the graph memory
/// outlives the capture's free; the same graph built node by node with memory alloc and free
/// nodes replays with its memory placed at the recorded address.
#[test]
fn stream_captured_graphs_check_every_launch_and_keep_graph_memory() {
    for app in ["driver_app", "direct_app"] {
        let (_tmp, dir, events) = captured_mode(app, "graph_capture", "graph_capture launch=2");
        let of = |n: &str| events.iter().filter(|e| e["name"] == n).collect::<Vec<_>>();
        // 3 launches of the captured graph, 1 of the same built node by node with memory nodes
        assert_eq!(of("hrrGraphHostSource").len(), 4, "{app}");
        assert_eq!(of("hrrGraphHostResult").len(), 4, "{app}");
        assert_eq!(of("cuGraphAddMemAllocNode").len(), 1, "{app}");
        assert_eq!(of("cuGraphAddMemFreeNode").len(), 1, "{app}");
        // the host input changed between launches, so each launch recorded other bytes
        let sources: std::collections::HashSet<_> = of("hrrGraphHostSource")
            .iter()
            .map(|e| e["fields"]["h2d_blob"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(sources.len(), 4, "{app}");

        let (code, out, _) = replay(&dir, &[]);
        assert_eq!(code, 0, "{app}: {out}");
        assert!(
            out.contains("4 pass (4 exact, 0 within tol), 0 fail"),
            "{app}: {out}"
        );
        assert!(out.contains("Graphs launched : 4"), "{app}: {out}");

        // The second launch's input zeroed: its result and the next (they accumulate) differ.
        let p = blob_of(&dir, of("hrrGraphHostSource")[1], "h2d_blob");
        let (code, out) = replay_with_zeroed_blob(&dir, &p);
        assert_eq!(code, 1, "{app}: {out}");
        assert!(
            out.contains("1 pass (1 exact, 0 within tol), 3 fail"),
            "{app}: {out}"
        );
    }
}

/// A conditional node: recorded with its handle, type and the body graph the driver created;
/// replay creates the handle again, adds the node, rebuilds the body's kernel node in the new
/// body graph and launches the graph: the body fills `z` (the recorded run printed a nonzero
/// sum), so the D2H check after the launch passes only if the body really ran.
#[test]
fn conditional_nodes_are_rebuilt_with_their_bodies_and_run() {
    let (_tmp, arch) = temp_path("run.hrr");
    let o = succeeded(fake().capture_env(&arch, "driver_app", &["graph_cond"], &[]));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_contains(&stdout, "cond fill sum=");
    assert!(!stdout.contains("cond fill sum=0 "), "{stdout}");
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let count = |n: &str| events.iter().filter(|e| e["name"] == n).count();
    assert_eq!(count("cuGraphConditionalHandleCreate"), 1);
    let handle = first_named(&events, "cuGraphConditionalHandleCreate")["fields"]["handle"].clone();
    let cond = first_named(&events, "cuGraphAddNode_v2");
    assert_eq!(cond["fields"]["node_type"], 13, "{cond}");
    // handle, IF (0), one body, the body graph
    let c = cond["fields"]["cond"].as_array().expect("cond recorded");
    assert_eq!(c.len(), 4, "{cond}");
    assert_eq!(
        (&c[1], &c[2]),
        (&serde_json::json!(0), &serde_json::json!(1)),
        "{cond}"
    );
    let as_u64 = |v: &serde_json::Value| {
        v.as_u64().or_else(|| {
            v.as_str()
                .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        })
    };
    assert_eq!(as_u64(&c[0]), as_u64(&handle), "{cond} {handle}");
    let body = as_u64(&c[3]).unwrap();
    assert_ne!(body, 0, "{cond}");
    // the body's kernel node was added to the body graph
    let in_body = events.iter().filter(|e| {
        e["name"] == "cuGraphAddKernelNode_v2" && as_u64(&e["fields"]["graph"]) == Some(body)
    });
    assert_eq!(in_body.count(), 1);
    let manifest = manifest_json(&dir);
    assert!(
        !manifest["unreplayable_apis"]
            .to_string()
            .contains("conditional"),
        "{manifest}"
    );

    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["graphs_launched"], 1, "{v}");
    assert!(v["d2h_checks"]["pass"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["d2h_checks"]["fail"], 0, "{v}");
    assert_eq!(v["skipped_calls_total"], 0, "{v}");
}

/// Nodes added by hand to a stream capture, as CUDA's conditional-node samples do: the capture's
/// graph and last node come from `cuStreamGetCaptureInfo`, an IF node is added after that node,
/// the capture's dependencies move to it, and its body is filled by `cuStreamBeginCaptureToGraph`.
/// Replay maps the recorded graph and node to its own capture's; both fills are checked. A query
/// of the status alone records no nodes.
#[test]
fn nodes_added_to_a_stream_capture_and_captures_into_a_body_replay() {
    for app in ["driver_app", "direct_app"] {
        let (_tmp, arch) = temp_path("run.hrr");
        let o = fake().capture(&arch, app, &["graph_cond_capture"]);
        assert!(
            o.status.success(),
            "{app}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("cond capture y sum=24884224 z sum=50558976"),
            "{app}: {stdout}"
        );
        let dir = pid_dirs(&arch).remove(0);
        let events = events_json(&dir);
        let count = |n: &str| events.iter().filter(|e| e["name"] == n).count();
        // two for the graph and node, one for the status alone (no nodes recorded: replay,
        // which finds one, must not take that for a divergence)
        assert_eq!(count("cuStreamGetCaptureInfo_v3"), 3, "{app}");
        assert_eq!(count("cuStreamUpdateCaptureDependencies_v2"), 1, "{app}");
        assert_eq!(count("cuStreamBeginCaptureToGraph"), 1, "{app}");
        // the second query names the captured kernel's node, which the IF node follows
        let info = events
            .iter()
            .filter(|e| e["name"] == "cuStreamGetCaptureInfo_v3")
            .nth(1)
            .unwrap();
        let deps = info["fields"]["deps"].as_array().expect("deps recorded");
        assert_eq!(deps.len(), 1, "{info}");
        let cond = first_named(&events, "cuGraphAddNode_v2");
        assert_eq!(
            cond["fields"]["deps"], info["fields"]["deps"],
            "{cond} {info}"
        );

        let (code, v) = fake().replay_json(&dir, &[]);
        assert_eq!(code, 0, "{app}: {v}");
        assert_eq!(v["verdict"], "PASS", "{app}: {v}");
        assert_eq!(v["graphs_launched"], 1, "{app}: {v}");
        assert_eq!(v["d2h_checks"]["pass"], 2, "{app}: {v}");
        assert_eq!(v["d2h_checks"]["fail"], 0, "{app}: {v}");
        assert_eq!(v["skipped_calls_total"], 0, "{app}: {v}");
    }
}
