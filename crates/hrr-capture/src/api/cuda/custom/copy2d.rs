//! 2D/3D copies and copies to, from and between CUDA arrays (`cuMemcpy2D*`, `cuMemcpy3D*`,
//! `cuMemcpy{HtoA,AtoH,AtoD,DtoA,AtoA}*`), all recorded as [`CopyPitched`]: the descriptor's
//! fields, the direction (arrays are device memory; a `CU_MEMORYTYPE_UNIFIED` pointer is
//! classified with `cuPointerGetAttribute` like `cuMemcpy`), a host source packed as a blob
//! before the call (`width_bytes` per row, rows x depth) and a host destination packed after it,
//! as the D2H check (async copies: after synchronising the stream, never on a capturing one;
//! the same rules as the 1D copies of `copy.rs`).

#![allow(clippy::missing_safety_doc)]

use super::Call;
use crate::api::cuda::calls::args;

use hrr_calls::cuda::ffi::{
    CUresult, CudaMemcpy2D, CudaMemcpy3D, Handle, CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_DEVICE,
    CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_UNIFIED,
};
use hrr_calls::shapes::{direction, CopyPitched};

use super::copy::{is_device_ptr, sync_stream};
use crate::api::cuda::calls::Export;
use crate::api::cuda::hostmem;
use crate::hook::pitched::{copy_and_record, HostSide};

/// Is one side of a copy device memory (device, array, or a unified pointer the driver calls
/// device memory)?
unsafe fn side_is_device(ty: u32, device: u64) -> bool {
    match ty {
        CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_ARRAY => true,
        CU_MEMORYTYPE_UNIFIED => is_device_ptr(device),
        _ => false,
    }
}

/// Run a pitched copy and record it: `c` holds the descriptor's fields; `stream` is `None` for
/// a blocking copy.
unsafe fn pitched(
    h: Export,
    mut c: CopyPitched,
    stream: Option<Handle>,
    call: impl Call,
) -> CUresult {
    let src_dev = side_is_device(c.src_type, c.src_device);
    let dst_dev = side_is_device(c.dst_type, c.dst_device);
    c.direction = direction::of(src_dev, dst_dev);
    let blocking_download = c.direction == direction::D2H && stream.is_none();
    if blocking_download {
        hostmem::blocking_download();
    }
    let (dst, whole) = submit_pitched(&c);
    let (r, result_held) = copy_and_record(h, c, stream, call, |s| sync_stream(h, s) == 0);
    if blocking_download && result_held && whole > 0 {
        // the copy's event holds the result: the scan after it skips it
        hostmem::result_recorded(dst, whole as usize, hostmem::Recorded::Blocking);
    }
    r
}

/// Before the pitched copy `c` (its direction set) is made: the host-visible memory its sides
/// reach is read for host writes first and its destination taken as written by it, as for a 1D
/// copy (`hook::common::submit_copy`); an array side reaches none, and a host source's rows are
/// recorded with the copy. Rows with gaps between them overwrite nothing whole: read first.
/// Returns the destination's first byte and the bytes it overwrites whole (0: none or gaps).
fn submit_pitched(c: &CopyPitched) -> (u64, u64) {
    let (width, height, depth) = (c.width_bytes, c.height, c.depth);
    let reach = |ty: u32, side: HostSide| match ty {
        CU_MEMORYTYPE_ARRAY => None,
        _ => side.reach(width, height, depth),
    };
    let (dst, written) = reach(c.dst_type, HostSide::dst(c)).unwrap_or((0, 0));
    let src = match c.direction {
        direction::H2D => None,
        _ => reach(c.src_type, HostSide::src(c)).map(|(first, _)| first),
    };
    crate::hook::common::submit_copy(dst, src, written as usize);
    (dst, written)
}

/// Set the named fields of `$c` (a [`CopyPitched`]) to the same-named fields of `$d` (a
/// `CUDA_MEMCPY2D` or `CUDA_MEMCPY3D` reference), as they are or (`as u64`) widened from
/// `size_t`. A macro: the C structs and the record share these names but no type.
macro_rules! copy_fields {
    ($c:ident = $d:ident; $($f:ident)*) => {
        $( $c.$f = $d.$f; )*
    };
    ($c:ident = $d:ident as u64; $($f:ident)*) => {
        $( $c.$f = $d.$f as u64; )*
    };
}

/// The recorded fields a `CUDA_MEMCPY2D` and a `CUDA_MEMCPY3D` (`$d`, a reference) share: memory
/// types, pointers, arrays, x and y offsets and pitches of both sides, the row width and height
/// (the 3D fields 0).
macro_rules! planar_fields {
    ($d:ident) => {{
        let mut c = CopyPitched::default();
        copy_fields!(c = $d;
            src_type src_host src_device src_array dst_type dst_host dst_device dst_array);
        copy_fields!(c = $d as u64;
            src_x src_y src_pitch dst_x dst_y dst_pitch width_bytes height);
        c
    }};
}

