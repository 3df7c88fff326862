//! The schemas the tables generate keep what archives already hold: every call of the goldens
//! (written by the recorder before the tables) keeps its record type, name, class and fields in
//! the same order; new calls only follow them (tables are append-only).

fn same(got: &hrr_archive::schema::Schema, golden: &str) {
    let want: serde_json::Value = serde_json::from_str(golden).unwrap();
    let got: serde_json::Value = serde_json::from_slice(&got.to_json()).unwrap();
    let (w, g) = (
        want["calls"].as_array().unwrap(),
        got["calls"].as_array().unwrap(),
    );
    assert!(g.len() >= w.len(), "calls were removed");
    for (w, g) in w.iter().zip(g) {
        assert_eq!(w, g, "call differs");
    }
    for k in ["api", "api_version"] {
        assert_eq!(want[k], got[k]);
    }
}

#[test]
fn cuda_schema_keeps_every_recorded_call() {
    same(
        &hrr_calls::cuda::schema(),
        include_str!("golden/cuda-schema.json"),
    );
}

#[test]
fn hip_schema_keeps_every_recorded_call() {
    same(
        &hrr_calls::hip::schema(),
        include_str!("golden/hip-schema.json"),
    );
}

#[test]
fn every_export_names_one_op_and_names_are_unique() {
    use hrr_calls::cuda::{Op, EXPORTS};
    let mut names: Vec<_> = EXPORTS.iter().map(|(n, _)| *n).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), EXPORTS.len());
    assert_eq!(
        Op::from_name("cuMemcpyHtoDAsync_v2_ptsz"),
        Some(Op::MemcpyHtoDAsync)
    );
    assert_eq!(Op::from_name("hipMalloc"), None);
    assert!(Op::MemAlloc.ordered() && !Op::StreamSynchronize.ordered());
    assert_eq!(
        hrr_calls::hip::Op::from_name("hipMalloc"),
        Some(hrr_calls::hip::Op::Malloc)
    );
}

#[test]
fn shapes_round_trip_through_the_payload() {
    use hrr_archive::schema::{decode_fields, PayloadBuilder};
    use hrr_calls::{shapes::Launch, Shape};
    let l = Launch {
        function: 0x55,
        kernel: "axpy".into(),
        grid_x: 4,
        args: vec![1, 2, 3],
        arg_offsets: vec![0, 8],
        args_known: 1,
        ..Default::default()
    };
    let mut p = PayloadBuilder::new();
    p.i32(0);
    l.write(&mut p);
    let schema = hrr_calls::cuda::schema();
    let call = schema.call_by_name("cuLaunchKernel").unwrap();
    let fields = decode_fields(call, p.as_bytes()).unwrap();
    assert_eq!(Launch::read(&fields).unwrap(), l);
}
