//! Large host-to-device sources staged through a ring of pinned host buffers: the recorded
//! bytes (a blob the decoding thread mapped and read in, `replay::blob_bytes`) are copied into
//! the next free slot, on several threads when large, and the slot goes to the device by an
//! async copy, a DMA that overlaps the staging of the next one. A slot is reused once the event
//! recorded after its copy has completed. The driver's own path for pageable sources stages
//! through its buffers one piece at a time on the calling thread.
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
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
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

impl Cuda {
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
    /// there is no ring.
    pub(super) fn h2d_staged(&mut self, dst: u64, data: &[u8], stream: H) -> Result<bool> {
        if !self.ring_ready()? {
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
