//! The HIP runtime API: its C types, its call table ([`crate::hip_calls!`], in `table.rs`) and
//! what this crate generates from the table: [`Op`], [`EXPORTS`] and the [`schema`].

mod table;

/// The C types the HIP rows are written in. A consumer that expands [`crate::hip_calls!`] does
/// so where `use hrr_calls::hip::ffi::*;` is in scope.
pub mod ffi {
    pub use std::ffi::{c_char, c_int, c_uint, c_void};

    /// `hipError_t`.
    pub type HipError = c_int;
    /// An opaque runtime handle (`hipStream_t`, `hipEvent_t`, `hipModule_t`, ...).
    pub type Handle = *mut c_void;
    /// A device or host pointer.
    pub type Ptr = *mut c_void;

    /// `hipSuccess`.
    pub const HIP_SUCCESS: HipError = 0;
    /// `hipErrorNotFound`: what a wrapper returns when the runtime lacks the entry point.
    pub const HIP_ERROR_NOT_FOUND: HipError = 500;

    /// `dim3`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Dim3 {
        /// x.
        pub x: u32,
        /// y.
        pub y: u32,
        /// z.
        pub z: u32,
    }

    /// `hipPos`: a 3D copy's offset (x in bytes for linear memory).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    #[allow(missing_docs)]
    pub struct Pos {
        pub x: usize,
        pub y: usize,
        pub z: usize,
    }

    /// `hipPitchedPtr`: linear memory, its pitch and the size of a slice (`ysize` rows).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    #[allow(missing_docs)]
    pub struct PitchedPtr {
        pub ptr: *mut c_void,
        pub pitch: usize,
        pub xsize: usize,
        pub ysize: usize,
    }

    /// `hipMemcpy3DParms` (ROCm 5 and 6): a 3D copy between arrays or pitched linear memory;
    /// `extent.width` is in bytes for linear memory.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    #[allow(missing_docs)]
    pub struct Memcpy3DParms {
        pub src_array: Handle,
        pub src_pos: Pos,
        pub src_ptr: PitchedPtr,
        pub dst_array: Handle,
        pub dst_pos: Pos,
        pub dst_ptr: PitchedPtr,
        /// width, height, depth.
        pub extent: [usize; 3],
        pub kind: c_int,
    }

    const _: () = assert!(std::mem::size_of::<Memcpy3DParms>() == 160);
}

/// HIP version the recorder was written against (`HIP_VERSION` of ROCm 6.2: major × 10⁷ +
/// minor × 10⁵ + patch); the calls recorded exist from ROCm 5.2 on.
pub const API_VERSION: u64 = 60_200_000;

/// Expands the table into this module's generated items.
macro_rules! hip_api {
    ($($rows:tt)*) => {
        $crate::define_api! { api: "hip", version: API_VERSION; $($rows)* }
    };
}

crate::hip_calls!(hip_api);

/// The architecture name (`gfx90a:sramecc+:xnack-`) in a filled `hipDeviceProp_t`, wherever
/// the layout of the ROCm at hand puts it: the first NUL-terminated string after `name` (the
/// first 256 bytes) that starts with `gfx` and a hex digit, is printable ASCII and is shorter
/// than 128 bytes.
pub fn find_arch_name(buf: &[u8]) -> Option<String> {
    let mut i = 256;
    while i + 4 <= buf.len() {
        if &buf[i..i + 3] == b"gfx" && buf[i + 3].is_ascii_hexdigit() && buf[i - 1] == 0 {
            let end = buf[i..].iter().position(|&b| b == 0)? + i;
            let s = &buf[i..end];
            if s.len() < 128 && s.iter().all(|b| b.is_ascii_graphic()) {
                return Some(String::from_utf8_lossy(s).into_owned());
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arch_name_is_found_wherever_the_layout_puts_it() {
        let mut p = vec![0u8; 2048];
        p[..13].copy_from_slice(b"AMD gfx Card\0");
        p[396..396 + 22].copy_from_slice(b"gfx90a:sramecc+:xnack-");
        assert_eq!(
            find_arch_name(&p).as_deref(),
            Some("gfx90a:sramecc+:xnack-")
        );
        let mut q = vec![0u8; 2048];
        q[1160..1167].copy_from_slice(b"gfx1100");
        assert_eq!(find_arch_name(&q).as_deref(), Some("gfx1100"));
        assert_eq!(find_arch_name(&[0u8; 1024]), None);
        let mut props = vec![0u8; 1024];
        props[..5].copy_from_slice(b"Card\0");
        props[396..403].copy_from_slice(b"gfx942\0");
        assert_eq!(find_arch_name(&props).as_deref(), Some("gfx942"));
    }
}
