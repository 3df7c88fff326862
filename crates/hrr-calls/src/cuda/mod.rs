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

    /// `CUipcMemHandle` and `CUipcEventHandle`: 64 opaque bytes, passed by value.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct IpcHandle(pub [u8; IPC_HANDLE_BYTES]);

    /// The size of an IPC handle.
    pub const IPC_HANDLE_BYTES: usize = 64;

    impl Default for IpcHandle {
        fn default() -> Self {
            IpcHandle([0; IPC_HANDLE_BYTES])
        }
    }

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

    // Explicit CUDA graphs (wt-graphs).

    /// `sizeof(CUDA_MEMCPY3D)`.
    pub const MEMCPY3D_BYTES: usize = 200;
    /// `sizeof(CUDA_MEMSET_NODE_PARAMS)` (v1; v2 adds a context after it).
    pub const MEMSET_NODE_BYTES: usize = 40;
    /// `sizeof(CUgraphEdgeData)`.
    pub const EDGE_DATA_BYTES: usize = 8;
    /// `CU_MEMORYTYPE_HOST`.
    pub const MEMORYTYPE_HOST: u32 = 1;
    /// `CU_MEMORYTYPE_DEVICE`.
    pub const MEMORYTYPE_DEVICE: u32 = 2;
    /// `CU_MEMORYTYPE_ARRAY`.
    pub const MEMORYTYPE_ARRAY: u32 = 3;
    /// `CU_MEMORYTYPE_UNIFIED`.
    pub const MEMORYTYPE_UNIFIED: u32 = 4;

    /// `CUgraphNodeType` values hrr records.
    pub mod node_type {
        /// `CU_GRAPH_NODE_TYPE_KERNEL`.
        pub const KERNEL: i32 = 0;
        /// `CU_GRAPH_NODE_TYPE_MEMCPY`.
        pub const MEMCPY: i32 = 1;
        /// `CU_GRAPH_NODE_TYPE_MEMSET`.
        pub const MEMSET: i32 = 2;
        /// `CU_GRAPH_NODE_TYPE_HOST`.
        pub const HOST: i32 = 3;
        /// `CU_GRAPH_NODE_TYPE_GRAPH` (a child graph).
        pub const GRAPH: i32 = 4;
        /// `CU_GRAPH_NODE_TYPE_EMPTY`.
        pub const EMPTY: i32 = 5;
        /// `CU_GRAPH_NODE_TYPE_WAIT_EVENT`.
        pub const WAIT_EVENT: i32 = 6;
        /// `CU_GRAPH_NODE_TYPE_EVENT_RECORD`.
        pub const EVENT_RECORD: i32 = 7;
        /// `CU_GRAPH_NODE_TYPE_MEM_ALLOC`: its `GraphNode` carries `dptr` and `bytesize` as two
        /// little-endian `u64`s in `args`.
        pub const MEM_ALLOC: i32 = 10;
        /// `CU_GRAPH_NODE_TYPE_MEM_FREE`: its `GraphNode` carries `dptr` in `args`.
        pub const MEM_FREE: i32 = 11;
        /// `CU_GRAPH_NODE_TYPE_CONDITIONAL`.
        pub const CONDITIONAL: i32 = 13;
    }

    /// Byte offset of `bytesize` in `CUDA_MEM_ALLOC_NODE_PARAMS` (after the 88-byte
    /// `CUmemPoolProps`, the access descriptor pointer and their count); `dptr` follows it.
    pub const MEM_ALLOC_BYTESIZE_AT: usize = 104;

    /// One side of a `CUDA_MEMCPY3D`, read from its bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CopySide {
        /// `CUmemorytype`.
        pub memory_type: u32,
        /// The host pointer (`srcHost`/`dstHost`).
        pub host: u64,
        /// The device pointer (`srcDevice`/`dstDevice`).
        pub device: u64,
        /// Bytes from the host or device pointer to one past the last byte the copy touches.
        pub span: u64,
    }

    /// Byte offsets of one side's fields in `CUDA_MEMCPY3D`: x, y, z, memory type, host,
    /// device, pitch, height.
    const SIDES: [[usize; 8]; 2] = [
        [0, 8, 16, 32, 40, 48, 72, 80],
        [88, 96, 104, 120, 128, 136, 160, 168],
    ];

    fn word(b: &[u8], at: usize) -> u64 {
        b.get(at..at + 8)
            .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
    }

    /// The source (`dst` false) or destination side of the `CUDA_MEMCPY3D` in `b` (200 bytes;
    /// shorter reads as zeros).
    pub fn copy_side(b: &[u8], dst: bool) -> CopySide {
        let o = SIDES[dst as usize];
        let (width, height, depth) = (word(b, 176), word(b, 184).max(1), word(b, 192).max(1));
        let pitch = match word(b, o[6]) {
            0 => width,
            p => p,
        };
        let rows = match word(b, o[7]) {
            0 => height,
            h => h,
        };
        let (x, y, z) = (word(b, o[0]), word(b, o[1]), word(b, o[2]));
        let last_row = (z + depth - 1)
            .saturating_mul(rows)
            .saturating_add(y + height - 1);
        CopySide {
            memory_type: word(b, o[3]) as u32,
            host: word(b, o[4]),
            device: word(b, o[5]),
            span: x
                .saturating_add(last_row.saturating_mul(pitch))
                .saturating_add(width),
        }
    }

    /// Rewrite one side of the `CUDA_MEMCPY3D` in `b`: its memory type and pointers.
    pub fn set_copy_side(b: &mut [u8], dst: bool, memory_type: u32, host: u64, device: u64) {
        let o = SIDES[dst as usize];
        if b.len() < MEMCPY3D_BYTES {
            return;
        }
        b[o[3]..o[3] + 4].copy_from_slice(&memory_type.to_le_bytes());
        b[o[4]..o[4] + 8].copy_from_slice(&host.to_le_bytes());
        b[o[5]..o[5] + 8].copy_from_slice(&device.to_le_bytes());
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
    pub struct CudaMemcpy2D {
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
    pub struct CudaMemcpy3D {
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
    /// `sizeof(CUtensorMap)`: a Hopper TMA descriptor, opaque, 64-byte aligned.
    pub const TENSOR_MAP_BYTES: usize = 128;
    /// The most dimensions a tensor map has (`cuTensorMapEncode*` refuse more).
    pub const TENSOR_MAP_MAX_RANK: usize = 5;

    const _: () = assert!(std::mem::size_of::<CudaMemcpy2D>() == 128);
    const _: () = assert!(std::mem::size_of::<CudaMemcpy3D>() == 200);
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

#[cfg(test)]
mod tests {
    use super::ffi::*;

    #[test]
    fn a_pitched_copy_side_spans_to_its_last_byte() {
        let mut b = vec![0u8; MEMCPY3D_BYTES];
        let put = |b: &mut [u8], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut b, 176, 100); // WidthInBytes
        put(&mut b, 184, 3); // Height
        put(&mut b, 192, 1); // Depth
        put(&mut b, 72, 128); // srcPitch
        put(&mut b, 0, 4); // srcXInBytes
        set_copy_side(&mut b, false, MEMORYTYPE_HOST, 0x1000, 0);
        set_copy_side(&mut b, true, MEMORYTYPE_DEVICE, 0, 0x7e00_0000_0000);
        let src = copy_side(&b, false);
        assert_eq!((src.memory_type, src.host), (MEMORYTYPE_HOST, 0x1000));
        // x 4, rows 0..3 of pitch 128: the last byte is at 4 + 2 * 128 + 99
        assert_eq!(src.span, 4 + 2 * 128 + 100);
        let dst = copy_side(&b, true);
        assert_eq!(
            (dst.memory_type, dst.device),
            (MEMORYTYPE_DEVICE, 0x7e00_0000_0000)
        );
        assert_eq!(dst.span, 2 * 100 + 100, "no pitch: rows of WidthInBytes");
        assert_eq!(copy_side(&[], false).span, 0, "short bytes read as zeros");
    }
}
