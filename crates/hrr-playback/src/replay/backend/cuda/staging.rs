//! Large host-to-device sources staged through a ring of pinned host buffers: the recorded
//! bytes (a blob the decoding thread mapped and read in, `replay::blob_bytes`) are copied into
//! the next free slot, on several threads when large, and the slot goes to the device by an
//! async copy, a DMA that overlaps the staging of the next one. A slot is reused once the event
//! recorded after its copy has completed. The driver's own path for pageable sources stages
//! through its buffers one piece at a time on the calling thread.
//!
//! Sources mapped before the clock (`blob_bytes::Preloaded`) are page-locked in place instead
//! (`cuMemHostRegister`, read-only): their uploads are one DMA from the mapping, no staging
//! copy ([`Cuda::pin_sources`]).
//!
//! The ring ([`SLOTS`] × [`SLOT_BYTES`] of pinned memory) is made at the first large upload;
//! if the driver refuses it, uploads keep the pageable path. Like any memory of replay's own,
//! it may take an address a later recorded pinned allocation had: that one is then placed
//! elsewhere and translated (`hostmem.rs`).

use std::ffi::c_void;

use anyhow::Result;

use super::driver::{cu, H};
use super::Cuda;

/// Sources this large or larger are staged.
pub(super) const STAGE_MIN: usize = 1 << 20;
/// Bytes a slot holds (larger sources go in slot-sized pieces).
const SLOT_BYTES: usize = 64 << 20;
/// Slots in the ring.
const SLOTS: usize = 4;
/// Pieces this large or larger are copied into their slot on several threads.
const PARALLEL_MIN: usize = 8 << 20;
/// Threads a staging copy uses at most.
const COPY_THREADS: usize = 4;

pub(super) struct Slot {
    buf: *mut u8,
    /// Recorded after the slot's last copy: the slot is free once it completed.
    done: H,
}

/// The ring, or why there is none.
#[derive(Default)]
pub(super) enum Ring {
    #[default]
    Unmade,
    Made {
        slots: Vec<Slot>,
        next: usize,
    },
    Refused,
}

/// Copy `src` to `dst` (which has room for it) on up to [`COPY_THREADS`] threads.
fn copy_into(dst: *mut u8, src: &[u8]) {
    let threads = if src.len() < PARALLEL_MIN {
        1
    } else {
        let cores = hrr_archive::cores();
        (cores / 2).clamp(1, COPY_THREADS)
    };
    let piece = src.len().div_ceil(threads);
    let to = dst as usize;
    std::thread::scope(|s| {
        for (i, part) in src.chunks(piece).enumerate() {
            // SAFETY: `dst` has room for `src.len()` bytes and does not overlap it; the parts
            // are disjoint.
            let copy = move || unsafe {
                std::ptr::copy_nonoverlapping(
                    part.as_ptr(),
                    (to + i * piece) as *mut u8,
                    part.len(),
                )
            };
            if threads == 1 || std::thread::Builder::new().spawn_scoped(s, copy).is_err() {
                copy();
            }
        }
    });
}

/// `CU_MEMHOSTREGISTER_READ_ONLY`: the device only reads the registered memory (a read-only
/// mapping of the archive's file).
const REGISTER_READ_ONLY: u32 = 0x08;

impl Cuda {
    /// Page-lock the preloaded sources (each that the driver accepts); `true` when any is.
    pub(super) fn pin_sources(&mut self, sources: &[&[u8]]) -> bool {
        let register = |p: *mut c_void, n: usize| -> Result<()> {
            Ok(cu!(
                self.api,
                cuMemHostRegister_v2(p, n, REGISTER_READ_ONLY)
            )?)
        };
        let mut pinned: Vec<(u64, u64)> = sources
            .iter()
            .filter(|src| register(src.as_ptr() as *mut c_void, src.len()).is_ok())
            .map(|src| (src.as_ptr() as u64, src.len() as u64))
            .collect();
        pinned.sort_unstable();
        self.pinned_sources = pinned;
        !self.pinned_sources.is_empty()
    }

