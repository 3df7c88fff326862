//! CUDA copies (the `CopyH2d`, `CopyD2h`, `CopyD2d` and `CopyAny` rows; memsets are
//! `backend::memory_calls`'): host-to-device sources come from their recorded blobs, device
//! pointers are translated, and device-to-host results are handed to the engine's checks
//! ([`Outcome::D2h`]), except inside a stream capture, where the copy runs with the graph.
//!
//! An async D2H copy recorded without its bytes (capture records them in a later
//! `hrrMemcpyResult` event naming the copy's sequence number) is issued into its own buffer
//! without waiting; the `hrrMemcpyResult` event waits for its stream and compares. Older
//! archives, whose async copies hold their result (`d2h_blob`), are compared at the copy.

use std::ffi::c_void;

use anyhow::Result;
use hrr_archive::ObjectId;
use hrr_calls::shapes::{direction, CopyAny, CopyD2d, CopyD2h, CopyH2d, CopyResult};

use super::driver::{cu, H};
use super::Cuda;
use crate::replay::backend::shared::{H2D_NOT_RECORDED, H2H};
use crate::replay::backend::{Blobs, Event, Outcome};

/// Why a D2H copy issued inside a stream capture is not checked.
const CAPTURED_D2H: &str =
    "D2H copy inside stream capture: it runs with the graph, its result was not recorded";

impl Cuda {
    fn h2d(&mut self, dst: u64, data: Vec<u8>, stream: H) -> Result<()> {
        // From pageable memory the driver stages the source before returning: no wait.
        cu!(
            self.api,
            cuMemcpyHtoDAsync_v2(dst, data.as_ptr() as *const c_void, data.len(), stream)
        )?;
        if self.capturing(stream) {
            self.graph_host.push(data); // the graph reads it at every launch
        }
        Ok(())
    }

    /// Read `n` bytes at `src`; `expected`: the recorded result. An async copy (`later`) with
    /// no recorded result is left running: its result event compares it.
    fn d2h(
        &mut self,
        ev: &Event,
        (src, n): (u64, usize),
        stream: H,
        expected: Option<ObjectId>,
        later: bool,
    ) -> Result<Outcome> {
        let mut got = vec![0u8; n];
        cu!(
            self.api,
            cuMemcpyDtoHAsync_v2(got.as_mut_ptr() as *mut c_void, src, n, stream)
        )?;
        if self.capturing(stream) {
            self.graph_host.push(got);
            return Ok(Outcome::Skipped(CAPTURED_D2H.into()));
        }
        if later && expected.is_none() {
            // The heap buffer stays where the driver writes, wherever the Vec moves.
            self.pending_d2h.insert(ev.seq, (got, stream));
            return Ok(Outcome::Done);
        }
        self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
        Ok(Outcome::D2h { got, expected })
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
        self.wait(
            stream,
            &format!("D2H copy (event #{}, result #{})", s.copy, ev.seq),
        )?;
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
        })
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
        self.h2d(dst, data, stream)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpyDtoH*` (`later`: the async call, whose result may come in a result event).
    pub(super) fn copy_d2h(&mut self, ev: &Event, later: bool) -> Result<Outcome> {
        let s: CopyD2h = ev.read()?;
        let src = self.mem.translate(s.src);
        let stream = self.stream(ev, s.stream)?;
        self.d2h(ev, (src, s.bytes as usize), stream, s.d2h_blob, later)
    }

    /// `cuMemcpyDtoD*`.
    pub(super) fn copy_d2d(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CopyD2d = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        self.d2d((s.dst, s.src), s.bytes as usize, stream)?;
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
                self.h2d(dst, data, stream)?;
            }
            direction::D2H => {
                let src = self.mem.translate(s.src);
                return self.d2h(ev, (src, n), stream, s.d2h_blob, later);
            }
            _ => return Ok(Outcome::Skipped(H2H.into())),
        }
        Ok(Outcome::Done)
    }
}
