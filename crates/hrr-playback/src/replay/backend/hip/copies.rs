//! HIP copies and memsets: host-to-device sources come from their recorded blobs, device
//! pointers are translated, device-to-host results are handed to the engine's checks
//! ([`Outcome::D2h`]); copies to and from symbols go to the variable of the recorded code
//! object. A copy with a host side waits (the host buffer is this replay's).

use anyhow::{bail, Result};

use super::runtime::{hip, kind, H};
use super::Hip;
use crate::replay::backend::shared::{H2D_NOT_RECORDED, H2H};
use crate::replay::backend::{Blobs, Event, Outcome};
use crate::replay::fields::{name, object, text, u};

impl Hip {
    fn copy(&mut self, dst: u64, src: u64, n: usize, k: i32, stream: H, what: &str) -> Result<()> {
        hip!(self.api, hipMemcpyAsync(dst, src, n, k, stream))?;
        if k != kind::D2D {
            // The host side is a buffer of this replay: wait until the copy is done with it.
            self.wait(stream, what)?;
        }
        Ok(())
    }

    fn h2d(&mut self, ev: &Event, dst: u64, data: &[u8]) -> Result<()> {
        let stream = self.stream(ev)?;
        let what = format!("H2D copy (event #{})", ev.seq);
        let (src, n) = (data.as_ptr() as u64, data.len());
        self.copy(dst, src, n, kind::H2D, stream, &what)
    }

    fn d2h(&mut self, ev: &Event, src: u64, n: usize) -> Result<Outcome> {
        let stream = self.stream(ev)?;
        let mut got = vec![0u8; n];
        let what = format!("D2H copy (event #{})", ev.seq);
        self.copy(got.as_mut_ptr() as u64, src, n, kind::D2H, stream, &what)?;
        Ok(Outcome::D2h {
            got,
            expected: object(&ev.fields, name::D2H_BLOB),
        })
    }

    /// `hipMemcpyHtoD*`.
    pub(super) fn copy_h2d(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let Some(data) = blobs(object(&ev.fields, name::H2D_BLOB))? else {
            return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
        };
        let dst = self.mem.translate(u(&ev.fields, name::DST)?);
        self.h2d(ev, dst, &data)?;
        Ok(Outcome::Done)
    }

    /// `hipMemcpyDtoH*`.
    pub(super) fn copy_d2h(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let src = self.mem.translate(u(f, name::SRC)?);
        self.d2h(ev, src, u(f, name::BYTES)? as usize)
    }

    /// `hipMemcpyDtoD*`.
    pub(super) fn copy_d2d(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let stream = self.stream(ev)?;
        let dst = self.mem.translate(u(f, name::DST)?);
        let src = self.mem.translate(u(f, name::SRC)?);
        self.copy(dst, src, u(f, name::BYTES)? as usize, kind::D2D, stream, "")?;
        Ok(Outcome::Done)
    }

    /// `hipMemcpy*` (unified addressing): by the recorded direction.
    pub(super) fn copy_any(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let f = &ev.fields;
        let n = u(f, name::BYTES)? as usize;
        let dst = self.mem.translate(u(f, name::DST)?);
        let src = self.mem.translate(u(f, name::SRC)?);
        match u(f, name::DIRECTION)? as u8 {
            0 => {
                let stream = self.stream(ev)?;
                self.copy(dst, src, n, kind::D2D, stream, "")?;
            }
            1 => {
                let Some(data) = blobs(object(f, name::H2D_BLOB))? else {
                    return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
                };
                self.h2d(ev, dst, &data)?;
            }
            2 => return self.d2h(ev, src, n),
            _ => return Ok(Outcome::Skipped(H2H.into())),
        }
        Ok(Outcome::Done)
    }

    /// `hipMemcpyToSymbol*`: into the variable of the recorded code object.
    pub(super) fn copy_to_symbol(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let f = &ev.fields;
        let (addr, size) = self.global(object(f, name::CODE), &text(f, name::NAME))?;
        let (off, n) = (u(f, name::OFFSET)?, u(f, name::BYTES)?);
        if off + n > size {
            bail!("copy of {n} bytes at offset {off} into a {size}-byte variable");
        }
        if u(f, name::DIRECTION)? == 0 {
            let stream = self.stream(ev)?;
            let src = self.mem.translate(u(f, name::SRC)?);
            self.copy(addr + off, src, n as usize, kind::D2D, stream, "")?;
        } else {
            let Some(data) = blobs(object(f, name::H2D_BLOB))? else {
                return Ok(Outcome::Skipped(H2D_NOT_RECORDED.into()));
            };
            self.h2d(ev, addr + off, &data)?;
        }
        Ok(Outcome::Done)
    }

    /// `hipMemcpyFromSymbol*`: out of the variable of the recorded code object.
    pub(super) fn copy_from_symbol(&mut self, ev: &Event) -> Result<Outcome> {
        let f = &ev.fields;
        let (addr, _) = self.global(object(f, name::CODE), &text(f, name::NAME))?;
        let (off, n) = (u(f, name::OFFSET)?, u(f, name::BYTES)? as usize);
        if u(f, name::DIRECTION)? == 0 {
            let stream = self.stream(ev)?;
            let dst = self.mem.translate(u(f, name::DST)?);
            self.copy(dst, addr + off, n, kind::D2D, stream, "")?;
            Ok(Outcome::Done)
        } else {
            self.d2h(ev, addr + off, n)
        }
    }
}
