//! CUDA copies and memsets: host-to-device sources come from their recorded blobs, device
//! pointers are translated, and device-to-host results are handed to the engine's checks
//! ([`Outcome::D2h`]), except inside a stream capture, where the copy runs with the graph.

use std::ffi::c_void;

use anyhow::Result;

use super::driver::{cu, H};
use super::Cuda;
use crate::replay::backend::shared::{H2D_NOT_RECORDED, H2H};
use crate::replay::backend::{Blobs, Event, Outcome};
use crate::replay::fields::{name, object, u};

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

    fn d2h(&mut self, ev: &Event, src: u64, n: usize, stream: H) -> Result<Outcome> {
        let mut got = vec![0u8; n];
        cu!(
            self.api,
            cuMemcpyDtoHAsync_v2(got.as_mut_ptr() as *mut c_void, src, n, stream)
        )?;
        if self.capturing(stream) {
            self.graph_host.push(got);
            return Ok(Outcome::Skipped(CAPTURED_D2H.into()));
        }
        self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
        Ok(Outcome::D2h {
            got,
            expected: object(&ev.fields, name::D2H_BLOB),
        })
    }

    fn d2d(&mut self, ev: &Event, n: usize, stream: H) -> Result<()> {
        let f = &ev.fields;
        let dst = self.mem.translate(u(f, name::DST)?);
        let src = self.mem.translate(u(f, name::SRC)?);
        cu!(self.api, cuMemcpyDtoDAsync_v2(dst, src, n, stream))?;
        Ok(())
    }

    /// `cuMemcpyHtoD*`.
    pub(super) fn copy_h2d(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let f = &ev.fields;
        let Some(data) = blobs(object(f, name::H2D_BLOB))? else {
            return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
        };
        let dst = self.mem.translate(u(f, name::DST)?);
        let stream = self.stream(ev)?;
        self.h2d(dst, data, stream)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpyDtoH*`.
    pub(super) fn copy_d2h(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let src = self.mem.translate(u(f, name::SRC)?);
        let n = u(f, name::BYTES)? as usize;
        let stream = self.stream(ev)?;
        self.d2h(ev, src, n, stream)
    }

    /// `cuMemcpyDtoD*`.
    pub(super) fn copy_d2d(&mut self, ev: &Event) -> Result<Outcome> {
        let stream = self.stream(ev)?;
        let n = u(&ev.fields, name::BYTES)? as usize;
        self.d2d(ev, n, stream)?;
        Ok(Outcome::Done)
    }

    /// `cuMemcpy*` (unified addressing): by the recorded direction.
    pub(super) fn copy_any(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let f = &ev.fields;
        let stream = self.stream(ev)?;
        let n = u(f, name::BYTES)? as usize;
        match u(f, name::DIRECTION)? as u8 {
            0 => self.d2d(ev, n, stream)?,
            1 => {
                let Some(data) = blobs(object(f, name::H2D_BLOB))? else {
                    return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
                };
                let dst = self.mem.translate(u(f, name::DST)?);
                self.h2d(dst, data, stream)?;
            }
            2 => {
                let src = self.mem.translate(u(f, name::SRC)?);
                return self.d2h(ev, src, n, stream);
            }
            _ => return Ok(Outcome::Skipped(H2H.into())),
        }
        Ok(Outcome::Done)
    }
}
