//! CUDA copies (the `CopyH2d`, `CopyD2h`, `CopyD2d`, `CopyAny` and `CopyPitched` rows; memsets
//! are `backend::memory_calls`'): host-to-device sources come from their recorded blobs, device
//! pointers are translated, arrays remapped, and device-to-host results are handed to the
//! engine's checks ([`Outcome::D2h`]), except inside a stream capture, where the copy runs with
//! the graph, from or into replay's buffer of its host region, which the graph's launches fill
//! and check (`graphs.rs`; pitched copies there use a buffer of their own, unchecked); a result whose destination is host-visible memory is also written there
//! (`hostmem.rs`). A 2D/3D copy's host side is the packed blob (pitch `width_bytes`, `height`
//! rows a slice), so its D2H result is compared packed, as recorded.
//!
//! An async D2H copy recorded without its bytes (capture records them in a later
//! `hrrMemcpyResult` event naming the copy's sequence number) is issued into its own buffer
//! without waiting; the `hrrMemcpyResult` event waits for its stream and compares. Older
//! archives, whose async copies hold their result (`d2h_blob`), are compared at the copy.

use std::ffi::c_void;

use anyhow::Context;
use anyhow::{bail, Result};
use hrr_archive::ObjectId;
use hrr_calls::cuda::ffi::{
    CudaMemcpy2D, CudaMemcpy3D, CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST,
};
use hrr_calls::cuda::Op;
use hrr_calls::shapes::{
    direction, CopyAny, CopyD2d, CopyD2h, CopyH2d, CopyPeer, CopyPeerAsync, CopyPitched, CopyResult,
};

use super::driver::{cu, H};
use super::Cuda;
use crate::replay::backend::shared::{H2D_NOT_RECORDED, H2H};
use crate::replay::backend::{Blobs, Event, Outcome};

/// D2H buffers this large or larger are kept for reuse.
const SPARE_D2H_MIN: usize = 1 << 20;

/// Why a D2H copy issued inside a stream capture is not checked.
const CAPTURED_D2H: &str =
    "D2H copy inside stream capture: it runs with the graph, its result was not recorded";

impl Cuda {
    /// Copy `data` (recorded from host memory at `host`) to `dst`. Inside a stream capture the
    /// graph reads the host side at every launch: the copy reads replay's buffer for `host`
    /// (`graphs.rs`), holding `data` now and each launch's recorded bytes later.
    fn h2d(&mut self, dst: u64, data: &[u8], stream: H, host: u64) -> Result<()> {
        // descriptors a program copies to device memory, with replay's bytes
        let with_maps = self.objects.maps.in_h2d(data);
        let data = with_maps.as_deref().unwrap_or(data);
        if self.capturing(stream) {
            let buf = self.host_buffer(host, data.len() as u64)?;
            // SAFETY: the buffer holds `data.len()` bytes and lives until replay ends.
            unsafe { std::slice::from_raw_parts_mut(buf, data.len()) }.copy_from_slice(data);
            cu!(
                self.api,
                cuMemcpyHtoDAsync_v2(dst, buf as *const c_void, data.len(), stream)
            )?;
            return Ok(());
        }
        if data.len() >= super::staging::STAGE_MIN
            && (self.h2d_pinned(dst, data, stream)? || self.h2d_staged(dst, data, stream)?)
        {
            return Ok(());
        }
        // From pageable memory the driver stages the source before returning: no wait.
        cu!(
            self.api,
            cuMemcpyHtoDAsync_v2(dst, data.as_ptr() as *const c_void, data.len(), stream)
        )?;
        Ok(())
    }

    /// Read `n` bytes at `src` (recorded into host memory at `host`); `expected`: the recorded
    /// result. An async copy (`later`) with no recorded result is left running: its result
    /// event compares it. Inside a stream capture the copy writes replay's buffer for `host`,
    /// which each launch's `hrrGraphHostResult` checks (`graphs.rs`).
    fn d2h(
        &mut self,
        ev: &Event,
        (src, n, host): (u64, usize, u64),
        stream: H,
        expected: Option<ObjectId>,
        later: bool,
    ) -> Result<Outcome> {
        if self.capturing(stream) {
            let buf = self.host_buffer(host, n as u64)?;
            cu!(
                self.api,
                cuMemcpyDtoHAsync_v2(buf as *mut c_void, src, n, stream)
            )?;
            return Ok(Outcome::Done);
        }
        let mut got = self.d2h_buffer(n);
        cu!(
            self.api,
            cuMemcpyDtoHAsync_v2(got.as_mut_ptr() as *mut c_void, src, n, stream)
        )?;
        if later && expected.is_none() {
            // The heap buffer stays where the driver writes, wherever the Vec moves.
            self.pending_d2h.insert(ev.seq, (got, Some(stream)));
            return Ok(Outcome::Done);
        }
        self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
        Ok(Outcome::D2h {
            got,
            expected,
            site: host,
        })
    }

