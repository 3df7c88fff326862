//! CUDA memory: the placement [`POLICY`] and allocation properties of the driver, the `Vmm`
//! implementation of its table (the program's allocations and VMM calls are replayed by
//! `backend::memory_calls` through it), and the CUDA-only calls: managed and host allocations
//! (translated) and `cuMemCreate` with the recorded properties.

use anyhow::Result;
use hrr_calls::shapes::{MemCreate, Memset2d};

use super::driver::{cu, Api};
use super::Cuda;
use crate::replay::backend::shared::{impl_device_memory, impl_vmm, H};
use crate::replay::backend::{memory_calls, Event, Outcome};
use crate::replay::placement::{Policy, Reserve};

/// Offset of `location` in `CUmemAllocationProp` and in `CUmemPoolProps`.
pub(super) const PROP_LOCATION: usize = 8;

/// `CUmemAllocationProp` for pinned device memory on `dev` (32 bytes).
pub fn device_prop(dev: i32) -> [u8; 32] {
    let mut p = [0u8; 32];
    p[0..4].copy_from_slice(&1i32.to_le_bytes()); // CU_MEM_ALLOCATION_TYPE_PINNED
    p[8..12].copy_from_slice(&1i32.to_le_bytes()); // CU_MEM_LOCATION_TYPE_DEVICE
    p[12..16].copy_from_slice(&dev.to_le_bytes());
    p
}

/// Recorded ranges are reserved in whole chunks of this size. Measured on the H200 (driver 580):
/// the driver ignores the address hint of small reservations (2 MiB ones come from its own pool)
/// and honours it for large, aligned ones; it was also seen to shift a hint by one chunk, which
/// the back-off of [`Reserve::Covering`] absorbs. Holding the ranges with host `mmap` before the
/// driver loads made the driver refuse them, so nothing is held.
pub const RESERVE_CHUNK: u64 = 32 << 20;

/// How the CUDA driver is placed into: covering chunked reservations kept for the whole run,
/// one physical allocation per granularity page, a failure to back a page an error, and a wait
/// for the device before a page is unmapped: `cuMemFree` waits for queued work, `cuMemUnmap`
/// does not (cdpBezierTessellation frees an array a kernel still reads, right after
/// launching it, and replay faulted there).
pub const POLICY: Policy = Policy {
    reserve: Reserve::Covering {
        chunk: RESERVE_CHUNK,
    },
    per_page: true,
    refuse_unbackable: false,
    sync_before_unmap: true,
};

impl_vmm!(Api, cu, reserve: cuMemAddressReserve, free_reservation: cuMemAddressFree,
    create: cuMemCreate, release: cuMemRelease, map: cuMemMap, unmap: cuMemUnmap,
    set_access: cuMemSetAccess, alloc: cuMemAlloc_v2, free: cuMemFree_v2,
    synchronize: cuCtxSynchronize);

impl_device_memory!(Api, cu, managed: cuMemAllocManaged, host: cuMemHostAlloc,
    memset8: cuMemsetD8Async, memset16: cuMemsetD16Async, memset32: cuMemsetD32Async);

impl Cuda {
    /// `cuMemsetD2D8/16/32`, async or not: the async call of the recorded element width at
    /// the translated address, on the stream replay made for the recorded one (as 1D memsets).
    pub(super) fn memset_2d(&mut self, ev: &Event) -> Result<Outcome> {
        let s: Memset2d = ev.read()?;
        let stream = self.stream(ev, s.stream)?;
        let dst = self.mem.translate(s.dst);
        let (pitch, v, w, h) = (
            s.pitch as usize,
            s.value,
            s.width as usize,
            s.height as usize,
        );
        match s.element_bytes {
            1 => cu!(
                self.api,
                cuMemsetD2D8Async(dst, pitch, v as u8, w, h, stream)
            )?,
            2 => cu!(
                self.api,
                cuMemsetD2D16Async(dst, pitch, v as u16, w, h, stream)
            )?,
            _ => cu!(self.api, cuMemsetD2D32Async(dst, pitch, v, w, h, stream))?,
        }
        Ok(Outcome::Done)
    }

    /// `cuMemCreate`: with the recorded properties, on the live device of the recorded one.
    pub(super) fn vmm_create(&mut self, ev: &Event) -> Result<Outcome> {
        let s: MemCreate = ev.read()?;
        let mut prop = s.prop.clone();
        if let Some(location) = prop.get_mut(PROP_LOCATION..) {
            self.map_location(location);
        }
        memory_calls::create(&mut self.mem, &self.api, &s, &prop)
    }
}
