//! Hopper TMA descriptors (`CUtensorMap`, 128 opaque bytes): the encode calls recorded with
//! every argument that made the bytes (the global address first, the arrays as little-endian
//! bytes of their `rank`-derived lengths) and the bytes made, so that replay can encode them
//! again at a translated address and put its bytes wherever the recorded ones are passed.
//! `cuTensorMapReplaceAddress` is recorded with the bytes before and after.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use hrr_calls::cuda::ffi::{CUresult, TENSOR_MAP_BYTES, TENSOR_MAP_MAX_RANK};
use hrr_calls::shapes::{TensorMapEncode, TensorMapReplace};

use super::{rec, Call};
use crate::api::cuda::calls::{args, Export};
use crate::hook::args::bytes_at;

/// The little-endian bytes of the `n` elements at `p` (none when `p` is null).
unsafe fn array<T: Copy>(p: *const T, n: usize, le: fn(T) -> Vec<u8>) -> Vec<u8> {
    if p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n)
        .iter()
        .flat_map(|&v| le(v))
        .collect()
}

fn u64_le(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn u32_le(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn i32_le(v: c_int) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// The fields both encode calls share: the map made (empty when the call failed: the arrays of
/// a refused call are not read either, their rank may be anything), its type, rank and address
/// and the dimensions and strides.
unsafe fn encoded(
    r: CUresult,
    map: *mut u8,
    (dtype, rank, addr): (c_int, u32, *mut c_void),
    (dims, strides, elem_strides): (*const u64, *const u64, *const u32),
    (interleave, swizzle, l2, oob): (c_int, c_int, c_int, c_int),
) -> TensorMapEncode {
    let mut s = TensorMapEncode {
        dtype,
        rank,
        addr: addr as u64,
        interleave,
        swizzle,
        l2,
        oob,
        ..Default::default()
    };
    let n = rank as usize;
    if r == 0 && (1..=TENSOR_MAP_MAX_RANK).contains(&n) {
        s.map = bytes_at(map, TENSOR_MAP_BYTES).to_vec();
        s.dims = array(dims, n, u64_le);
        s.strides = array(strides, n - 1, u64_le);
        s.elem_strides = array(elem_strides, n, u32_le);
    }
    s
}

/// [`encoded`] of the arguments `$a` of either encode call (their shared fields have the same
/// names), with status `$r`.
macro_rules! encoded {
    ($r:expr, $a:expr) => {
        encoded(
            $r,
            $a.map,
            ($a.dtype, $a.rank, $a.addr),
            ($a.dims, $a.strides, $a.elem_strides),
            ($a.interleave, $a.swizzle, $a.l2, $a.oob),
        )
    };
}

pub unsafe fn tensor_map_encode_tiled(h: Export, a: args::TensorMapEncodeTiled, r: CUresult) {
    crate::api::cuda::hostmem::handed_over(a.addr as u64);
    rec(h, r, |_| {
        let mut s = encoded!(r, a);
        if !s.map.is_empty() {
            s.box_dim = array(a.box_dim, a.rank as usize, u32_le);
        }
        s
    });
}

pub unsafe fn tensor_map_encode_im2col(h: Export, a: args::TensorMapEncodeIm2col, r: CUresult) {
    crate::api::cuda::hostmem::handed_over(a.addr as u64);
    rec(h, r, |_| {
        let mut s = encoded!(r, a);
        s.im2col = 1;
        s.channels = a.channels;
        s.pixels = a.pixels;
        // the corners have one entry per spatial dimension (rank 3 to 5: 1 to 3)
        if !s.map.is_empty() && a.rank >= 3 {
            s.lower = array(a.lower, a.rank as usize - 2, i32_le);
            s.upper = array(a.upper, a.rank as usize - 2, i32_le);
        }
        s
    });
}

pub unsafe fn tensor_map_replace_address(
    h: Export,
    a: args::TensorMapReplaceAddress,
    call: impl Call,
) -> CUresult {
    let args::TensorMapReplaceAddress { map, addr } = a;
    crate::api::cuda::hostmem::handed_over(addr as u64);
    let before = bytes_at(map, TENSOR_MAP_BYTES).to_vec();
    let r = call();
    rec(h, r, |_| TensorMapReplace {
        before,
        map: if r == 0 {
            bytes_at(map, TENSOR_MAP_BYTES).to_vec()
        } else {
            Vec::new()
        },
        addr: addr as u64,
    });
    r
}
