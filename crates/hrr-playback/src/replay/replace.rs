//! `--replace-kernel NAME=PATH`: launches of a recorded kernel go to the kernel of that name in
//! a module image read from PATH (a cubin, fatbin or PTX), with the recorded argument buffer.
//! NAME is the kernel as recorded (mangled) or demangled (with or without its parameter list);
//! the module is asked for the recorded, mangled name. Before the first event, every
//! replacement's parameter layout (the driver's `cuFuncGetParamInfo`) is compared with the
//! layout the recorded launches pass, and a mismatch is refused naming both. The summary lists
//! each replaced kernel and how many launches used the replacement (`Backend::replaced_launches`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{decode_fields, CallClass, Schema};
use hrr_archive::writer::EVENTS_FILE;
use hrr_calls::shapes::Launch;
use hrr_calls::Shape;

use super::backend::Backend;
use crate::demangle::demangle;

/// A kernel replaced for this replay.
#[derive(Debug, Clone)]
pub struct Replaced {
    /// The recorded (mangled) kernel name.
    pub kernel: String,
    /// The file its replacement came from, as given.
    pub path: String,
}

/// Does `wanted` (as the user wrote it) name the recorded kernel `mangled`? The mangled name,
/// the demangled one, or the demangled one without its parameter list.
pub fn names(wanted: &str, mangled: &str) -> bool {
    let d = demangle(mangled);
    wanted == mangled || wanted == d || d.split('(').next() == Some(wanted)
}

/// The argument layout `(offset, size)` of the first recorded launch of every kernel.
fn recorded_layouts(dir: &Path, schema: &Schema) -> Result<BTreeMap<String, Vec<(u64, u64)>>> {
    let mut layouts = BTreeMap::new();
    for rec in EventReader::open(&dir.join(EVENTS_FILE))? {
        let rec = rec?;
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        if call.class != CallClass::Launch {
            continue;
        }
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{} ({}): {e}", rec.header.seq, call.name))?;
        let Ok(l) = Launch::read(&fields) else {
            continue;
        };
        if l.kernel.is_empty() {
            continue;
        }
        let layout = l
            .arg_offsets
            .iter()
            .copied()
            .zip(l.arg_sizes.iter().copied());
        layouts.entry(l.kernel).or_insert_with(|| layout.collect());
    }
    Ok(layouts)
}

/// `(offset, size)` pairs as `size@offset, ...`.
fn show(layout: &[(u64, u64)]) -> String {
    if layout.is_empty() {
        return "no arguments".into();
    }
    let v: Vec<String> = layout.iter().map(|(o, s)| format!("{s}@{o}")).collect();
    v.join(" ")
}

/// Load every `--replace-kernel` replacement into `backend` and check its parameters against
/// the recorded launches; the kernels replaced.
pub fn install(
    backend: &mut dyn Backend,
    dir: &Path,
    schema: &Schema,
    wanted: &[(String, PathBuf)],
) -> Result<Vec<Replaced>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let layouts = recorded_layouts(dir, schema)?;
    let mut replaced = Vec::new();
    for (name, path) in wanted {
        let flag = format!("--replace-kernel {name}={}", path.display());
        let matching: Vec<(&String, &Vec<(u64, u64)>)> =
            layouts.iter().filter(|(k, _)| names(name, k)).collect();
        if matching.is_empty() {
            let known: Vec<String> = layouts.keys().map(|k| demangle(k)).collect();
            bail!(
                "{flag}: the capture launches no kernel of that name (it launches {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
        let image =
            std::fs::read(path).with_context(|| format!("{flag}: reading {}", path.display()))?;
        for (kernel, recorded) in matching {
            let layout = backend
                .replace_kernel(kernel, &image)
                .with_context(|| flag.clone())?;
            match layout {
                Some(l) if l.iter().map(|p| p.1).ne(recorded.iter().map(|p| p.1)) => bail!(
                    "{flag}: argument sizes differ: the replacement `{}` takes {} but the \
                     recorded launches pass {}; refusing to launch it with the recorded arguments",
                    demangle(kernel),
                    show(&l),
                    show(recorded)
                ),
                Some(_) => {}
                None => eprintln!(
                    "[HRR] {flag}: the driver cannot tell the replacement's parameters \
                     (cuFuncGetParamInfo is CUDA 12.4+): argument sizes not checked"
                ),
            }
            replaced.push(Replaced {
                kernel: kernel.clone(),
                path: path.display().to_string(),
            });
        }
    }
    Ok(replaced)
}

/// The summary's lines: each replaced kernel (demangled), its file, the launches that used it.
pub fn tally(replaced: &[Replaced], backend: &dyn Backend) -> Vec<(String, String, u64)> {
    let used = backend.replaced_launches();
    replaced
        .iter()
        .map(|r| {
            let n = used
                .iter()
                .find(|(k, _)| *k == r.kernel)
                .map_or(0, |(_, n)| *n);
            (demangle(&r.kernel), r.path.clone(), n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_is_named_mangled_demangled_or_by_its_bare_name() {
        let m = "_Z10gather_badPKfPKiPfi";
        assert!(names(m, m));
        assert!(names(
            "gather_bad(float const*, int const*, float*, int)",
            m
        ));
        assert!(names("gather_bad", m));
        assert!(!names("gather", m));
        assert!(names("axpy", "axpy"));
        assert_eq!(show(&[(0, 8), (8, 4)]), "8@0 4@8");
        assert_eq!(show(&[]), "no arguments");
    }
}
