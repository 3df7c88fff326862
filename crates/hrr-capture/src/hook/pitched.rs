//! The host side of a pitched (2D/3D) copy, for every API: which rows the copy covers and their
//! bytes packed into one blob (`width_bytes` per row, rows x depth), the H2D source before the
//! call and the D2H result after it. Sides use the memory types of `CUDA_MEMCPY2D` (host 1,
//! device 2), as [`CopyPitched`] records them.

use std::ffi::{c_int, c_void};

use hrr_archive::ObjectId;
use hrr_calls::cuda::ffi::CU_MEMORYTYPE_HOST;
use hrr_calls::shapes::{direction, CopyPitched};

use super::common::rec;
use super::ApiExport;
use crate::api::ApiDef;
use crate::recorder;

/// Run the pitched copy `c` (its fields and direction set) through `call` and record it as
/// export `h`, for every API: a host source packed before the call, a host result packed after
/// it when it is there (a blocking copy that succeeded; an async one once `result_there` said
/// so of its `stream`, having synchronised it), buffered events flushed after a blocking D2H
/// copy (the program may act on the result). Returns the status and whether the copy's event
/// holds its D2H result.
///
/// # Safety
/// The host sides `c` names are the program's buffers, readable for the rows it covers.
pub unsafe fn copy_and_record<E: ApiExport>(
    h: E,
    mut c: CopyPitched,
    stream: Option<*mut c_void>,
    call: impl FnOnce() -> c_int,
    result_there: impl FnOnce(*mut c_void) -> bool,
) -> (c_int, bool) {
    c.stream = stream.unwrap_or(std::ptr::null_mut()) as u64;
    let (width, rows, slices) = (c.width_bytes, c.height.max(1), c.depth.max(1));
    if c.direction == direction::H2D {
        c.h2d_blob = HostSide::src(&c).packed(E::api(), width, rows, slices);
    }
    let r = call();
    let d2h = c.direction == direction::D2H && r == 0;
    if d2h && stream.is_none_or(result_there) {
        c.d2h_blob = HostSide::dst(&c).packed(E::api(), width, rows, slices);
    }
    let result_held = c.d2h_blob.is_some();
    rec(h, r, |_| c);
    if d2h && stream.is_none() {
        recorder::flush_soft();
    }
    (r, result_held)
}

/// The largest copy whose host side is packed into a blob (larger ones are recorded without:
/// replay skips their H2D or cannot check their D2H).
const MAX_PACKED: u64 = 1 << 34;

/// One host side of a copy: base address, offsets, pitch and height (of a 3D slice).
pub struct HostSide {
    base: u64,
    x: u64,
    y: u64,
    z: u64,
    pitch: u64,
    height: u64,
}

impl HostSide {
    /// The source side of `c`.
    pub fn src(c: &CopyPitched) -> HostSide {
        HostSide::of(c, false)
    }

    /// The destination side of `c`.
    pub fn dst(c: &CopyPitched) -> HostSide {
        HostSide::of(c, true)
    }

    /// The source or (`dst`) destination side of `c`.
    fn of(c: &CopyPitched, dst: bool) -> Self {
        let (ty, host, device) = match dst {
            false => (c.src_type, c.src_host, c.src_device),
            true => (c.dst_type, c.dst_host, c.dst_device),
        };
        let [x, y, z, pitch, height] = match dst {
            false => [c.src_x, c.src_y, c.src_z, c.src_pitch, c.src_height],
            true => [c.dst_x, c.dst_y, c.dst_z, c.dst_pitch, c.dst_height],
        };
        HostSide {
            base: if ty == CU_MEMORYTYPE_HOST {
                host
            } else {
                device
            },
            x,
            y,
            z,
            pitch,
            height,
        }
    }

    /// The address of the first byte of row `row` of slice `slice` the copy covers.
    fn row_start(&self, row: u64, slice: u64) -> Option<u64> {
        let rows = (self.z.checked_add(slice)?)
            .checked_mul(self.height)?
            .checked_add(self.y.checked_add(row)?)?;
        self.base
            .checked_add(rows.checked_mul(self.pitch)?)?
            .checked_add(self.x)
    }

    /// What a copy of `depth` slices of `height` rows of `width` bytes reaches on this side:
    /// the address of its first byte and, where its rows lie back to back (one row; rows as
    /// wide as the pitch, slices as tall as their height), the bytes it covers, else 0 (it
    /// writes some bytes between its first and last, not all).
    pub fn reach(&self, width: u64, height: u64, depth: u64) -> Option<(u64, u64)> {
        let first = self.row_start(0, 0)?;
        let one_row = height <= 1 && depth <= 1;
        let back_to_back =
            self.x == 0 && width == self.pitch && (depth <= 1 || height == self.height);
        let bytes = if one_row || back_to_back {
            width
                .checked_mul(height.max(1))?
                .checked_mul(depth.max(1))?
        } else {
            0
        };
        Some((first, bytes))
    }

    /// Store the rows the copy covers, packed, as a blob; `None` when the geometry is one the
    /// driver refuses (rows wider than the pitch, slices taller than their height), so nothing
    /// outside the program's buffer is read.
    ///
    /// # Safety
    /// The side's rows must be readable host memory (the program's own buffer).
    pub unsafe fn packed(
        &self,
        api: &'static ApiDef,
        width: u64,
        height: u64,
        depth: u64,
    ) -> Option<ObjectId> {
        let total = width.checked_mul(height)?.checked_mul(depth)?;
        if self.base == 0 || total == 0 || total > MAX_PACKED {
            return None;
        }
        let many_rows = height > 1 || depth > 1;
        if many_rows && self.x.checked_add(width)? > self.pitch {
            return None;
        }
        if depth > 1 && self.y.checked_add(height)? > self.height {
            return None;
        }
        let start = |row, slice| self.row_start(row, slice);
        if !many_rows {
            return recorder::put_host_blob(api, start(0, 0)? as *const c_void, width as usize);
        }
        let mut buf = Vec::with_capacity(total as usize);
        for slice in 0..depth {
            for row in 0..height {
                let p = start(row, slice)? as *const u8;
                buf.extend_from_slice(std::slice::from_raw_parts(p, width as usize));
            }
        }
        recorder::put_host_blob(api, buf.as_ptr() as *const c_void, buf.len())
    }
}
