//! Runs the reader fuzz target's body (`hrr_archive::fuzz::fuzz_one`) over seeds and
//! deterministic mutations of them, on stable Rust: what `cargo fuzz run reader` explores at
//! random, a fixed sample of it runs in every `cargo test`.

use std::path::Path;

use hrr_archive::framing::{RecordHeader, FILE_HEADER_LEN};
use hrr_archive::fuzz::{fuzz_input, fuzz_one};
use hrr_archive::schema::*;
use hrr_archive::testkit::{call, Rng};
use hrr_archive::writer::ProcessWriter;

fn seed_capture(marked: bool, finish: bool) -> (Vec<u8>, Vec<u8>) {
    let root = tempfile::tempdir().unwrap();
    use FieldType::*;
    let schema = Schema::new(
        "seed",
        1,
        vec![
            call(
                1,
                "launch",
                CallClass::Launch,
                &[
                    ("result", Result),
                    ("kernel", Str),
                    ("args", Bytes),
                    ("offs", U64s),
                ],
            ),
            call(
                2,
                "copy",
                CallClass::D2h,
                &[
                    ("result", Result),
                    ("dst", Ptr),
                    ("d2h_blob", Blob),
                    ("x", F64),
                ],
            ),
        ],
    );
    let mut w = ProcessWriter::create(root.path(), 7, 1, &schema).unwrap();
    for i in 0..6u64 {
        let mut p = PayloadBuilder::new();
        if i % 2 == 0 {
            p.i32(0).str("k").bytes(&[i as u8; 5]).u64s(&[i, 8]);
            w.events().append_at(1, i, i, p.as_bytes()).unwrap();
        } else {
            p.i32(1)
                .u64(i)
                .object(Some(hrr_archive::ObjectId::of(&[i as u8])))
                .f64(0.5);
            w.events().append_at(2, 1, i, p.as_bytes()).unwrap();
        }
    }
    if marked {
        w.events().mark_incomplete("dropped a launch").unwrap();
    }
    let dir = w.dir().to_path_buf();
    if finish {
        w.finish().unwrap();
    } else {
        w.events().flush(false).unwrap();
        std::mem::forget(w);
    }
    (
        std::fs::read(dir.join("manifest.json")).unwrap(),
        std::fs::read(dir.join("events.bin")).unwrap(),
    )
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (marked, finish) in [(false, true), (true, true), (false, false)] {
        let (m, e) = seed_capture(marked, finish);
        v.push(fuzz_input(&m, &e));
    }
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.hrr");
    for pid in ["pid-1180", "pid-1204"] {
        let d = demo.join(pid);
        if let (Ok(m), Ok(e)) = (
            std::fs::read(d.join("manifest.json")),
            std::fs::read(d.join("events.bin")),
        ) {
            v.push(fuzz_input(&m, &e));
        }
    }
    v.push(Vec::new());
    v.push(fuzz_input(b"{}", b"EHRR"));
    v
}

/// Offsets of record headers in an events.bin (as far as they parse).
fn record_offsets(events: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut off = FILE_HEADER_LEN;
    while off + 32 <= events.len() {
        out.push(off);
        let h = RecordHeader::decode(events[off..off + 32].try_into().unwrap());
        if h.total_len < 32 {
            break;
        }
        off += h.total_len as usize;
    }
    out
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut d = seed.to_vec();
    let mlen = if d.len() >= 2 {
        u16::from_le_bytes([d[0], d[1]]) as usize
    } else {
        0
    };
    let events_at = (2 + mlen).min(d.len());
    for _ in 0..1 + rng.below(4) {
        if d.is_empty() {
            d.push(rng.next() as u8);
            continue;
        }
        match rng.below(7) {
            0 => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 => d.truncate(rng.below(d.len() + 1)),
            2 => {
                let i = rng.below(d.len() + 1);
                let junk: Vec<u8> = (0..rng.below(48)).map(|_| rng.next() as u8).collect();
                d.splice(i..i, junk);
            }
            3 | 4 => {
                // rewrite a record's length, type or a payload length prefix
                let offs = record_offsets(&d[events_at.min(d.len())..]);
                if let Some(&o) = offs.get(rng.below(offs.len())) {
                    let o = events_at + o;
                    let (at, val): (usize, u32) = match rng.below(4) {
                        0 => (
                            o + 26,
                            [0, 5, 31, 33, 0x7fff_ffff, 64 << 20, (64 << 20) + 1][rng.below(7)],
                        ),
                        1 => (o, [0xFFFF, 0xFFFE, 0xFFFD, 0xFFFC, 77][rng.below(5)]),
                        _ => (o + 32 + rng.below(16), rng.next() as u32),
                    };
                    if at + 4 <= d.len() {
                        d[at..at + 4].copy_from_slice(&val.to_le_bytes());
                    }
                }
            }
            5 => {
                // duplicate a slice (repeated records, trailer in the middle)
                let a = rng.below(d.len());
                let b = (a + rng.below(200)).min(d.len());
                let chunk = d[a..b].to_vec();
                let at = rng.below(d.len() + 1);
                d.splice(at..at, chunk);
            }
            _ => {
                // change the manifest split
                if d.len() >= 2 {
                    let v = rng.next() as u16;
                    d[..2].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    d
}

#[test]
fn seeds_and_their_mutations_never_break_an_invariant() {
    let seeds = seeds();
    for s in &seeds {
        fuzz_one(s);
    }
    // `HRR_FUZZ_WRITE_SEEDS=fuzz/corpus/reader` gives `cargo fuzz` a corpus to start from.
    if let Some(dir) = std::env::var_os("HRR_FUZZ_WRITE_SEEDS") {
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(Path::new(&dir).join(format!("seed-{i}")), s).unwrap();
        }
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let rounds: usize = std::env::var("HRR_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    for i in 0..rounds {
        let seed = &seeds[i % seeds.len()];
        let input = mutate(&mut rng, seed);
        let r = std::panic::catch_unwind(|| fuzz_one(&input));
        if r.is_err() {
            let path = std::env::temp_dir().join(format!("hrr-fuzz-crash-{i}.bin"));
            std::fs::write(&path, &input).unwrap();
            panic!(
                "fuzz_one failed on round {i}; input saved to {}",
                path.display()
            );
        }
    }
}
