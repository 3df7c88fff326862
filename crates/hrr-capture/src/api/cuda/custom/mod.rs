//! The CUDA calls that need more than copying arguments into their shape: each receives
//! its row's typed arguments (its row in `hrr_calls::cuda_calls!`, as the generated struct
//! `calls::args::<Op>`, or one by one for a row saying `=> name(..)`) and records the row's
//! shape. A row saying `after name` gives its function the call's status too, once the wrapper
//! made the call (`fn name(h, a: args::<Op>, r)`: most calls need nothing before it); one
//! saying `=> name` gives it `call`, which makes the real call, for work before it (H2D
//! sources, launch arguments, the ordering of a synchronisation's results).
//!
//! Recording rules (FORMAT.md, README): H2D sources are stored as blobs before the call; D2H
//! results after it (async copies: after synchronising the stream, never on a capturing one);
//! code images as code objects; launches carry the packed argument buffer, from `extra` or laid
//! out with the driver's parameter info.

mod array;
mod code;
mod copy;
mod copy2d;
mod device;
mod event;
mod graph;
mod host_node;
mod launch;
mod memory;
mod tensor_map;

pub use crate::hook::common::{
    device_get_name, get_global, mem_create, mem_set_access, memcpy_dtod, memcpy_dtoh, memcpy_htod,
    memset, memset_2d, memset_2d_async, memset_async, query_done,
};
pub use array::*;
pub use code::*;
pub use copy::*;
pub use copy2d::*;
pub use device::*;
pub use event::*;
pub use graph::*;
pub use launch::*;
pub use memory::*;
pub use tensor_map::*;

use std::ffi::c_void;

use hrr_archive::ObjectId;

use super::API;
pub(crate) use crate::hook::common::rec;
use crate::recorder;

/// The closure a custom function is handed to make the real call (it returns the call's
/// status).
pub trait Call: FnOnce() -> hrr_calls::cuda::ffi::CUresult {}
impl<F: FnOnce() -> hrr_calls::cuda::ffi::CUresult> Call for F {}

/// Store `len` host bytes at `ptr` as a blob.
pub(crate) unsafe fn host_blob(ptr: *const c_void, len: usize) -> Option<ObjectId> {
    recorder::put_host_blob(&API, ptr, len)
}
