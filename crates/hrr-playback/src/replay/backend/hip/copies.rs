//! HIP copies (the `CopyH2d`, `CopyD2h`, `CopyD2d` and `CopyKind` rows, the symbol copies,
//! `CopyToSymbol` and `CopyFromSymbol`, and `hipMemcpy2D*`'s and `hipMemcpy3D*`'s `CopyPitched`; memsets are
//! `backend::memory_calls`'): host-to-device sources come from their recorded blobs, device
//! pointers are translated, device-to-host results are handed to the engine's checks
//! ([`Outcome::D2h`]); copies to and from symbols go to the variable of the recorded code
//! object. A copy with a host side waits (the host buffer is this replay's). An async D2H copy
//! recorded without its bytes keeps what it read for its `hrrHipMemcpyResult` event, which
//! compares them (FORMAT.md §3).

use anyhow::{bail, Result};
use hrr_archive::ObjectId;
use hrr_calls::cuda::ffi::CU_MEMORYTYPE_ARRAY;
use hrr_calls::shapes::{
    direction, CopyD2d, CopyD2h, CopyFromSymbol, CopyH2d, CopyKind, CopyPitched, CopyResult,
    CopyToSymbol,
};

use super::runtime::{hip, kind, H};
use super::Hip;
use crate::replay::backend::shared::{H2D_NOT_RECORDED, H2H};
use crate::replay::backend::{Blobs, Event, Outcome};

/// Why a copy between host memory and a capturing stream is not reissued: the graph would
/// read or write a buffer of this replay at each launch, which HIP replay does not keep yet.
const CAPTURED_HOST_COPY: &str =
    "copy between host memory and a capturing stream: not replayed in HIP graphs yet";

impl Hip {
    /// `hipMemset2D`, `hipMemset2DAsync`: bytes (the only width HIP's 2D memset has), at the
    /// translated address, on the stream replay made for the recorded one.
    pub(super) fn memset_2d(&mut self, ev: &Event) -> Result<Outcome> {
        let s: hrr_calls::shapes::Memset2d = ev.read()?;
        if s.element_bytes != 1 {
            bail!(
                "a 2D memset of {}-byte elements: HIP's are of bytes",
                s.element_bytes
            );
        }
        let stream = self.stream(s.stream)?;
        let dst = self.mem.translate(s.dst);
        let (pitch, w, h) = (s.pitch as usize, s.width as usize, s.height as usize);
        hip!(
            self.api,
            hipMemset2DAsync(dst, pitch, s.value as i32, w, h, stream)
        )?;
        Ok(Outcome::Done)
    }

    fn copy(&mut self, dst: u64, src: u64, n: usize, k: i32, stream: H, what: &str) -> Result<()> {
        hip!(self.api, hipMemcpyAsync(dst, src, n, k, stream))?;
        if k != kind::D2D {
            // The host side is a buffer of this replay: wait until the copy is done with it.
            self.wait(stream, what)?;
        }
        Ok(())
    }

    /// `len` bytes at recorded device address `addr`, read once the device is idle (the null
    /// stream does not wait for non-blocking streams), on the null stream (the snapshots of
    /// `--extract`).
    pub(super) fn read_recorded(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.device_synchronize()?;
        let mut got = vec![0u8; len];
        let src = self.mem.translate(addr);
        let what = format!("snapshot read of 0x{addr:x} (+{len} bytes)");
        self.copy(
            got.as_mut_ptr() as u64,
            src,
            len,
            kind::D2H,
            std::ptr::null_mut(),
            &what,
        )?;
        Ok(got)
    }

    /// Copy `data` to `dst` on recorded stream `stream`.
    fn h2d(&mut self, ev: &Event, dst: u64, data: &[u8], stream: u64) -> Result<Outcome> {
        let stream = self.stream(stream)?;
        if self.is_capturing(stream) {
            return Ok(Outcome::Skipped(CAPTURED_HOST_COPY.into()));
        }
        let what = format!("H2D copy (event #{})", ev.seq);
        let (src, n) = (data.as_ptr() as u64, data.len());
        self.copy(dst, src, n, kind::H2D, stream, &what)?;
        Ok(Outcome::Done)
    }

