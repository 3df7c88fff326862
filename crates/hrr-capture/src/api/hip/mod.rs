//! The HIP runtime API (`libamdhip64.so`): exported `hip*` and `__hip*` wrappers, expanded from
//! the table in `crates/hrr-calls/src/hip/table.rs` (hipcc-built programs import them as
//! `hipMalloc@hip_4.2` and so on; an unversioned definition in a preloaded library satisfies
//! those references), each forwarding to the real runtime; see [`crate::api`] for what each
//! file owns.

pub mod calls;
pub mod code_object;
pub mod custom;
pub mod facts;
pub mod loader;
pub mod msgpack;
pub mod proc_address;
pub mod state;

use crate::api::ApiDef;

/// The HIP runtime API, for the recorder.
pub static API: ApiDef = ApiDef {
    name: "hip",
    schema: hrr_calls::hip::schema,
    metadata: facts::collect,
    device_digests: None,
};
