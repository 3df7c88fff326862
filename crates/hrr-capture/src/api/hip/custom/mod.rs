//! The HIP calls that need more than copying arguments into their shape: each receives
//! its row's typed arguments (its row in `hrr_calls::hip_calls!`, as the generated struct
//! `calls::args::<Op>`, or one by one for a row saying `=> name(..)`) and records the row's
//! shape. A row saying `after name` gives its function the call's status too, once the wrapper
//! made the call (`fn name(h, a: args::<Op>, r)`: most calls need nothing before it); one
//! saying `=> name` gives it `call`, which makes the real call, for work before it (H2D
//! sources, launch arguments, the ordering of a synchronisation's results). Field names and meanings follow the CUDA side
//! wherever they are the same, so `--info`, `--events` and replay read both alike.
//!
//! Recording rules: H2D sources are stored as blobs before the call, D2H results after it
//! (async copies: after synchronising the stream); module images and fat binaries as code
//! objects; launches carry the packed argument bytes (from `extra`, or laid out from the code
//! object's `amdhsa.kernels[].args`). Registrations are written when first used (see
//! [`super::state`]).

#![allow(clippy::missing_safety_doc)]

mod code;
mod copy;
mod device;
mod launch;
mod memory;
mod spt;
mod stream;
mod symbol;

pub use crate::hook::common::{
    device_get_name, get_global, host_get_device_pointer, host_register, launch_host_func,
    mem_create, mem_set_access, memcpy_dtod, memcpy_dtoh, memcpy_htod, memcpy_htod_async, memset,
    memset_async, query_done,
};
pub use code::*;
pub use copy::*;
pub use device::*;
pub use launch::*;
pub use memory::*;
pub use spt::*;
pub use stream::*;
pub use symbol::*;

use std::ffi::c_void;

use hrr_archive::ObjectId;
use hrr_calls::hip::ffi::HipError;

use super::calls::Export;
use super::API;
pub(crate) use crate::hook::common::rec;
use crate::recorder::{self, Recorder};

/// The closure a custom function is handed to make the real call (it returns the call's
/// status).
pub trait Call: FnOnce() -> HipError {}
impl<F: FnOnce() -> HipError> Call for F {}

/// Store `len` host bytes at `ptr` as a blob.
pub(crate) unsafe fn host_blob(ptr: *const c_void, len: usize) -> Option<ObjectId> {
    recorder::put_host_blob(&API, ptr, len)
}

/// Make `h`'s real call (`call`), let `track` update the state when it succeeded, and record
/// the shape `fill` builds.
pub(crate) unsafe fn call_tracking<S: hrr_calls::Shape>(
    h: Export,
    call: impl Call,
    track: impl FnOnce(),
    fill: impl FnOnce(&mut Recorder) -> S,
) -> HipError {
    let r = call();
    if r == 0 {
        track();
    }
    rec(h, r, fill);
    r
}
