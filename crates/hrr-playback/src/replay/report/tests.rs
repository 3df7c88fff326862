use super::*;

fn sample() -> Summary {
    Summary {
        archive: "a/pid-1".into(),
        captured: Captured {
            events: 10,
            kernels: 2,
            blobs: 3,
            code_objects: 1,
            threads: 1,
        },
        device: "Dev (sm_90)".into(),
        runtime: "/lib/libcuda.so.1".into(),
        mode: "single-threaded",
        load_ms: 1.0,
        execute_ms: 2.0,
        threads_used: 1,
        kernels_launched: 2,
        ..Summary::default()
    }
}

#[test]
fn a_pass_says_when_nothing_was_compared_or_work_was_skipped() {
    let mut s = sample();
    assert_eq!(
        s.verdict_line(),
        "PASS (nothing to compare: the recording copied no result back)"
    );
    s.checks.exact = 1;
    assert_eq!(s.verdict_line(), "PASS");
    s.skipped_calls
        .push("#7 cuLaunchHostFunc: host callbacks are not in the archive".into());
    assert_eq!(
        s.verdict_line(),
        "PASS (1 call not replayed, first: #7 cuLaunchHostFunc: host callbacks are not in the archive)"
    );
    s.checks.fail = 1;
    s.verdict = Verdict::Mismatch;
    assert_eq!(
        s.verdict_line(),
        "MISMATCH: 1 of 2 D2H results differs from the recording"
    );
    assert_eq!(s.verdict.exit_code(), 1);
}

#[test]
fn skipped_work_never_leaves_a_bare_pass() {
    let pass = |f: &dyn Fn(&mut Summary)| {
        let mut s = sample();
        s.checks.exact = 3;
        f(&mut s);
        s.verdict_line()
    };
    assert_eq!(pass(&|_| {}), "PASS");
    // More skipped calls than the list keeps: the count is of all of them.
    assert!(pass(&|s| {
        s.skipped_calls = (0..20).map(|i| format!("#{i} cuX: why")).collect();
        s.skipped_total = 25;
    })
    .starts_with("PASS (25 calls not replayed, first: #0 cuX: why"));
    // A state-changing call replay cannot reproduce, named by the prescan only.
    let u = Unreproducible {
        call: "cuMemHostRegister_v2".into(),
        first_seq: Some(9),
        count: 2,
        why: "host memory registration is not reissued",
    };
    assert_eq!(
        pass(&|s| s.unreproducible = vec![u.clone()]),
        "PASS (2 state-changing calls not reproducible, first: #9 cuMemHostRegister_v2: host memory registration is not reissued)"
    );
    // Named once when a runtime skip already names it.
    let line = pass(&|s| {
        s.unreproducible = vec![Unreproducible {
            call: "cuLaunchHostFunc".into(),
            ..u.clone()
        }];
        s.skipped_calls = vec!["#9 cuLaunchHostFunc: host callbacks are not in the archive".into()];
        s.skipped_total = 1;
    });
    assert_eq!(
        line,
        "PASS (1 call not replayed, first: #9 cuLaunchHostFunc: host callbacks are not in the archive)"
    );
    assert_eq!(
        pass(&|s| s.kernels_filtered = 3),
        "PASS (3 launches left out by --kernel-filter)"
    );
    assert_eq!(
        pass(&|s| s.checks.skipped = 1),
        "PASS (1 D2H result not compared)"
    );
    assert_eq!(pass(&|s| s.recheck_note = Some("x".into())), "PASS (x)");
}

