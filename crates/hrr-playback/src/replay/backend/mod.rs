//! The seam between the generic engine and the GPU APIs: the [`Backend`] trait a backend
//! implements, the decoded [`Event`] it is handed and the [`Outcome`] it answers, and the
//! [`Family`] of APIs this build replays, which opens a backend and classifies calls for the
//! prescan ([`Prescan`]). The engine knows no call names: it asks [`Family::classify`].
//!
//! Where a call is replayed: `cuda/mod.rs` and `hip/mod.rs` each hold one dispatch function
//! (`replay`) matching call names to handlers, and the `classify` function of that API beside
//! it; the handlers live in files by concern (memory, copies, code, launches, streams, graphs).
//! Helpers both backends use are in [`shared`]; placement of allocations is
//! `crate::replay::placement`.

pub mod code_calls;
pub mod cuda;
pub mod hip;
pub mod memory_calls;
pub mod shared;
pub mod stream_calls;

use std::path::{Path, PathBuf};

use anyhow::Result;
use hrr_archive::schema::Value;
use hrr_archive::ObjectId;

use super::options::Options;
use super::placement::Tally;

pub use shared::CallFailed;

/// One decoded event handed to a backend.
pub struct Event<'a> {
    /// Sequence number.
    pub seq: u64,
    /// Call name without ABI suffixes (`cuMemcpyHtoDAsync_v2_ptsz` → `cuMemcpyHtoDAsync`).
    pub name: &'a str,
    /// Per-thread default stream semantics (`_ptsz`/`_ptds`).
    pub per_thread: bool,
    /// Decoded fields (read them through `crate::replay::fields`).
    pub fields: Vec<(&'a str, Value)>,
}

/// What replaying one event did.
pub enum Outcome {
    /// Reissued.
    Done,
    /// A kernel was launched.
    Launched,
    /// A CUDA graph was launched.
    GraphLaunched,
    /// Filtered out by `--kernel-filter`.
    Filtered,
    /// Not reissued, with the reason.
    Skipped(String),
    /// Nothing to do for this call.
    Ignored,
    /// A device-to-host copy: the bytes read now, and the recorded result.
    D2h {
        /// Bytes the GPU produced now.
        got: Vec<u8>,
        /// The recorded blob.
        expected: Option<ObjectId>,
    },
}

/// Reads a recorded blob (`None` id: nothing recorded).
pub type Blobs<'a> = dyn Fn(Option<ObjectId>) -> Result<Option<Vec<u8>>> + 'a;

/// A code object the capture loaded, to load before the first call.
#[derive(Debug, Clone)]
pub struct CodeObject {
    /// Its id.
    pub id: ObjectId,
    /// Its file in the archive.
    pub path: PathBuf,
    /// Loaded as a library (`cuLibraryLoad*`) rather than a module.
    pub as_library: bool,
}

/// A GPU API backend.
pub trait Backend {
    /// Device description for the summary.
    fn device(&self) -> String;
    /// Runtime library path for the summary.
    fn runtime(&self) -> String;
    /// Refuse archives from another architecture or a newer driver.
    fn preflight(&self, metadata: Option<&serde_json::Value>) -> Result<()>;
    /// Load code objects before the first call.
    fn preload(&mut self, code: &[CodeObject]) -> Result<()>;
    /// Reissue one event.
    fn replay(&mut self, ev: &Event, blobs: &Blobs, opts: &Options) -> Result<Outcome>;
    /// Wait for all work.
    fn finish(&mut self) -> Result<()>;
    /// How recorded allocations landed.
    fn placement(&self) -> Tally;
}

/// Which device range a successful allocation call took (read by `fields::extent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// `dptr`, `bytesize`.
    Bytes,
    /// `dptr`, `pitch` × `height`.
    Pitched,
    /// A VMM reservation: `ptr`, `size`.
    Reservation,
}

/// What the prescan must know of a call before the driver loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prescan {
    /// It allocated or reserved device addresses: reserved again before anything else.
    Alloc(Extent),
    /// It loaded (or registered) a code object: loaded once, before the first call.
    CodeLoad {
        /// Loaded as a library.
        as_library: bool,
    },
}

/// The API families this build replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// CUDA driver API.
    Cuda,
    /// HIP runtime.
    Hip,
}

impl Family {
    /// The family of a schema's API name, if this build replays it.
    pub fn of(api: &str) -> Option<Family> {
        match api {
            "cuda-driver" => Some(Family::Cuda),
            "hip" => Some(Family::Hip),
            _ => None,
        }
    }

    /// What the prescan must know of call `name` (base name, ABI suffixes stripped).
    pub fn classify(self, name: &str) -> Option<Prescan> {
        match self {
            Family::Cuda => cuda::classify(name),
            Family::Hip => hip::classify(name),
        }
    }

    /// Load the runtime and open device 0; `ranges` are the recorded device address ranges,
    /// reserved before anything else.
    pub fn open(self, opts: &Options, ranges: &[(u64, u64)]) -> Result<Box<dyn Backend>> {
        Ok(match self {
            Family::Cuda => Box::new(cuda::Cuda::open(opts, ranges)?),
            Family::Hip => Box::new(hip::Hip::open(opts, ranges)?),
        })
    }
}

/// Strip `_ptsz`/`_ptds` and `_vN` suffixes; also says whether the call used per-thread
/// default stream semantics.
pub fn base_name(name: &str) -> (&str, bool) {
    let (name, per_thread) = match name
        .strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
    {
        Some(n) => (n, true),
        None => (name, false),
    };
    let base = match name.rfind("_v") {
        Some(i) if name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < name.len() => {
            &name[..i]
        }
        _ => name,
    };
    (base, per_thread)
}

/// Read a code object file of the archive.
pub fn read_code(path: &Path) -> Result<Vec<u8>> {
    use anyhow::Context;
    std::fs::read(path).with_context(|| format!("cannot read code object {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_classify_their_allocations_and_code_loads() {
        assert_eq!(Family::of("cuda-driver"), Some(Family::Cuda));
        assert_eq!(Family::of("hip"), Some(Family::Hip));
        assert_eq!(Family::of("opencl"), None);
        let (cuda, hip) = (Family::Cuda, Family::Hip);
        assert_eq!(
            cuda.classify("cuMemAllocPitch"),
            Some(Prescan::Alloc(Extent::Pitched))
        );
        assert_eq!(
            cuda.classify("cuLibraryLoadData"),
            Some(Prescan::CodeLoad { as_library: true })
        );
        assert_eq!(cuda.classify("hipMalloc"), None);
        assert_eq!(
            hip.classify("hipMemAddressReserve"),
            Some(Prescan::Alloc(Extent::Reservation))
        );
        assert_eq!(
            hip.classify("__hipRegisterFatBinary"),
            Some(Prescan::CodeLoad { as_library: false })
        );
        assert_eq!(hip.classify("hipLaunchKernel"), None);
    }

    #[test]
    fn abi_suffixes_are_stripped() {
        assert_eq!(
            base_name("cuMemcpyHtoDAsync_v2_ptsz"),
            ("cuMemcpyHtoDAsync", true)
        );
        assert_eq!(base_name("cuMemAlloc_v2"), ("cuMemAlloc", false));
        assert_eq!(base_name("cuLaunchKernel"), ("cuLaunchKernel", false));
        assert_eq!(base_name("cuMemcpy_ptds"), ("cuMemcpy", true));
    }
}
