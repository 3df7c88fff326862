//! HIP memory: the placement [`POLICY`] and allocation properties of the runtime, the `Vmm`
//! implementation of its table (the program's allocations and VMM calls are replayed by
//! `backend::memory_calls` through it), and the HIP-only calls: managed, pinned and registered
//! host memory (translated) and `hipMemCreate` with the properties this runtime accepts.
//!
//! Placement: the recorded device ranges are reserved with `hipMemAddressReserve` at their
//! addresses before any code loads; each allocation is then backed where it was
//! (`hipMemCreate` + `hipMemMap` + `hipMemSetAccess` over the runs of pages it needs, in the
//! runtime's granularity), so allocations that shared a page share it again. Where the runtime
//! lacks that family, refuses an address, or `--no-placement`, the allocation goes elsewhere and
//! 8-byte kernel arguments inside moved ranges are translated (pointers stored in device memory
//! cannot be). The allocation properties are built in the layout of the runtime found (it
//! changed in ROCm 6), checked with `hipMemGetAllocationGranularity`.

use anyhow::Result;
use hrr_calls::shapes::{HostPtr, HostRegister, MemCreate};

use super::runtime::{hip, HipApi};
use super::Hip;
use crate::replay::backend::shared::{impl_device_memory, impl_vmm, H};
use crate::replay::backend::{memory_calls, Blobs, Event, Outcome};
use crate::replay::placement::{Policy, Reserve};

/// `hipMemAllocationProp` for pinned memory on device `dev`, in the ROCm 6+ layout (CUDA's) or
/// the ROCm 5 one.
pub fn allocation_prop(dev: i32, rocm5: bool) -> [u8; 32] {
    let mut p = [0u8; 32];
    let one = 1i32.to_le_bytes();
    if rocm5 {
        // {u8 compressionType; hipMemLocation {type, id}; requestedHandleType; type; ...}
        p[4..8].copy_from_slice(&one);
        p[8..12].copy_from_slice(&dev.to_le_bytes());
        p[16..20].copy_from_slice(&one);
    } else {
        // {type; requestedHandleType; hipMemLocation {type, id}; void *win32; allocFlags}
        p[0..4].copy_from_slice(&one);
        p[8..12].copy_from_slice(&one);
        p[12..16].copy_from_slice(&dev.to_le_bytes());
    }
    p
}

/// How the HIP runtime is placed into: exact reservations, one physical allocation per run of
/// unmapped pages, a refused backing a fallback to translation, and a device-wide wait before
/// unmapping (work queued before the free may still use the memory; `hipFree` waits too).
pub const POLICY: Policy = Policy {
    reserve: Reserve::Exact,
    per_page: false,
    refuse_unbackable: true,
    sync_before_unmap: true,
};

impl_vmm!(HipApi, hip, reserve: hipMemAddressReserve, free_reservation: hipMemAddressFree,
    create: hipMemCreate, release: hipMemRelease, map: hipMemMap, unmap: hipMemUnmap,
    set_access: hipMemSetAccess, alloc: hipMalloc, free: hipFree,
    synchronize: hipDeviceSynchronize);

impl_device_memory!(HipApi, hip, managed: hipMallocManaged, host: hipHostMalloc,
    memset8: hipMemsetD8Async, memset16: hipMemsetD16Async, memset32: hipMemsetD32Async);

impl Hip {
    /// `hipHostRegister`: pinned memory standing in for the registered range, with its
    /// recorded contents.
    pub(super) fn host_register(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: HostRegister = ev.read()?;
        let (mut p, size) = (0u64, s.bytesize);
        hip!(self.api, hipHostMalloc(&mut p, size as usize, 0))?;
        if let Some(data) = blobs(s.contents, Some(s.bytesize))? {
            let n = data.len().min(size as usize);
            // SAFETY: p is a fresh host allocation of `size` bytes.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u8, n) };
        }
        self.mem.note_moved(s.host_ptr, size, p);
        Ok(Outcome::Done)
    }

    /// `hipHostFree` / `hipHostUnregister` of memory this replay allocated.
    pub(super) fn host_free(&mut self, ev: &Event) -> Result<Outcome> {
        let rec = ev.read::<HostPtr>()?.host_ptr;
        let now = self.mem.translate(rec);
        if now != rec {
            hip!(self.api, hipHostFree(now))?;
            self.mem.forget(rec);
        }
        Ok(Outcome::Done)
    }

    /// `hipMemCreate`: with the properties this runtime accepts.
    pub(super) fn vmm_create(&mut self, ev: &Event) -> Result<Outcome> {
        let s: MemCreate = ev.read()?;
        let prop = self
            .mem
            .prop()
            .unwrap_or_else(|| allocation_prop(self.dev, self.runtime_version < 60_000_000));
        memory_calls::create(&mut self.mem, &self.api, &s, &prop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_props_follow_each_layout() {
        let new = allocation_prop(3, false);
        assert_eq!(&new[0..4], &1i32.to_le_bytes()); // type pinned
        assert_eq!(&new[8..16], &[1, 0, 0, 0, 3, 0, 0, 0]); // location {device, 3}
        let old = allocation_prop(3, true);
        assert_eq!(&old[4..12], &[1, 0, 0, 0, 3, 0, 0, 0]); // location {device, 3}
        assert_eq!(&old[16..20], &1i32.to_le_bytes()); // type pinned
    }
}
