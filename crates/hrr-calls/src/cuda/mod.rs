//! The CUDA driver API: its C types, its call table ([`crate::cuda_calls!`], in `table.rs`) and
//! what this crate generates from the table: [`Op`], [`EXPORTS`] and the [`schema`].

mod table;

/// The C types the CUDA rows are written in. A consumer that expands [`crate::cuda_calls!`]
/// does so where `use hrr_calls::cuda::ffi::*;` is in scope.
pub mod ffi {
    pub use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ushort, c_void};

    /// `CUresult`.
    pub type CUresult = c_int;
    /// An opaque driver handle (`CUcontext`, `CUstream`, `CUevent`, `CUmodule`, ...).
    pub type Handle = *mut c_void;

    /// `CUDA_SUCCESS`.
    pub const CUDA_SUCCESS: CUresult = 0;
    /// `CUDA_ERROR_NOT_FOUND`: what a wrapper returns when the driver lacks the entry point.
    pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
    /// `CU_STREAM_PER_THREAD`.
    pub const CU_STREAM_PER_THREAD: u64 = 0x2;

    /// `CUlaunchConfig`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct LaunchConfig {
        /// Grid dimensions.
        pub grid: [c_uint; 3],
        /// Block dimensions.
        pub block: [c_uint; 3],
        /// Dynamic shared memory bytes.
        pub shared_mem: c_uint,
        /// Stream.
        pub stream: Handle,
        /// `CUlaunchAttribute` array.
        pub attrs: *const u8,
        /// Its length.
        pub num_attrs: c_uint,
    }

    /// `sizeof(CUlaunchAttribute)`: id, padding, 64-byte value union.
    pub const LAUNCH_ATTR_BYTES: usize = 72;

    /// `CUDA_GRAPH_INSTANTIATE_PARAMS`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct InstantiateParams {
        /// Instantiation flags.
        pub flags: u64,
        /// Upload stream.
        pub upload_stream: Handle,
        /// Out: the node that failed.
        pub err_node_out: Handle,
        /// Out: instantiation result.
        pub result_out: c_int,
    }
}

/// Expands the table into this module's generated items.
macro_rules! cuda_api {
    ($($rows:tt)*) => {
        $crate::define_api! { api: "cuda-driver", version: 13000; $($rows)* }
    };
}

crate::cuda_calls!(cuda_api);