/// The recorded fields of a `CUDA_MEMCPY2D` (z, LOD and heights 0, depth 1).
unsafe fn fields_2d(p: *const CudaMemcpy2D) -> Option<CopyPitched> {
    let d = p.as_ref()?;
    Some(CopyPitched {
        depth: 1,
        ..planar_fields!(d)
    })
}

/// The recorded fields of a `CUDA_MEMCPY3D`.
unsafe fn fields_3d(p: *const CudaMemcpy3D) -> Option<CopyPitched> {
    let d = p.as_ref()?;
    let mut c = planar_fields!(d);
    copy_fields!(c = d as u64; src_z src_lod src_height dst_z dst_lod dst_height depth);
    Some(c)
}

/// A null descriptor: the driver's answer, recorded with empty fields.
fn or_empty(c: Option<CopyPitched>) -> CopyPitched {
    c.unwrap_or_default()
}

pub unsafe fn memcpy_2d(h: Export, p: *const CudaMemcpy2D, call: impl Call) -> CUresult {
    pitched(h, or_empty(fields_2d(p)), None, call)
}

pub unsafe fn memcpy_2d_async(h: Export, a: args::Memcpy2DAsync, call: impl Call) -> CUresult {
    let args::Memcpy2DAsync { p, stream } = a;
    pitched(h, or_empty(fields_2d(p)), Some(stream), call)
}

pub unsafe fn memcpy_3d(h: Export, a: args::Memcpy3D, call: impl Call) -> CUresult {
    let args::Memcpy3D { p } = a;
    pitched(h, or_empty(fields_3d(p)), None, call)
}

pub unsafe fn memcpy_3d_async(h: Export, a: args::Memcpy3DAsync, call: impl Call) -> CUresult {
    let args::Memcpy3DAsync { p, stream } = a;
    pitched(h, or_empty(fields_3d(p)), Some(stream), call)
}

/// A side of a 1D array copy: memory type, host pointer, device pointer, array, offset.
type Side1d = (u32, u64, u64, u64, u64);

/// The fields of a copy of `n` bytes between two 1D sides (one row, no pitch).
fn fields_1d(src: Side1d, dst: Side1d, n: usize) -> CopyPitched {
    CopyPitched {
        src_type: src.0,
        src_host: src.1,
        src_device: src.2,
        src_array: src.3,
        src_x: src.4,
        dst_type: dst.0,
        dst_host: dst.1,
        dst_device: dst.2,
        dst_array: dst.3,
        dst_x: dst.4,
        width_bytes: n as u64,
        height: 1,
        depth: 1,
        ..Default::default()
    }
}

fn host_side(p: u64) -> Side1d {
    (CU_MEMORYTYPE_HOST, p, 0, 0, 0)
}

fn device_side(p: u64) -> Side1d {
    (CU_MEMORYTYPE_DEVICE, 0, p, 0, 0)
}

fn array_side(a: Handle, off: usize) -> Side1d {
    (CU_MEMORYTYPE_ARRAY, 0, 0, a as u64, off as u64)
}

pub unsafe fn memcpy_htoa(h: Export, a: args::MemcpyHtoA, call: impl Call) -> CUresult {
    let args::MemcpyHtoA { dst, off, src, n } = a;
    let c = fields_1d(host_side(src as u64), array_side(dst, off), n);
    pitched(h, c, None, call)
}

pub unsafe fn memcpy_htoa_async(h: Export, a: args::MemcpyHtoAAsync, call: impl Call) -> CUresult {
    let c = fields_1d(host_side(a.src as u64), array_side(a.dst, a.off), a.n);
    pitched(h, c, Some(a.stream), call)
}

pub unsafe fn memcpy_atoh(h: Export, a: args::MemcpyAtoH, call: impl Call) -> CUresult {
    let args::MemcpyAtoH { dst, src, off, n } = a;
    let c = fields_1d(array_side(src, off), host_side(dst as u64), n);
    pitched(h, c, None, call)
}

pub unsafe fn memcpy_atoh_async(h: Export, a: args::MemcpyAtoHAsync, call: impl Call) -> CUresult {
    let c = fields_1d(array_side(a.src, a.off), host_side(a.dst as u64), a.n);
    pitched(h, c, Some(a.stream), call)
}

pub unsafe fn memcpy_atod(h: Export, a: args::MemcpyAtoD, call: impl Call) -> CUresult {
    let args::MemcpyAtoD { dst, src, off, n } = a;
    pitched(
        h,
        fields_1d(array_side(src, off), device_side(dst), n),
        None,
        call,
    )
}

pub unsafe fn memcpy_dtoa(h: Export, a: args::MemcpyDtoA, call: impl Call) -> CUresult {
    let args::MemcpyDtoA { dst, off, src, n } = a;
    pitched(
        h,
        fields_1d(device_side(src), array_side(dst, off), n),
        None,
        call,
    )
}

pub unsafe fn memcpy_atoa(h: Export, a: args::MemcpyAtoA, call: impl Call) -> CUresult {
    let c = fields_1d(array_side(a.src, a.soff), array_side(a.dst, a.doff), a.n);
    pitched(h, c, None, call)
}
