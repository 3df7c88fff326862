//! Kernel handles a program obtains without a recorded look-up — through the driver's private
//! export table, as cuFFT does, or by enumerating a module's functions and a library's kernels
//! — are bound at replay (fake driver, `hidden` mode of the fake apps).

mod common;
use common::*;

use hrr_archive::testkit::assert_contains;

fn fake() -> &'static FakeCuda {
    FakeCuda::get("handles")
}

#[test]
fn functions_from_a_private_table_and_enumerations_replay_and_are_checked() {
    let (_tmp, arch) = temp_path("run.hrr");
    let out = fake().capture(&arch, "driver_app", &["hidden"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hidden fill sum="));
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    // The function from the export table: its module recorded at the launch.
    let bound: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "cuFuncGetModule")
        .collect();
    assert_eq!(bound.len(), 1, "{bound:?}");
    assert_eq!(bound[0]["fields"]["name"], "axpy");
    // Bound at its first use, an attribute set before the launch.
    let first_use = events
        .iter()
        .position(|e| e["name"] == "cuFuncSetAttribute")
        .unwrap();
    let bound_at = events
        .iter()
        .position(|e| e["name"] == "cuFuncGetModule")
        .unwrap();
    assert_eq!(bound_at, first_use - 1, "{events:?}");
    let enumerated: Vec<_> = events
        .iter()
        .filter(|e| e["name"].as_str().unwrap().contains("Enumerate"))
        .collect();
    assert_eq!(enumerated.len(), 2, "{enumerated:?}");
    assert_eq!(enumerated[0]["fields"]["names"], "axpy\nfill_u32");

    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["kernels_launched"], 3, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 2, "{v}");

    // The checks compare real results: change the recorded axpy input and replay fails.
    let h2d = events
        .iter()
        .find_map(|e| e["fields"]["h2d_blob"].as_str())
        .unwrap();
    zero_blob(&dir, h2d);
    let (code, out, _) = fake().replay(&dir, &[]);
    assert_eq!(code, 1, "{out}");
    assert_contains(&out, "MISMATCH");
}

/// A function handle the driver hands out again, for another module's function after the first
/// module was unloaded (the fake reuses freed function blocks, as the driver reuses handle
/// values): each launch names the code object of the module its function came from (capture's
/// per-thread memory of the last launched function is dropped when a handle is defined again),
/// and the replay passes.
#[test]
fn a_function_handle_given_out_again_names_its_new_module_s_code() {
    let (_tmp, arch) = temp_path("run.hrr");
    let out = fake().capture(&arch, "driver_app", &["reload"]);
    assert!(out.status.success(), "{out:?}");
    assert_contains(
        &String::from_utf8_lossy(&out.stdout),
        "reload same_handle=1",
    );
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let codes = |name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| e["fields"]["code"].as_str().unwrap_or("-").to_string())
            .collect()
    };
    let (loads, launches) = (codes("cuModuleLoadData"), codes("cuLaunchKernel"));
    assert_eq!(loads.len(), 2, "{loads:?}");
    assert_ne!(loads[0], loads[1]);
    assert_eq!(launches, loads);
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 1, "{v}");
}
