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

    // 2D/3D copies, arrays, texture and surface objects (wt-copies).

    /// `CU_MEMORYTYPE_HOST`.
    pub const CU_MEMORYTYPE_HOST: u32 = 1;
    /// `CU_MEMORYTYPE_DEVICE`.
    pub const CU_MEMORYTYPE_DEVICE: u32 = 2;
    /// `CU_MEMORYTYPE_ARRAY`.
    pub const CU_MEMORYTYPE_ARRAY: u32 = 3;
    /// `CU_MEMORYTYPE_UNIFIED`.
    pub const CU_MEMORYTYPE_UNIFIED: u32 = 4;

    /// `CUDA_MEMCPY2D` (128 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    #[allow(missing_docs)]
    pub struct Memcpy2D {
        pub src_x: usize,
        pub src_y: usize,
        pub src_type: u32,
        pub src_host: u64,
        pub src_device: u64,
        pub src_array: u64,
        pub src_pitch: usize,
        pub dst_x: usize,
        pub dst_y: usize,
        pub dst_type: u32,
        pub dst_host: u64,
        pub dst_device: u64,
        pub dst_array: u64,
        pub dst_pitch: usize,
        pub width_bytes: usize,
        pub height: usize,
    }

    /// `CUDA_MEMCPY3D` (200 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    #[allow(missing_docs)]
    pub struct Memcpy3D {
        pub src_x: usize,
        pub src_y: usize,
        pub src_z: usize,
        pub src_lod: usize,
        pub src_type: u32,
        pub src_host: u64,
        pub src_device: u64,
        pub src_array: u64,
        pub reserved0: u64,
        pub src_pitch: usize,
        pub src_height: usize,
        pub dst_x: usize,
        pub dst_y: usize,
        pub dst_z: usize,
        pub dst_lod: usize,
        pub dst_type: u32,
        pub dst_host: u64,
        pub dst_device: u64,
        pub dst_array: u64,
        pub reserved1: u64,
        pub dst_pitch: usize,
        pub dst_height: usize,
        pub width_bytes: usize,
        pub height: usize,
        pub depth: usize,
    }

    /// `CUDA_ARRAY_DESCRIPTOR` (24 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    #[allow(missing_docs)]
    pub struct ArrayDescriptor {
        pub width: usize,
        pub height: usize,
        pub format: u32,
        pub channels: u32,
    }

    /// `CUDA_ARRAY3D_DESCRIPTOR` (40 bytes).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    #[allow(missing_docs)]
    pub struct Array3dDescriptor {
        pub width: usize,
        pub height: usize,
        pub depth: usize,
        pub format: u32,
        pub channels: u32,
        pub flags: u32,
    }

    /// `sizeof(CUDA_RESOURCE_DESC)`: type, padding, 128-byte union, flags, padding.
    pub const RESOURCE_DESC_BYTES: usize = 144;
    /// `sizeof(CUDA_TEXTURE_DESC)`.
    pub const TEXTURE_DESC_BYTES: usize = 104;
    /// `sizeof(CUDA_RESOURCE_VIEW_DESC)`.
    pub const RESOURCE_VIEW_DESC_BYTES: usize = 112;
    /// `CU_RESOURCE_TYPE_ARRAY`: the handle at offset 8 is a `CUarray`.
    pub const CU_RESOURCE_TYPE_ARRAY: u32 = 0;
    /// `CU_RESOURCE_TYPE_MIPMAPPED_ARRAY`: the handle at offset 8 is a `CUmipmappedArray`.
    pub const CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: u32 = 1;
    /// `CU_RESOURCE_TYPE_LINEAR`: offset 8 is a device pointer.
    pub const CU_RESOURCE_TYPE_LINEAR: u32 = 2;
    /// `CU_RESOURCE_TYPE_PITCH2D`: offset 8 is a device pointer.
    pub const CU_RESOURCE_TYPE_PITCH2D: u32 = 3;

    const _: () = assert!(std::mem::size_of::<Memcpy2D>() == 128);
    const _: () = assert!(std::mem::size_of::<Memcpy3D>() == 200);
    const _: () = assert!(std::mem::size_of::<ArrayDescriptor>() == 24);
    const _: () = assert!(std::mem::size_of::<Array3dDescriptor>() == 40);
}

/// Expands the table into this module's generated items.
macro_rules! cuda_api {
    ($($rows:tt)*) => {
        $crate::define_api! { api: "cuda-driver", version: 13000; $($rows)* }
    };
}

crate::cuda_calls!(cuda_api);
