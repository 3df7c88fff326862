//! Writes a synthetic archive for benchmarks and manual tries: `OUT_DIR/pid-4343/` with about
//! SIZE_MIB MiB of blobs (copied H2D and back D2H by events): a mix of random bytes (as device
//! dumps of real tensors: they do not compress), smooth fp32 data, zero pages and text; with
//! `--secrets`, a few blobs also hold planted secrets (tokens, a PEM key, an env block, UTF-16).
//!
//! ```text
//! cargo run --release -p hrr-pack --example gen_archive -- OUT_DIR SIZE_MIB [--secrets]
//! ```

use std::path::PathBuf;

use hrr_archive::blobs::CodeKind;
use hrr_archive::schema::{CallClass, CallDef, FieldDef, FieldType, PayloadBuilder, Schema};
use hrr_archive::writer::ProcessWriter;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn fill(&mut self, v: &mut [u8]) {
        for c in v.chunks_mut(8) {
            let x = self.next().to_le_bytes();
            c.copy_from_slice(&x[..c.len()]);
        }
    }
    fn word(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n)
            .map(|_| A[(self.next() % A.len() as u64) as usize] as char)
            .collect()
    }
}

fn schema() -> Schema {
    let f = |name: &str, ty| FieldDef {
        name: name.into(),
        ty,
    };
    Schema::new(
        "cuda-driver",
        13000,
        vec![
            CallDef {
                id: 1,
                name: "cuModuleLoadData".into(),
                class: CallClass::Other,
                fields: vec![
                    f("result", FieldType::Result),
                    f("module", FieldType::Handle),
                    f("code", FieldType::Code),
                ],
            },
            CallDef {
                id: 2,
                name: "cuMemcpyHtoD_v2".into(),
                class: CallClass::H2d,
                fields: vec![
                    f("result", FieldType::Result),
                    f("dst", FieldType::Ptr),
                    f("size", FieldType::U64),
                    f("h2d_blob", FieldType::Blob),
                ],
            },
            CallDef {
                id: 3,
                name: "cuMemcpyDtoH_v2".into(),
                class: CallClass::D2h,
                fields: vec![
                    f("result", FieldType::Result),
                    f("src", FieldType::Ptr),
                    f("size", FieldType::U64),
                    f("d2h_blob", FieldType::Blob),
                ],
            },
        ],
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: gen_archive OUT_DIR SIZE_MIB [--secrets]".into());
    }
    let out = PathBuf::from(&args[0]);
    let size_mib: u64 = args[1].parse()?;
    let secrets = args.iter().any(|a| a == "--secrets");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut w = ProcessWriter::create(&out, 4343, 1, &schema())?;
    let mut code = vec![0u8; 256 << 10];
    rng.fill(&mut code);
    let co = w.put_code_object(&code, CodeKind::Cubin)?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(0x10).object(Some(co));
    w.events().append(1, 1, p.as_bytes())?;
    let target = size_mib << 20;
    let mut written = 0u64;
    let mut i = 0u64;
    let text = b"epoch 3 step 1200 loss 0.4321 lr 0.0003 grad_norm 1.23 tokens/s 51234\n";
    while written < target {
        // sizes from 64 KiB to 16 MiB
        let size = ((64u64 << 10) << (rng.next() % 9))
            .min(target - written)
            .max(1) as usize;
        let mut b = vec![0u8; size];
        match i % 8 {
            // random (incompressible): half of the blobs
            0 | 2 | 4 | 6 => rng.fill(&mut b),
            // smooth fp32 activations
            1 | 5 => {
                for (k, c) in b.chunks_mut(4).enumerate() {
                    let v = ((k as f32) * 0.001).sin() * 0.5;
                    c.copy_from_slice(&v.to_le_bytes()[..c.len()]);
                }
            }
            // mostly zero pages
            3 => {
                for c in b.chunks_mut(4096).step_by(16) {
                    rng.fill(c);
                }
            }
            // log text
            _ => {
                for (k, c) in b.iter_mut().enumerate() {
                    *c = text[k % text.len()];
                }
            }
        }
        // every blob distinct (no deduplication): its number in its first bytes
        let tag = i.to_le_bytes();
        let n = tag.len().min(b.len());
        b[..n].copy_from_slice(&tag[..n]);
        if secrets && i % 16 == 7 && size > 4096 {
            let env = format!(
                "HOME=/root\0GITHUB_TOKEN=ghp_{}\0AWS_ACCESS_KEY_ID=AKIA{}\0DB=postgres://app:{}@db:5432/x\0",
                rng.word(36),
                "QWERTYUIOPASDFGH",
                rng.word(16)
            );
            let off = (rng.next() as usize) % (size - env.len() * 2 - 1);
            b[off..off + env.len()].copy_from_slice(env.as_bytes());
            let wide: Vec<u8> = format!("HF_TOKEN=hf_{}", rng.word(34).to_lowercase())
                .bytes()
                .flat_map(|c| [c, 0])
                .collect();
            let off2 = (off + env.len() + 100).min(size - wide.len());
            b[off2..off2 + wide.len()].copy_from_slice(&wide);
        }
        let id = w.put_blob(&b)?;
        let mut p = PayloadBuilder::new();
        p.i32(0)
            .u64(0x7f00_0000_0000 + i * 0x100_0000)
            .u64(size as u64)
            .object(Some(id));
        w.events().append(2, 1, p.as_bytes())?;
        let mut p = PayloadBuilder::new();
        p.i32(0)
            .u64(0x7f00_0000_0000 + i * 0x100_0000)
            .u64(size as u64)
            .object(Some(id));
        w.events().append(3, 1, p.as_bytes())?;
        written += size as u64;
        i += 1;
    }
    let m = w.finish()?;
    println!(
        "wrote {} events, {} blobs, {} MiB to {}",
        m.event_count,
        i,
        written >> 20,
        out.display()
    );
    Ok(())
}
