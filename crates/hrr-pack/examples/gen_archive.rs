//! Writes a synthetic archive for benchmarks and manual tries: `OUT_DIR/pid-4343/` with about
//! SIZE_MIB MiB of blobs (copied H2D and back D2H by events): a mix of random bytes (as device
//! dumps of real tensors: they do not compress), smooth fp32 data, zero pages and text; with
//! `--secrets`, a few blobs also hold planted secrets (tokens, a PEM key, an env block, UTF-16).
//!
//! ```text
//! cargo run --release -p hrr-pack --example gen_archive -- OUT_DIR SIZE_MIB [--secrets]
//! ```

use std::path::PathBuf;

use hrr_archive::testkit::{copy_schema, write_copy_capture, CopyCapture, Rng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: gen_archive OUT_DIR SIZE_MIB [--secrets]".into());
    }
    let out = PathBuf::from(&args[0]);
    let size_mib: u64 = args[1].parse()?;
    let secrets = args.iter().any(|a| a == "--secrets");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut code = vec![0u8; 256 << 10];
    rng.fill(&mut code);
    let target = size_mib << 20;
    let mut written = 0u64;
    let mut i = 0u64;
    let text = b"epoch 3 step 1200 loss 0.4321 lr 0.0003 grad_norm 1.23 tokens/s 51234\n";
    let blobs = std::iter::from_fn(|| {
        if written >= target {
            return None;
        }
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
        written += size as u64;
        i += 1;
        Some(b)
    });
    let capture = CopyCapture {
        pid: 4343,
        thread: 1,
        code: &code,
        module: 0x10,
        base: 0x7f00_0000_0000,
        stride: 0x100_0000,
        d2h_note: None,
    };
    write_copy_capture(&out, &copy_schema(&[]), &capture, blobs)?;
    println!(
        "wrote {} events, {} blobs, {} MiB to {}",
        1 + 2 * i,
        i,
        written >> 20,
        out.display()
    );
    Ok(())
}