    /// Read `n` bytes at `src` on recorded stream `stream`; `expected`: the recorded result. An
    /// async copy (`later`) with no recorded result keeps its bytes for its result event.
    fn d2h(
        &mut self,
        ev: &Event,
        (src, n): (u64, usize),
        stream: u64,
        expected: Option<ObjectId>,
        later: bool,
    ) -> Result<Outcome> {
        let stream = self.stream(stream)?;
        if self.is_capturing(stream) {
            return Ok(Outcome::Skipped(CAPTURED_HOST_COPY.into()));
        }
        let mut got = vec![0u8; n];
        let what = format!("D2H copy (event #{})", ev.seq);
        self.copy(got.as_mut_ptr() as u64, src, n, kind::D2H, stream, &what)?;
        if later && expected.is_none() {
            self.pending_d2h.insert(ev.seq, got);
            return Ok(Outcome::Done);
        }
        Ok(Outcome::D2h {
            got,
            expected,
            site: 0,
        })
    }

    /// `hrrHipMemcpyResult`: the result of the async copy of event `copy`, compared now.
    pub(super) fn copy_result(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyResult = ev.read()?;
        let Some(got) = self.pending_d2h.remove(&s.copy) else {
            return Ok(Outcome::Skipped(format!(
                "result of event #{}, which issued no copy here",
                s.copy
            )));
        };
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
            site: 0,
        })
    }

    /// `hipMemcpyHtoD*`.
    pub(super) fn copy_h2d(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: CopyH2d = ev.read()?;
        let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
            return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
        };
        let dst = self.mem.translate(s.dst);
        self.h2d(ev, dst, &data, s.stream)
    }

    /// `hipMemcpyDtoH*` (`later`: the async call, whose result may come in a result event).
    pub(super) fn copy_d2h(&mut self, ev: &Event, later: bool) -> Result<Outcome> {
        let s: CopyD2h = ev.read()?;
        let src = self.mem.translate(s.src);
        self.d2h(ev, (src, s.bytes as usize), s.stream, s.d2h_blob, later)
    }

    /// `hipMemcpyDtoD*`.
    pub(super) fn copy_d2d(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyD2d = ev.read()?;
        let stream = self.stream(s.stream)?;
        let dst = self.mem.translate(s.dst);
        let src = self.mem.translate(s.src);
        self.copy(dst, src, s.bytes as usize, kind::D2D, stream, "")?;
        Ok(Outcome::Done)
    }

    /// `hipMemcpy*` (`CopyKind`, unified addressing): by the recorded direction (`later`:
    /// `hipMemcpyAsync`).
    pub(super) fn copy_any(&mut self, ev: &Event, blobs: &Blobs, later: bool) -> Result<Outcome> {
        let s: CopyKind = ev.read()?;
        let n = s.bytes as usize;
        let dst = self.mem.translate(s.dst);
        let src = self.mem.translate(s.src);
        match s.direction {
            direction::D2D => {
                let stream = self.stream(s.stream)?;
                self.copy(dst, src, n, kind::D2D, stream, "")?;
            }
            direction::H2D => {
                let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
                    return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
                };
                return self.h2d(ev, dst, &data, s.stream);
            }
            direction::D2H => return self.d2h(ev, (src, n), s.stream, s.d2h_blob, later),
            _ => return Ok(Outcome::Skipped(H2H.into())),
        }
        Ok(Outcome::Done)
    }

    /// `hipMemcpy2D*` and `hipMemcpy3D*`: rows of `width_bytes` between pitched linear memory,
    /// a slice at a time with `hipMemcpy2DAsync`; a host side is this replay's packed buffer
    /// (the recorded source, or the result to check), its pitch the row width, its slices one
    /// after the other.
    pub(super) fn copy_pitched(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: CopyPitched = ev.read()?;
        let (width, height) = (s.width_bytes as usize, s.height.max(1) as usize);
        let depth = s.depth.max(1) as usize;
        let Some(n) = width.checked_mul(height).and_then(|n| n.checked_mul(depth)) else {
            bail!("a pitched copy of {width} x {height} x {depth} bytes");
        };
        if s.src_type == CU_MEMORYTYPE_ARRAY || s.dst_type == CU_MEMORYTYPE_ARRAY {
            return Ok(Outcome::Skipped(
                "copy to or from a HIP array: arrays are not recorded".into(),
            ));
        }
        let stream = self.stream(s.stream)?;
        if s.direction != direction::D2D && self.is_capturing(stream) {
            return Ok(Outcome::Skipped(CAPTURED_HOST_COPY.into()));
        }
        // Row `y` of slice `z` of a device side (wrapping: an archive's values are not
        // trusted; a wrong address fails the copy).
        let device_row = |base: u64, (x, y, z): (u64, u64, u64), (pitch, rows): (u64, u64)| {
            let row = z.wrapping_mul(rows).wrapping_add(y);
            base.wrapping_add(row.wrapping_mul(pitch)).wrapping_add(x)
        };
        let (dpitch, spitch) = (s.dst_pitch as usize, s.src_pitch as usize);
        let source;
        let mut got = Vec::new();
        // the host side's packed buffer and the kind
        let (host, k) = match s.direction {
            direction::H2D => {
                let Some(data) = blobs(s.h2d_blob, Some(n as u64))? else {
                    return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
                };
                source = data;
                (source.as_ptr() as u64, kind::H2D)
            }
            direction::D2H => {
                got = vec![0u8; n];
                (got.as_mut_ptr() as u64, kind::D2H)
            }
            direction::D2D => (0, kind::D2D),
            _ => return Ok(Outcome::Skipped(H2H.into())),
        };
        let slice = (width * height) as u64;
        for z in 0..depth as u64 {
            let dst_dev = device_row(
                s.dst_device,
                (s.dst_x, s.dst_y, s.dst_z.wrapping_add(z)),
                (s.dst_pitch, s.dst_height),
            );
            let src_dev = device_row(
                s.src_device,
                (s.src_x, s.src_y, s.src_z.wrapping_add(z)),
                (s.src_pitch, s.src_height),
            );
            let packed = host + z * slice;
            let ((d, dp), (s_, sp)) = match k {
                kind::H2D => ((self.mem.translate(dst_dev), dpitch), (packed, width)),
                kind::D2H => ((packed, width), (self.mem.translate(src_dev), spitch)),
                _ => (
                    (self.mem.translate(dst_dev), dpitch),
                    (self.mem.translate(src_dev), spitch),
                ),
            };
            hip!(
                self.api,
                hipMemcpy2DAsync(d, dp, s_, sp, width, height, k, stream)
            )?;
        }
        if k == kind::D2D {
            return Ok(Outcome::Done);
        }
        // the host side is this replay's buffer: wait until the copy is done with it
        self.wait(stream, &format!("pitched copy (event #{})", ev.seq))?;
        Ok(match k {
            kind::D2H => Outcome::D2h {
                got,
                expected: s.d2h_blob,
                site: 0,
            },
            _ => Outcome::Done,
        })
    }

    /// `hipMemcpyToSymbol*`: into the variable of the recorded code object.
    pub(super) fn copy_to_symbol(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: CopyToSymbol = ev.read()?;
        let (addr, size) = self.global(s.code, &s.name)?;
        let (off, n) = (s.offset, s.bytes);
        if off + n > size {
            bail!("copy of {n} bytes at offset {off} into a {size}-byte variable");
        }
        if s.direction == direction::D2D {
            let stream = self.stream(s.stream)?;
            let src = self.mem.translate(s.src);
            self.copy(addr + off, src, n as usize, kind::D2D, stream, "")?;
        } else {
            let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
                return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
            };
            return self.h2d(ev, addr + off, &data, s.stream);
        }
        Ok(Outcome::Done)
    }

    /// `hipMemcpyFromSymbol*`: out of the variable of the recorded code object.
    pub(super) fn copy_from_symbol(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyFromSymbol = ev.read()?;
        let (addr, _) = self.global(s.code, &s.name)?;
        let (off, n) = (s.offset, s.bytes as usize);
        if s.direction == direction::D2D {
            let stream = self.stream(s.stream)?;
            let dst = self.mem.translate(s.dst);
            self.copy(dst, addr + off, n, kind::D2D, stream, "")?;
            Ok(Outcome::Done)
        } else {
            self.d2h(ev, (addr + off, n), s.stream, s.d2h_blob, false)
        }
    }
}
