//! Argument layouts, read independently of hrr: `llvm-readelf --notes` decodes the
//! NT_AMDGPU_METADATA note of each code object.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{pid_dirs, succeeded};

/// The first `llvm-readelf` that runs: ROCm's (`$ROCM_PATH`, then `/opt/rocm`), those of
/// `/usr/lib/llvm-*` (highest version first), the one on `PATH`.
fn llvm_readelf() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(rocm) = std::env::var_os("ROCM_PATH") {
        candidates.push(Path::new(&rocm).join("llvm/bin/llvm-readelf"));
    }
    candidates.push("/opt/rocm/llvm/bin/llvm-readelf".into());
    if let Ok(rd) = std::fs::read_dir("/usr/lib") {
        let mut llvm: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("llvm-")
            })
            .map(|p| p.join("bin/llvm-readelf"))
            .collect();
        llvm.sort();
        candidates.extend(llvm.into_iter().rev());
    }
    candidates.push("llvm-readelf".into());
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// The device ELF entries of a clang offload bundle.
fn bundle_entries(b: &[u8]) -> Vec<(String, Vec<u8>)> {
    assert!(b.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"), "not a bundle");
    let rd = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
    let mut pos = 32;
    let mut out = Vec::new();
    for _ in 0..rd(24) {
        let (off, size, tlen) = (rd(pos), rd(pos + 8), rd(pos + 16));
        let triple = String::from_utf8_lossy(&b[pos + 24..pos + 24 + tlen]).into_owned();
        pos += 24 + tlen;
        if triple.contains("amdgcn") {
            out.push((triple, b[off..off + size].to_vec()));
        }
    }
    out
}

/// Kernel name → every `(offset, size, value_kind)` of its `.args`, from llvm-readelf's YAML.
type Metadata = std::collections::HashMap<String, Vec<(u64, u64, String)>>;

fn metadata_of(readelf: &Path, elf: &[u8], scratch: &Path) -> Metadata {
    std::fs::write(scratch, elf).unwrap();
    let o = succeeded(
        Command::new(readelf)
            .arg("--notes")
            .arg(scratch)
            .output()
            .unwrap(),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = Metadata::new();
    let mut args: Vec<(u64, u64, String)> = Vec::new();
    let mut arg: Option<(u64, u64, String)> = None;
    let mut in_args = false;
    for line in text.lines() {
        let spaces = line.len() - line.trim_start().len();
        let (dash, body) = match line.trim_start().strip_prefix("- ") {
            Some(rest) => (true, rest),
            None => (false, line.trim_start()),
        };
        let Some((key, value)) = body.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let indent = spaces + if dash { 2 } else { 0 };
        if dash && spaces == 2 {
            // `  - ` opens a kernel of amdhsa.kernels
            args.clear();
            arg = None;
            in_args = false;
        }
        if indent == 4 {
            // a key of the kernel
            if in_args {
                args.extend(arg.take());
            }
            in_args = key == ".args";
            if key == ".name" {
                out.insert(value.to_string(), std::mem::take(&mut args));
            }
        }
        if in_args && dash && spaces == 6 {
            // `      - ` opens an argument
            args.extend(arg.take());
            arg = Some((0, 0, String::new()));
        }
        if let (true, 8, Some(a)) = (in_args, indent, arg.as_mut()) {
            match key {
                ".offset" => a.0 = value.parse().unwrap(),
                ".size" => a.1 = value.parse().unwrap(),
                ".value_kind" => a.2 = value.to_string(),
                _ => {}
            }
        }
    }
    out
}

/// Check the argument layout of every recorded launch against the metadata of the code object
/// it names, read with llvm-readelf. Returns the number of launches checked and how many of
/// them have hidden arguments.
pub fn check_layouts(archive: &Path, events: &[serde_json::Value]) -> (usize, usize) {
    let Some(readelf) = llvm_readelf() else {
        eprintln!("NOTE: llvm-readelf not found; argument layouts not checked against it");
        return (0, 0);
    };
    let dir = pid_dirs(archive).remove(0);
    let scratch = dir.join("..").join("layout-check.o");
    let mut cache: std::collections::HashMap<String, Metadata> = Default::default();
    let (mut checked, mut hidden) = (0, 0);
    for e in events.iter().filter(|e| {
        e["name"]
            .as_str()
            .is_some_and(|n| n.contains("LaunchKernel"))
    }) {
        let f = &e["fields"];
        let code = f["code"].as_str().unwrap().to_string();
        let meta = cache.entry(code.clone()).or_insert_with(|| {
            let bytes = std::fs::read(dir.join("code_objects").join(format!("{code}.hsaco")))
                .expect("code object");
            let mut all = Metadata::new();
            for (triple, elf) in bundle_entries(&bytes) {
                let m = metadata_of(&readelf, &elf, &scratch);
                assert!(!m.is_empty(), "no kernels in the {triple} entry");
                all.extend(m);
            }
            all
        });
        let kernel = f["kernel"].as_str().unwrap();
        let args = &meta[kernel];
        let explicit: Vec<(u64, u64)> = args
            .iter()
            .filter(|a| !a.2.starts_with("hidden_"))
            .map(|a| (a.0, a.1))
            .collect();
        let recorded: Vec<(u64, u64)> = f["arg_offsets"]
            .as_array()
            .unwrap()
            .iter()
            .zip(f["arg_sizes"].as_array().unwrap())
            .map(|(o, s)| (o.as_u64().unwrap(), s.as_u64().unwrap()))
            .collect();
        assert_eq!(
            recorded, explicit,
            "{kernel}: recorded layout vs llvm-readelf"
        );
        let end = explicit.iter().map(|(o, s)| o + s).max().unwrap_or(0);
        assert_eq!(
            f["args"].as_str().unwrap().len() as u64,
            2 * end,
            "{kernel}"
        );
        assert_eq!(f["args_known"], 1, "{kernel}");
        checked += 1;
        hidden += (explicit.len() < args.len()) as usize;
    }
    let _ = std::fs::remove_file(&scratch);
    (checked, hidden)
}
