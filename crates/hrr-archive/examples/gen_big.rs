//! Writes a large synthetic capture for benchmarks: `OUT_DIR/pid-4242/` with EVENTS events of
//! about EVENT_BYTES each (default 1 KiB: 1,000,000 events make an events.bin of about 1 GiB),
//! from THREADS distinct thread ids (default 4; event `i` comes from thread `1000 + i % THREADS`):
//! one in four is a kernel launch (64 kernel names), the rest allocations, copies and
//! synchronisations. EVENT_BYTES below about 100 makes the payloads as small as their fields allow.
//!
//! ```text
//! cargo run --release -p hrr-archive --example gen_big -- OUT_DIR EVENTS [THREADS [EVENT_BYTES]]
//! ```

use std::path::PathBuf;

use hrr_archive::schema::{CallClass, FieldType, PayloadBuilder, Schema};
use hrr_archive::writer::ProcessWriter;

fn schema() -> Schema {
    use hrr_archive::testkit::{call, cuda_schema};
    use FieldType::*;
    cuda_schema(vec![
        call(
            1,
            "cuLaunchKernel",
            CallClass::Launch,
            &[
                ("result", Result),
                ("f", Handle),
                ("kernel", Str),
                ("grid", U64s),
                ("params", Bytes),
            ],
        ),
        call(
            2,
            "cuMemAlloc_v2",
            CallClass::Other,
            &[
                ("result", Result),
                ("dptr", Ptr),
                ("bytesize", U64),
                ("note", Bytes),
            ],
        ),
        call(
            3,
            "cuMemcpyHtoDAsync_v2",
            CallClass::H2d,
            &[
                ("result", Result),
                ("dst", Ptr),
                ("size", U64),
                ("h2d_blob", Blob),
                ("inline", Bytes),
            ],
        ),
        call(
            4,
            "cuMemcpyDtoHAsync_v2",
            CallClass::D2h,
            &[
                ("result", Result),
                ("src", Ptr),
                ("size", U64),
                ("d2h_blob", Blob),
                ("inline", Bytes),
            ],
        ),
        call(
            5,
            "cuStreamSynchronize",
            CallClass::Other,
            &[("result", Result), ("stream", Handle), ("pad", Bytes)],
        ),
    ])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), Some(n)) = (args.next(), args.next()) else {
        return Err("usage: gen_big OUT_DIR EVENTS [THREADS [EVENT_BYTES]]".into());
    };
    let out = PathBuf::from(out);
    let n: u64 = n.to_string_lossy().parse()?;
    let threads: u64 = match args.next() {
        Some(t) => t.to_string_lossy().parse::<u64>()?.max(1),
        None => 4,
    };
    // Payload bytes per event (the 32-byte record header comes on top).
    let size: usize = match args.next() {
        Some(b) => b.to_string_lossy().parse::<usize>()?.saturating_sub(32),
        None => 1024,
    };
    let mut w = ProcessWriter::create(&out, 4242, 1, &schema())?;
    let blob = w.put_blob(&[7u8; 4096])?;
    let kernels: Vec<String> = (0..64)
        .map(|i| format!("_ZN7example6kernel{i:02}ILi128EEEvPfPKfS3_i"))
        .collect();
    let filler = vec![0xA5u8; size];
    let pad = |used: usize| &filler[..size.saturating_sub(used)];
    let mut p = PayloadBuilder::new();
    let t0 = 1_700_000_000_000_000_000u64;
    for i in 0..n {
        let tid = 1000 + (i % threads);
        let kind = match i % 8 {
            0 | 4 => 1,
            1 => 2,
            2 | 5 | 6 => 3,
            3 => 4,
            _ => 5,
        };
        p = PayloadBuilder::with_buffer(p.into_bytes());
        match kind {
            1 => {
                let name = &kernels[(i % 64) as usize];
                p.i32(0)
                    .u64(0x5000 + i % 64)
                    .str(name)
                    .u64s(&[128, 1, 1, 256, 1, 1]);
                p.bytes(pad(4 + 8 + 4 + name.len() + 4 + 48 + 4));
            }
            2 => {
                p.i32(0)
                    .u64(0x7f00_0000_0000 + i * 4096)
                    .u64(4096)
                    .bytes(pad(24));
            }
            3 | 4 => {
                p.i32(0)
                    .u64(0x7f00_0000_0000 + i)
                    .u64(4096)
                    .object(Some(blob))
                    .bytes(pad(44));
            }
            _ => {
                p.i32(0).u64(0x9000).bytes(pad(16));
            }
        }
        w.events()
            .append_at(kind, tid, t0 + i * 1000, p.as_bytes())?;
    }
    let m = w.finish()?;
    println!(
        "wrote {} events to {}",
        m.status.event_count,
        out.join("pid-4242").display()
    );
    Ok(())
}
