//! `--version`: the tool version, the archive format version it reads, the source revision it was
//! built from and the GPU runtimes it would load. Needs neither an archive nor a GPU: a runtime
//! that cannot be loaded is reported, not an error.
//!
//! ```text
//! hrr-playback 0.1.0
//! Format version: 1
//! Revision: 645113d+dirty
//! Runtime: /usr/lib/x86_64-linux-gnu/libcuda.so.1 (-> /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05)
//! HIP runtime: none found (libamdhip64.so not loadable)
//! ```

use std::ffi::{c_void, CStr};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Library name of the CUDA driver loaded by default.
pub const CUDA_DRIVER: &str = "libcuda.so.1";
/// Library name of the HIP runtime loaded by default.
pub const HIP_RUNTIME: &str = "libamdhip64.so";
/// HIP runtime names tried in order, as replay does (`replay::hip_runtime::CANDIDATES`).
const HIP_CANDIDATES: [&str; 5] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "/opt/rocm/lib/libamdhip64.so",
];
/// Source revision embedded by build.rs (`git rev-parse --short HEAD`, `+dirty`, or `unknown`).
pub const REVISION: &str = env!("HRR_REVISION");

pub use hrr_cli::json::VersionJson;

/// Gather the version facts. `cuda_runtime` overrides the CUDA driver library (`--runtime`).
pub fn facts(cuda_runtime: Option<&Path>) -> VersionJson {
    let cuda_name =
        cuda_runtime.map_or_else(|| CUDA_DRIVER.to_string(), |p| p.display().to_string());
    // The names replay tries, in its order (Debian's ROCm 5 ships only `libamdhip64.so.5`).
    let hip = HIP_CANDIDATES
        .iter()
        .find(|n| locate(n, "hipInit").is_some())
        .map_or_else(
            || describe(HIP_RUNTIME, "hipInit"),
            |n| describe(n, "hipInit"),
        );
    VersionJson {
        schema: "hrr.version/1".into(),
        ok: true,
        tool: "hrr-playback".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        format_version: hrr_archive::FORMAT_VERSION,
        revision: REVISION.into(),
        runtime: describe(&cuda_name, "cuInit"),
        hip_runtime: hip,
    }
}

/// Print the version block (or, with `json`, its object).
pub fn print(out: &mut dyn Write, cuda_runtime: Option<&Path>, json: bool) -> anyhow::Result<()> {
    let v = facts(cuda_runtime);
    if json {
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "hrr-playback {}", v.version)?;
        writeln!(out, "Format version: {}", v.format_version)?;
        writeln!(out, "Revision: {}", v.revision)?;
        writeln!(out, "Runtime: {}", v.runtime)?;
        writeln!(out, "HIP runtime: {}", v.hip_runtime)?;
    }
    out.flush()?;
    Ok(())
}

/// `<resolved path>` (with ` (-> <real path>)` when it is a link) or `none found (<name> not
/// loadable)`.
fn describe(name: &str, symbol: &str) -> String {
    match locate(name, symbol) {
        None => format!("none found ({name} not loadable)"),
        Some(path) => {
            let shown = path.display().to_string();
            match std::fs::canonicalize(&path) {
                Ok(real) if real != path => format!("{shown} (-> {})", real.display()),
                _ => shown,
            }
        }
    }
}

/// Load `name` the way replay would and return the file the dynamic loader picked, or the name
/// itself when the loader does not say. `None` when it cannot be loaded.
pub fn locate(name: &str, symbol: &str) -> Option<PathBuf> {
    // SAFETY: loading a GPU driver runs its initialisers; this is exactly what replay does, and
    // the library is never unloaded (drivers do not support dlclose reliably).
    let lib = unsafe { libloading::Library::new(name) }.ok()?;
    let found = loaded_path_of(&lib, symbol).or_else(|| mapped_path(name));
    std::mem::forget(lib);
    Some(found.unwrap_or_else(|| PathBuf::from(name)))
}

/// The object file containing `symbol`, from `dladdr`.
fn loaded_path_of(lib: &libloading::Library, symbol: &str) -> Option<PathBuf> {
    let mut sym_name = symbol.as_bytes().to_vec();
    sym_name.push(0);
    // SAFETY: the symbol is only used as an address, never called or dereferenced.
    let addr: *mut c_void = unsafe { *lib.get::<*mut c_void>(&sym_name).ok()? };
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads loader tables; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let fname = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(fname.to_string_lossy().into_owned());
    path.is_absolute().then_some(path)
}

/// The first mapped file of this process whose name starts with the library's base name.
fn mapped_path(name: &str) -> Option<PathBuf> {
    let base = Path::new(name).file_name()?.to_string_lossy().into_owned();
    let stem = base.split(".so").next().unwrap_or(&base).to_string();
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(&format!("{stem}.so")))
        })
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_is_reported_not_fatal() {
        assert_eq!(
            describe("libhrr-does-not-exist.so.7", "x"),
            "none found (libhrr-does-not-exist.so.7 not loadable)"
        );
    }

    #[test]
    fn libc_resolves_to_an_absolute_path() {
        let p = locate("libc.so.6", "printf").unwrap();
        assert!(p.is_absolute(), "{}", p.display());
    }
}
