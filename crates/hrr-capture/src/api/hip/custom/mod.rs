//! The HIP calls that need more than copying arguments into their shape: each receives the
//! typed arguments of its row in `hrr_calls::hip_calls!` and `call`, which makes the real call,
//! and records the row's shape. Field names and meanings follow the CUDA side wherever they are
//! the same, so `--info`, `--events` and replay read both alike.
//!
//! Recording rules: H2D sources are stored as blobs before the call, D2H results after it
//! (async copies: after synchronising the stream); module images and fat binaries as code
//! objects; launches carry the packed argument bytes (from `extra`, or laid out from the code
//! object's `amdhsa.kernels[].args`). Registrations are written when first used (see
//! [`super::state`]).

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

mod code;
mod copy;
mod device;
mod launch;
mod memory;
mod stream;
mod symbol;

pub use code::*;
pub use copy::*;
pub use device::*;
pub use launch::*;
pub use memory::*;
pub use stream::*;
pub use symbol::*;

use std::ffi::c_void;

use hrr_archive::ObjectId;
use hrr_calls::hip::ffi::HipError;
use hrr_calls::Shape;

use super::calls::Export;
use super::API;
use crate::recorder::{self, Recorder};

/// Record export `h`'s event with result `r` and the shape `fill` builds.
pub(crate) fn rec<S: Shape>(h: Export, r: HipError, fill: impl FnOnce(&mut Recorder) -> S) {
    crate::hook::record(&API, h.id(), Some(r), fill);
}

/// Store `len` host bytes at `ptr` as a blob.
pub(crate) unsafe fn host_blob(ptr: *const c_void, len: usize) -> Option<ObjectId> {
    recorder::put_host_blob(&API, ptr, len)
}
