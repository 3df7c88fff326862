//! The CUDA calls that need more than copying arguments into their shape: each receives the
//! typed arguments of its row in `hrr_calls::cuda_calls!` and `call`, which makes the real
//! call, and records the row's shape.
//!
//! Recording rules (FORMAT.md, README): H2D sources are stored as blobs before the call; D2H
//! results after it (async copies: after synchronising the stream, never on a capturing one);
//! code images as code objects; launches carry the packed argument buffer, from `extra` or laid
//! out with the driver's parameter info.

mod code;
mod copy;
mod device;
mod graph;
mod launch;
mod memory;

pub use code::*;
pub use copy::*;
pub use device::*;
pub use graph::*;
pub use launch::*;
pub use memory::*;

use std::ffi::c_void;

use hrr_archive::ObjectId;
use hrr_calls::cuda::ffi::CUresult;
use hrr_calls::Shape;

use super::calls::Export;
use super::API;
use crate::recorder::{self, Recorder};

/// Record export `h`'s event with result `r` and the shape `fill` builds.
pub(crate) fn rec<S: Shape>(h: Export, r: CUresult, fill: impl FnOnce(&mut Recorder) -> S) {
    crate::hook::record(&API, h.id(), Some(r), fill);
}

/// Store `len` host bytes at `ptr` as a blob.
pub(crate) unsafe fn host_blob(ptr: *const c_void, len: usize) -> Option<ObjectId> {
    recorder::put_host_blob(&API, ptr, len)
}