#[test]
fn nondeterminism_is_said_and_strict_makes_it_a_mismatch() {
    let mut s = sample();
    s.checks.exact = 3;
    s.checks.nondeterministic = 1;
    s.nondeterministic = vec![Nondeterministic {
        seq: 135,
        call: "cuMemcpyDtoH_v2".into(),
        bytes: 1024,
        differing: 512,
        first_offset: 512,
        how: How::Replays,
    }];
    assert_eq!(
        s.verdict_line(),
        "PASS, 512 of 1024 bytes nondeterministic at event #135"
    );
    s.nondeterministic.push(s.nondeterministic[0].clone());
    assert_eq!(
        s.verdict_line(),
        "PASS, 512 of 1024 bytes nondeterministic at event #135 and 1 more D2H result"
    );
    s.nondeterministic.pop();
    s.verdict = Verdict::Mismatch;
    assert_eq!(
        s.verdict_line(),
        "MISMATCH (--strict): 512 of 1024 bytes nondeterministic at event #135"
    );
    s.checks.fail = 1;
    assert_eq!(
        s.verdict_line(),
        "MISMATCH: 1 of 5 D2H results differs from the recording; 512 of 1024 bytes nondeterministic at event #135"
    );
    let mut out = Vec::new();
    write_json(&s, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["nondeterministic"][0]["differing"], 512);
    assert_eq!(v["d2h_checks"]["nondeterministic"], 1);
}

#[test]
fn human_and_json_shapes() {
    let mut s = sample();
    s.checks.exact = 2;
    s.placement.translated = 1;
    s.placement.first_refusal = Some("--no-placement".into());
    let mut out = Vec::new();
    write_human_opening(&s, &mut out).unwrap();
    write_human_closing(&s, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("[HRR] Archive         : 10 events, 2 kernels, 3 blobs, 1 code objects\n")
    );
    assert!(text.contains("[HRR] Wall time       : 3.0 ms (load 1.0 ms, execute 2.0 ms)\n"));
    assert!(text
        .contains("[HRR] D2H checks      : 2 pass (2 exact, 0 within tol), 0 fail, 0 skipped\n"));
    assert!(text.contains("[HRR] First refusal   : --no-placement\n"));
    assert!(text.ends_with("[HRR] PASS\n"), "{text}");
    let mut out = Vec::new();
    write_json(&s, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys[..3], ["schema", "ok", "archive"]);
    assert_eq!(v["schema"], "hrr.replay/1");
    assert_eq!(v["ok"], true);
    assert_eq!(keys.last(), Some(&"batching"));
    assert_eq!(v["perturbation"], serde_json::Value::Null);
    assert_eq!(v["batching"], serde_json::Value::Null);
    assert!(!text.contains("Launch batching"), "{text}");
    s.batching = Some(super::super::batch::Batching {
        runs: 2,
        launches: 300,
        graphs: 2,
        fell_back: 1,
        first_fallback: Some("a stream capture was under way".into()),
        unprepared: None,
    });
    let mut out = Vec::new();
    write_human_closing(&s, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("[HRR] Launch batching : 300 launches in 2 runs issued as 2 graphs prepared before the clock (--no-batch: one by one); 1 run issued launch by launch (a stream capture was under way)\n"), "{text}");
    assert_eq!(v["timing"], serde_json::json!([]));
    assert_eq!(v["replaced_kernels"], serde_json::json!([]));
    assert_eq!(v["result"], "PASS");
    assert_eq!(v["verdict"], "PASS");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["d2h_checks"]["pass"], 2);
    assert_eq!(v["allocations"]["first_refusal"], "--no-placement");
}

/// A failed check of host-visible memory says that host code the replay does not run may have
/// written it (systemWideAtomics); a failed D2H copy does not.
#[test]
fn a_mismatch_in_memory_the_host_shares_names_host_code_as_a_cause() {
    let closing = |mismatch: &str| {
        let mut s = sample();
        s.checks.fail = 1;
        s.verdict = Verdict::Mismatch;
        s.checks.mismatches.push(mismatch.into());
        let mut out = Vec::new();
        write_human_closing(&s, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let text = closing("event #135 hrrHostMemCheck: 8 of 40 bytes differ, first at offset 2");
    assert!(
        text.contains("[HRR] Note: event #135 hrrHostMemCheck compares host-visible memory"),
        "{text}"
    );
    let text = closing("event #9 cuMemcpyDtoH_v2: 8 of 40 bytes differ, first at offset 2");
    assert!(!text.contains("[HRR] Note:"), "{text}");
}
