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
/// and the replay passes. The third time the value names another kernel, `fill_u32`, reached
/// without a recorded look-up (as cuFFT reaches its kernels: convolutionFFT2D launched a
/// kernel of an unloaded module at replay, with the new kernel's launch shape, and failed):
/// the unload made capture forget the value, so it is bound again by name in its new module
/// before its first use, and replay launches `fill_u32`, checked by its D2H copy.
#[test]
fn a_function_handle_given_out_again_names_its_new_module_s_code() {
    let (_tmp, arch) = temp_path("run.hrr");
    let out = fake().capture(&arch, "driver_app", &["reload"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_contains(&stdout, "reload same_handle=1");
    assert_contains(&stdout, "reload hidden same_handle=1");
    let dir = pid_dirs(&arch).remove(0);
    let events = events_json(&dir);
    let field = |name: &str, f: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| e["fields"][f].as_str().unwrap_or("-").to_string())
            .collect()
    };
    let (loads, launches) = (
        field("cuModuleLoadData", "code"),
        field("cuLaunchKernel", "code"),
    );
    assert_eq!(loads.len(), 3, "{loads:?}");
    assert_ne!(loads[0], loads[1]);
    assert_ne!(loads[1], loads[2]);
    assert_eq!(launches, loads);
    assert_eq!(
        field("cuLaunchKernel", "kernel"),
        ["axpy", "axpy", "fill_u32"]
    );
    // bound again, in the third module, right before the attribute that is its first use
    assert_eq!(field("cuFuncGetModule", "name"), ["fill_u32"]);
    let at = |name: &str| events.iter().position(|e| e["name"] == name).unwrap();
    assert_eq!(at("cuFuncGetModule") + 1, at("cuFuncSetAttribute"));
    let (code, v) = fake().replay_json(&dir, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"], "PASS", "{v}");
    assert_eq!(v["kernels_launched"], 3, "{v}");
    assert_eq!(v["d2h_checks"]["pass"], 2, "{v}");
}
