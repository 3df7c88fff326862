//! The CUDA driver API (`libcuda.so.1`): its wrappers, expanded from the table in
//! `crates/hrr-calls/src/cuda/table.rs`; see [`crate::api`] for what each file owns.

pub mod calls;
pub mod custom;
pub mod digest;
pub mod facts;
pub mod freecheck;
pub mod hostmem;
pub mod image;
pub mod loader;
pub mod param_info;
pub mod proc_address;
pub mod state;

use crate::api::ApiDef;

/// The CUDA driver API, for the recorder.
pub static API: ApiDef = ApiDef {
    name: "cuda-driver",
    schema: hrr_calls::cuda::schema,
    metadata: facts::collect,
    device_digests: Some(digest::device_digests),
};
