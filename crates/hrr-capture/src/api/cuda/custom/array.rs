//! CUDA arrays, mipmapped arrays, texture and surface objects: descriptors recorded as fields
//! (arrays) or as the bytes of their C structs (resource, texture and resource view descriptors,
//! whose handles replay re-maps), and the created handle or 64-bit object value.

#![allow(clippy::missing_safety_doc)]

use crate::api::cuda::calls::args;

use hrr_calls::cuda::ffi::{
    Array3dDescriptor, CUresult, Handle, RESOURCE_DESC_BYTES, RESOURCE_VIEW_DESC_BYTES,
    TEXTURE_DESC_BYTES,
};
use hrr_calls::shapes::{ArrayCreate, ObjectCreate};

use super::rec;
use crate::api::cuda::calls::Export;
use crate::hook::args::{bytes_at, out, out_addr};

/// The fields a 2D and a 3D array descriptor (`$d`, a reference) share, with the created array
/// `*$a` (depth, flags and levels 0). A macro: the two C structs share these fields but no type.
macro_rules! array_fields {
    ($a:expr, $d:expr) => {
        ArrayCreate {
            array: out_addr($a),
            width: $d.width as u64,
            height: $d.height as u64,
            format: $d.format,
            channels: $d.channels,
            ..Default::default()
        }
    };
}

pub unsafe fn array_create(h: Export, a: args::ArrayCreate, r: CUresult) {
    let args::ArrayCreate { a, d } = a;
    let d = d.as_ref().copied().unwrap_or_default();
    rec(h, r, |_| array_fields!(a, d));
}

/// The fields of a 3D descriptor (`levels`: 0 for a plain array).
unsafe fn fields_3d(a: *mut Handle, d: *const Array3dDescriptor, levels: u32) -> ArrayCreate {
    let d = d.as_ref().copied().unwrap_or_default();
    ArrayCreate {
        depth: d.depth as u64,
        flags: d.flags,
        levels,
        ..array_fields!(a, d)
    }
}

pub unsafe fn array_3d_create(h: Export, a: args::Array3DCreate, r: CUresult) {
    let args::Array3DCreate { a, d } = a;
    rec(h, r, |_| fields_3d(a, d, 0));
}

pub unsafe fn mipmapped_array_create(h: Export, a: args::MipmappedArrayCreate, r: CUresult) {
    let args::MipmappedArrayCreate { a, d, levels } = a;
    rec(h, r, |_| fields_3d(a, d, levels));
}

/// `CU_RESOURCE_TYPE_LINEAR` and `CU_RESOURCE_TYPE_PITCH2D`: a device pointer at offset 8.
const RESOURCE_LINEAR: u32 = 2;
const RESOURCE_PITCH2D: u32 = 3;

/// The resource type (first field of `CUDA_RESOURCE_DESC`) of its bytes.
fn res_type(res: &[u8]) -> u32 {
    res.get(..4)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// The object `*o` created from the resource descriptor at `res` (the other descriptors empty).
/// Linear and pitched resources hand device code their memory through the object: host-visible
/// memory there is taken as handed over (`hostmem::handed_over`).
unsafe fn object_fields(o: *mut u64, res: *const u8) -> ObjectCreate {
    let res_desc = bytes_at(res, RESOURCE_DESC_BYTES).to_vec();
    if matches!(res_type(&res_desc), RESOURCE_LINEAR | RESOURCE_PITCH2D) {
        if let Some(p) = res_desc.get(8..16) {
            let p = u64::from_le_bytes(p.try_into().unwrap_or_default());
            crate::api::cuda::hostmem::handed_over(p);
        }
    }
    ObjectCreate {
        object: out(o),
        res_type: res_type(&res_desc),
        res_desc,
        ..Default::default()
    }
}

pub unsafe fn tex_object_create(h: Export, a: args::TexObjectCreate, r: CUresult) {
    let args::TexObjectCreate { o, res, tex, view } = a;
    rec(h, r, |_| ObjectCreate {
        tex_desc: bytes_at(tex, TEXTURE_DESC_BYTES).to_vec(),
        view_desc: bytes_at(view, RESOURCE_VIEW_DESC_BYTES).to_vec(),
        ..object_fields(o, res)
    });
}

pub unsafe fn surf_object_create(h: Export, a: args::SurfObjectCreate, r: CUresult) {
    let args::SurfObjectCreate { o, res } = a;
    rec(h, r, |_| object_fields(o, res));
}