    /// A zeroed buffer of `n` bytes for a D2H result: the spare one handed back by the engine
    /// when it is large enough (its pages are in memory already), else a fresh one.
    fn d2h_buffer(&mut self, n: usize) -> Vec<u8> {
        let mut v = if self.spare_d2h.capacity() >= n {
            std::mem::take(&mut self.spare_d2h)
        } else {
            Vec::new()
        };
        v.clear();
        v.resize(n, 0);
        v
    }

    /// Keep `buf` for the next large D2H result (the largest one handed back).
    pub(super) fn keep_d2h_buffer(&mut self, buf: Vec<u8>) {
        if buf.capacity() >= SPARE_D2H_MIN && buf.capacity() > self.spare_d2h.capacity() {
            self.spare_d2h = buf;
        }
    }

    /// `hrrMemcpyResult`: the result of the async copy of event `copy`, compared once its
    /// stream is done.
    pub(super) fn copy_result(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyResult = ev.read()?;
        let Some((got, stream)) = self.pending_d2h.remove(&s.copy) else {
            return Ok(Outcome::Skipped(format!(
                "result of event #{}, which issued no copy here",
                s.copy
            )));
        };
        if let Some(stream) = stream {
            self.wait(
                stream,
                &format!("D2H copy (event #{}, result #{})", s.copy, ev.seq),
            )?;
        }
        self.mirror_d2h(s.dst, &got)?;
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
            site: s.dst,
        })
    }

    /// `cuStreamDestroy` of a stream async D2H copies whose results come later are on (a
    /// program's worker may destroy its stream while another thread's synchronisation records
    /// those results: simpleCallback): the copies are waited for now, while the stream lives,
    /// and their result events compare without waiting on it.
    pub(super) fn settle_pending_on(&mut self, ev: &Event) -> Result<()> {
        let recorded = ev.read::<hrr_calls::shapes::Stream>()?.stream;
        let Ok(stream) = self.handles.get(recorded) else {
            return Ok(());
        };
        let on: Vec<u64> = self
            .pending_d2h
            .iter()
            .filter(|(_, (_, s))| *s == Some(stream))
            .map(|(&seq, _)| seq)
            .collect();
        if on.is_empty() {
            return Ok(());
        }
        self.wait(
            stream,
            &format!("D2H copies on a stream destroyed (event #{})", ev.seq),
        )?;
        for seq in on {
            if let Some(p) = self.pending_d2h.get_mut(&seq) {
                p.1 = None;
            }
        }
        Ok(())
    }

    /// Copy `n` bytes from recorded `src` to recorded `dst`, both translated.
    fn d2d(&mut self, (dst, src): (u64, u64), n: usize, stream: H) -> Result<()> {
        let dst = self.mem.translate(dst);
        let src = self.mem.translate(src);
        cu!(self.api, cuMemcpyDtoDAsync_v2(dst, src, n, stream))?;
        Ok(())
    }

    /// `cuMemcpyHtoD*`.
    pub(super) fn copy_h2d(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: CopyH2d = ev.read()?;
        let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
            return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
        };
        let dst = self.mem.translate(s.dst);
        let stream = self.stream(ev, s.stream)?;
        self.h2d(dst, &data, stream, s.src)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpyDtoH*` (`later`: the async call, whose result may come in a result event).
    pub(super) fn copy_d2h(&mut self, ev: &Event, later: bool) -> Result<Outcome> {
        let s: CopyD2h = ev.read()?;
        let src = self.mem.translate(s.src);
        let stream = self.stream(ev, s.stream)?;
        let out = self.d2h(
            ev,
            (src, s.bytes as usize, s.dst),
            stream,
            s.d2h_blob,
            later,
        )?;
        if let Outcome::D2h { got, .. } = &out {
            self.mirror_d2h(s.dst, got)?;
        }
        Ok(out)
    }

    /// `cuMemcpyDtoD*`.
    pub(super) fn copy_d2d(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyD2d = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        self.d2d((s.dst, s.src), s.bytes as usize, stream)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpyPeer[Async]`: a device-to-device copy (unified addressing: the recorded
    /// contexts only said which device each side is on; replay put both where it placed them).
    pub(super) fn copy_peer(&mut self, ev: &Event, is_async: bool) -> Result<Outcome> {
        let (dst, src, bytes, stream) = match is_async {
            false => {
                let s: CopyPeer = ev.read()?;
                (s.dst, s.src, s.bytes, 0)
            }
            true => {
                let s: CopyPeerAsync = ev.read()?;
                (s.dst, s.src, s.bytes, s.stream)
            }
        };
        let stream = self.stream(ev, stream)?;
        self.d2d((dst, src), bytes as usize, stream)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpy*` (unified addressing): by the recorded direction (`later`: the async call).
    pub(super) fn copy_any(&mut self, ev: &Event, blobs: &Blobs, later: bool) -> Result<Outcome> {
        let s: CopyAny = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        let n = s.bytes as usize;
        match s.direction {
            direction::D2D => self.d2d((s.dst, s.src), n, stream)?,
            direction::H2D => {
                let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
                    return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
                };
                let dst = self.mem.translate(s.dst);
                self.h2d(dst, &data, stream, s.src)?;
            }
            direction::D2H => {
                let src = self.mem.translate(s.src);
                let out = self.d2h(ev, (src, n, s.dst), stream, s.d2h_blob, later)?;
                if let Outcome::D2h { got, .. } = &out {
                    self.mirror_d2h(s.dst, got)?;
                }
                return Ok(out);
            }
            _ => return Ok(Outcome::Skipped(H2H.into())),
        }
        Ok(Outcome::Done)
    }

    /// The 2D/3D and array copies (`CopyPitched`), re-issued through the recorded call's family
    /// (`cuMemcpy2DAsync_v2`, `cuMemcpy2DUnaligned_v2`, `cuMemcpy3DAsync_v2`, the array copies)
    /// with the host side packed.
    pub(super) fn copy_pitched(&mut self, ev: &Event, blobs: &Blobs, op: Op) -> Result<Outcome> {
        let s: CopyPitched = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        let (w, rows, depth) = (s.width_bytes, s.height.max(1), s.depth.max(1));
        let len = w
            .checked_mul(rows)
            .and_then(|n| n.checked_mul(depth))
            .and_then(|n| usize::try_from(n).ok())
            .context("copy extent overflows")?;
        let mut host = match s.direction {
            direction::H2D => match blobs(s.h2d_blob, Some(len as u64))? {
                Some(data) => data.into_vec(),
                None => return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into())),
            },
            direction::D2H => vec![0u8; len],
            direction::D2D => Vec::new(),
            _ => return Ok(Outcome::Skipped(H2H.into())),
        };
        let h = host.as_mut_ptr() as u64;
        let src_host = s.direction == direction::H2D;
        let dst_host = s.direction == direction::D2H;
        let src = self.side(&s, true, src_host.then_some(h))?;
        let dst = self.side(&s, false, dst_host.then_some(h))?;
        let (n, api) = (w as usize, &self.api);
        match op {
            Op::Memcpy2D | Op::Memcpy2DAsync | Op::Memcpy2DUnaligned => {
                let mut d = CudaMemcpy2D {
                    width_bytes: n,
                    height: s.height as usize,
                    ..Default::default()
                };
                set_sides!(d, src, dst);
                if op == Op::Memcpy2DUnaligned {
                    cu!(api, cuMemcpy2DUnaligned_v2(&d))?; // no async variant
                } else {
                    cu!(api, cuMemcpy2DAsync_v2(&d, stream))?;
                }
            }
            Op::Memcpy3D | Op::Memcpy3DAsync => {
                let mut d = CudaMemcpy3D {
                    src_z: src.z as usize,
                    src_lod: s.src_lod as usize,
                    src_height: src.height as usize,
                    dst_z: dst.z as usize,
                    dst_lod: s.dst_lod as usize,
                    dst_height: dst.height as usize,
                    width_bytes: n,
                    height: s.height as usize,
                    depth: s.depth as usize,
                    ..Default::default()
                };
                set_sides!(d, src, dst);
                cu!(api, cuMemcpy3DAsync_v2(&d, stream))?;
            }
            Op::MemcpyHtoA | Op::MemcpyHtoAAsync => {
                let (a, x) = (dst.array as H, dst.x as usize);
                cu!(
                    api,
                    cuMemcpyHtoAAsync_v2(a, x, h as *const c_void, n, stream)
                )?;
            }
            Op::MemcpyAtoH | Op::MemcpyAtoHAsync => {
                let (a, x) = (src.array as H, src.x as usize);
                cu!(api, cuMemcpyAtoHAsync_v2(h as *mut c_void, a, x, n, stream))?;
            }
            // The array-to-device, device-to-array and array-to-array copies have no async
            // variants.
            Op::MemcpyAtoD => {
                let (a, x) = (src.array as H, src.x as usize);
                cu!(api, cuMemcpyAtoD_v2(dst.device, a, x, n))?;
            }
            Op::MemcpyDtoA => {
                let (a, x) = (dst.array as H, dst.x as usize);
                cu!(api, cuMemcpyDtoA_v2(a, x, src.device, n))?;
            }
            Op::MemcpyAtoA => {
                let (d, dx) = (dst.array as H, dst.x as usize);
                cu!(
                    api,
                    cuMemcpyAtoA_v2(d, dx, src.array as H, src.x as usize, n)
                )?;
            }
            _ => bail!("{} is not a pitched copy", ev.name),
        }
        if s.direction == direction::H2D {
            if self.capturing(stream) {
                self.graph_host.push(host); // the graph reads it at every launch
            }
            return Ok(Outcome::Done);
        }
        if !dst_host {
            return Ok(Outcome::Done);
        }
        if self.capturing(stream) {
            self.graph_host.push(host);
            return Ok(Outcome::Skipped(CAPTURED_D2H.into()));
        }
        self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
        Ok(Outcome::D2h {
            got: host,
            expected: s.d2h_blob,
            site: 0,
        })
    }

    /// One side of a recorded pitched copy as replay issues it: the packed host buffer at
    /// `host` (pitch `width_bytes`, `height` rows a slice, no offsets), a remapped array or a
    /// translated device pointer (a unified pointer the capture found to be device memory
    /// becomes a device pointer).
    fn side(&self, s: &CopyPitched, src: bool, host: Option<u64>) -> Result<Side> {
        if let Some(p) = host {
            return Ok(Side {
                ty: CU_MEMORYTYPE_HOST,
                host: p,
                pitch: s.width_bytes,
                height: s.height.max(1),
                ..Side::default()
            });
        }
        let (ty, device, array) = if src {
            (s.src_type, s.src_device, s.src_array)
        } else {
            (s.dst_type, s.dst_device, s.dst_array)
        };
        let (x, y, z, pitch, height) = if src {
            (s.src_x, s.src_y, s.src_z, s.src_pitch, s.src_height)
        } else {
            (s.dst_x, s.dst_y, s.dst_z, s.dst_pitch, s.dst_height)
        };
        let mut side = Side {
            ty: CU_MEMORYTYPE_DEVICE,
            x,
            y,
            z,
            pitch,
            height,
            ..Side::default()
        };
        if ty == CU_MEMORYTYPE_ARRAY {
            side.ty = CU_MEMORYTYPE_ARRAY;
            side.array = self.handles.get(array)? as u64;
        } else {
            side.device = self.mem.translate(device);
        }
        Ok(side)
    }
}

/// Set the source and destination fields of a `CUDA_MEMCPY2D` or `CUDA_MEMCPY3D` `$d` that
/// both structs have (x, y, memory type, host, device, array, pitch) from [`Side`]s `$src` and
/// `$dst`.
macro_rules! set_sides {
    ($d:ident, $src:expr, $dst:expr) => {
        set_sides!(@side $d, $src, src_x src_y src_type src_host src_device src_array src_pitch);
        set_sides!(@side $d, $dst, dst_x dst_y dst_type dst_host dst_device dst_array dst_pitch);
    };
    (@side $d:ident, $s:expr, $x:ident $y:ident $ty:ident $host:ident $device:ident $array:ident $pitch:ident) => {
        $d.$x = $s.x as usize;
        $d.$y = $s.y as usize;
        $d.$ty = $s.ty;
        $d.$host = $s.host;
        $d.$device = $s.device;
        $d.$array = $s.array;
        $d.$pitch = $s.pitch as usize;
    };
}
use set_sides;

/// One side of a pitched copy as issued.
#[derive(Default)]
struct Side {
    ty: u32,
    host: u64,
    device: u64,
    array: u64,
    x: u64,
    y: u64,
    z: u64,
    pitch: u64,
    height: u64,
}