    /// Does `data` lie in a page-locked source?
    fn in_pinned_source(&self, data: &[u8]) -> bool {
        let (at, len) = (data.as_ptr() as u64, data.len() as u64);
        let i = self
            .pinned_sources
            .partition_point(|&(start, _)| start <= at);
        i > 0 && {
            let (start, n) = self.pinned_sources[i - 1];
            at + len <= start + n
        }
    }

    /// Copy `data` to `dst` on `stream` straight from a page-locked source, async; `false`
    /// (nothing issued) when it is not in one.
    pub(super) fn h2d_pinned(&mut self, dst: u64, data: &[u8], stream: H) -> Result<bool> {
        if !self.in_pinned_source(data) {
            return Ok(false);
        }
        cu!(
            self.api,
            cuMemcpyHtoDAsync_v2(dst, data.as_ptr() as *const c_void, data.len(), stream)
        )?;
        Ok(true)
    }

    /// Unregister the page-locked sources (after the final synchronisation).
    pub(super) fn unpin_sources(&mut self) -> Result<()> {
        for (p, _) in std::mem::take(&mut self.pinned_sources) {
            cu!(self.api, cuMemHostUnregister(p as *mut c_void))?;
        }
        Ok(())
    }

    /// Make the ring (once); `false` when the driver refused its memory or events.
    fn ring_ready(&mut self) -> Result<bool> {
        if let Ring::Unmade = self.ring {
            let mut slots = Vec::with_capacity(SLOTS);
            for _ in 0..SLOTS {
                let mut buf: *mut c_void = std::ptr::null_mut();
                let mut done: H = std::ptr::null_mut();
                // CU_EVENT_DISABLE_TIMING: only completion is asked.
                let made = cu!(self.api, cuMemHostAlloc(&mut buf, SLOT_BYTES, 0)).is_ok()
                    && cu!(self.api, cuEventCreate(&mut done, 2)).is_ok();
                if !made {
                    if !buf.is_null() {
                        let _ = cu!(self.api, cuMemFreeHost(buf));
                    }
                    break;
                }
                slots.push(Slot {
                    buf: buf as *mut u8,
                    done,
                });
            }
            self.ring = if slots.len() == SLOTS {
                Ring::Made { slots, next: 0 }
            } else {
                self.release_slots(slots)?;
                Ring::Refused
            };
        }
        Ok(matches!(self.ring, Ring::Made { .. }))
    }

    /// Give the slots' memory and events back (failures ignored: nothing depends on them).
    fn release_slots(&self, slots: Vec<Slot>) -> Result<()> {
        for s in slots {
            let _ = cu!(self.api, cuEventDestroy_v2(s.done));
            let _ = cu!(self.api, cuMemFreeHost(s.buf as *mut c_void));
        }
        Ok(())
    }

    /// Copy `data` to `dst` on `stream` through the ring, async; `false` (nothing issued) when
    /// there is no ring (nor on several devices: its events belong to the first device's
    /// context).
    pub(super) fn h2d_staged(&mut self, dst: u64, data: &[u8], stream: H) -> Result<bool> {
        if self.several_devices() || !self.ring_ready()? {
            return Ok(false);
        }
        for (i, piece) in data.chunks(SLOT_BYTES).enumerate() {
            let Ring::Made { slots, next } = &mut self.ring else {
                unreachable!("the ring was made above");
            };
            let slot = &slots[*next];
            *next = (*next + 1) % SLOTS;
            let (buf, done) = (slot.buf, slot.done);
            // (an event never recorded counts as complete)
            cu!(self.api, cuEventSynchronize(done))?;
            copy_into(buf, piece);
            let at = dst + (i * SLOT_BYTES) as u64;
            cu!(
                self.api,
                cuMemcpyHtoDAsync_v2(at, buf as *const c_void, piece.len(), stream)
            )?;
            cu!(self.api, cuEventRecord(done, stream))?;
        }
        Ok(true)
    }

    /// Free the ring (after the final synchronisation).
    pub(super) fn free_ring(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.ring, Ring::Refused) {
            Ring::Made { slots, .. } => self.release_slots(slots),
            _ => Ok(()),
        }
    }
}
