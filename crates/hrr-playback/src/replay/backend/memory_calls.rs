//! The program's memory calls that CUDA and HIP replay alike, generic over the `Vmm` trait:
//! device allocations and frees (placed by `crate::replay::placement`), and the program's own
//! VMM calls (reserve, free a reservation, create, release, map, unmap, set access), managed
//! and pinned host memory (translated) and memsets (`DeviceMemory`). Each backend's dispatch
//! calls these with its entry-point table; API-specific memory calls stay in the backend's
//! `memory.rs`. Stream-ordered frees are [`Deferred`]: released once the work queued before
//! them completed, never under a kernel that still uses the memory.

use anyhow::Result;
use hrr_calls::shapes::{
    AddressReserve, DevicePtr, HostAlloc, HostAllocPlain, MallocPitch, MemAlloc, MemAllocFlags,
    MemCreate, MemFreeAsync, MemHandle, MemMap, MemSetAccess, Memset, Range,
};

use super::shared::{Streams, H};
use super::{Event, Extent, Outcome};
use crate::replay::placement::{DeviceMemory, Placement, Vmm};

/// An allocation (`cuMemAlloc*`, `hipMalloc*`): placed at the recorded address, or translated.
/// Its range is read through the shape of its [`Extent`].
pub fn alloc(mem: &mut Placement, vmm: &impl Vmm, ev: &Event, extent: Extent) -> Result<Outcome> {
    let (addr, size) = allocated(ev, extent)?;
    mem.alloc(vmm, addr, size)?;
    Ok(Outcome::Done)
}

/// The recorded address and length of allocation event `ev` (a byte or pitched allocation).
pub fn allocated(ev: &Event, extent: Extent) -> Result<(u64, u64)> {
    Ok(match extent {
        Extent::Pitched => {
            let s: MallocPitch = ev.read()?;
            (s.dptr, s.pitch * s.height)
        }
        _ => {
            let s: MemAlloc = ev.read()?;
            (s.dptr, s.bytesize)
        }
    })
}

/// A free of an allocation (`DevicePtr`, or the `dptr` of `MemFreeAsync`).
pub fn free(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    mem.free(vmm, ev.read::<DevicePtr>()?.dptr)?;
    Ok(Outcome::Done)
}

/// `CU_EVENT_DISABLE_TIMING` = `hipEventDisableTiming`.
const EVENT_DISABLE_TIMING: u32 = 2;

/// Stream-ordered frees not released yet: recorded address, length, and an event recorded on
/// the freeing stream after the work queued before the free. Replay releases one when its
/// event completed; an allocation that needs an overlapping recorded range first waits for it;
/// the end of replay releases the rest. (Releasing at once unmapped memory a queued kernel
/// still used, and mapped the next allocation at the same address under it.)
#[derive(Default)]
pub struct Deferred(Vec<(u64, u64, H)>);

impl Deferred {
    /// Release the frees whose event completed; those overlapping `need` (a recorded range
    /// about to be allocated) are waited for first; `all`: wait for every one.
    pub fn reap(
        &mut self,
        mem: &mut Placement,
        vmm: &impl Vmm,
        streams: &impl Streams,
        need: Option<(u64, u64)>,
        all: bool,
    ) -> Result<()> {
        let mut keep = Vec::new();
        for (addr, len, event) in std::mem::take(&mut self.0) {
            let overlaps = need.is_some_and(|(s, n)| addr < s + n.max(1) && s < addr + len);
            let done = if all || overlaps {
                streams.synchronize_event(event)??;
                true
            } else {
                streams.query_event(event)??
            };
            if done {
                streams.destroy_event(event)??;
                mem.free(vmm, addr)?;
            } else {
                keep.push((addr, len, event));
            }
        }
        self.0 = keep;
        Ok(())
    }

    /// Release every deferred free, waiting for each (the end of replay); `api` is both the
    /// table freeing and the one waiting.
    pub fn release_all<A: Vmm + Streams>(&mut self, mem: &mut Placement, api: &A) -> Result<()> {
        self.reap(mem, api, api, None, true)
    }
}

/// An allocation that first waits for deferred frees of its range (see [`Deferred`]).
pub fn alloc_after_frees(
    mem: &mut Placement,
    vmm: &impl Vmm,
    streams: &impl Streams,
    deferred: &mut Deferred,
    ev: &Event,
    extent: Extent,
) -> Result<Outcome> {
    let need = match extent {
        Extent::Pitched => ev
            .read::<MallocPitch>()
            .map(|s| (s.dptr, s.pitch * s.height)),
        _ => ev.read::<MemAlloc>().map(|s| (s.dptr, s.bytesize)),
    }?;
    deferred.reap(mem, vmm, streams, Some(need), false)?;
    alloc(mem, vmm, ev, extent)
}

/// A stream-ordered free (`MemFreeAsync`): deferred until the work queued on its stream
/// (`stream` resolves the recorded one) completed. On a capturing stream the free becomes a
/// graph node, run at each launch: the memory stays (graphs launched later use it).
pub fn free_async(
    mem: &mut Placement,
    vmm: &impl Vmm,
    streams: &impl Streams,
    deferred: &mut Deferred,
    ev: &Event,
    stream: impl FnOnce(u64) -> Result<(H, bool)>,
) -> Result<Outcome> {
    let s: MemFreeAsync = ev.read()?;
    let Some(len) = mem.live_len(s.dptr) else {
        return Ok(Outcome::Done);
    };
    let (st, capturing) = stream(s.stream)?;
    if capturing {
        return Ok(Outcome::Done);
    }
    let event = streams.create_event(EVENT_DISABLE_TIMING)??;
    streams.record_event(event, st)??;
    deferred.0.push((s.dptr, len, event));
    deferred.reap(mem, vmm, streams, None, false)?;
    Ok(Outcome::Done)
}

/// A reservation of the program: inside ours when placed, else made from `hint` (given the
/// recorded address) and translated.
pub fn address_reserve(
    mem: &mut Placement,
    vmm: &impl Vmm,
    ev: &Event,
    hint: impl FnOnce(u64) -> u64,
) -> Result<Outcome> {
    let s: AddressReserve = ev.read()?;
    let (rec, size) = (s.ptr, s.size);
    if mem.reservation_placed(vmm, rec, size)? {
        return Ok(Outcome::Done); // placed: inside a reservation of ours
    }
    mem.reserve_elsewhere(vmm, (rec, size), s.alignment, hint(rec))?;
    Ok(Outcome::Done)
}

/// A reservation freed by the program (ours stay).
pub fn address_free(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let s: Range = ev.read()?;
    mem.free_recorded_reservation(vmm, s.ptr, s.size)?;
    Ok(Outcome::Done)
}

/// Physical memory the program created (`s`, read by the backend, which chooses the
/// allocation properties `prop`).
pub fn create(mem: &mut Placement, vmm: &impl Vmm, s: &MemCreate, prop: &[u8]) -> Result<Outcome> {
    let h = mem.create_recorded(vmm, s.size, prop, s.flags)?;
    mem.adopt_handle(s.handle, h);
    Ok(Outcome::Done)
}

/// Physical memory the program released.
pub fn release(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    mem.release_recorded(vmm, ev.read::<MemHandle>()?.handle)?;
    Ok(Outcome::Done)
}

/// A mapping the program made (the call's name in errors).
pub fn map(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let s: MemMap = ev.read()?;
    mem.map_recorded(vmm, ev.name, s.handle, (s.ptr, s.size, s.offset))?;
    Ok(Outcome::Done)
}

/// A mapping the program removed.
pub fn unmap(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let s: Range = ev.read()?;
    mem.unmap_recorded(vmm, s.ptr, s.size)?;
    Ok(Outcome::Done)
}

/// Access the program granted: read/write for device 0.
pub fn set_access(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let s: MemSetAccess = ev.read()?;
    mem.set_access_recorded(vmm, s.count, s.ptr, s.size)?;
    Ok(Outcome::Done)
}

/// Managed memory the program allocated: anywhere, translated.
pub fn alloc_managed(mem: &mut Placement, api: &impl DeviceMemory, ev: &Event) -> Result<Outcome> {
    let s: MemAllocFlags = ev.read()?;
    let p = api.alloc_managed(s.bytesize, s.flags)??;
    mem.note_moved(s.dptr, s.bytesize, p);
    Ok(Outcome::Done)
}

/// A recorded pinned host allocation: with flags (`HostAlloc`, `flagged`), else without
/// (`HostAllocPlain`, read as flags 0).
pub fn read_host_alloc(ev: &Event, flagged: bool) -> Result<HostAlloc> {
    if flagged {
        return ev.read();
    }
    let s: HostAllocPlain = ev.read()?;
    Ok(HostAlloc {
        host_ptr: s.host_ptr,
        bytesize: s.bytesize,
        flags: 0,
    })
}

/// Pinned host memory the program allocated: anywhere, translated; `flagged` as for
/// [`read_host_alloc`].
pub fn alloc_host(
    mem: &mut Placement,
    api: &impl DeviceMemory,
    ev: &Event,
    flagged: bool,
) -> Result<Outcome> {
    let s = read_host_alloc(ev, flagged)?;
    let p = api.alloc_host(s.bytesize, s.flags)??;
    mem.note_moved(s.host_ptr, s.bytesize, p);
    Ok(Outcome::Done)
}

/// A memset, as the async call of the recorded element width on the stream `stream` resolves
/// from the recorded one.
pub fn memset(
    mem: &Placement,
    api: &impl DeviceMemory,
    ev: &Event,
    stream: impl FnOnce(u64) -> Result<H>,
) -> Result<Outcome> {
    let s: Memset = ev.read()?;
    let dst = mem.translate(s.dst);
    let st = stream(s.stream)?;
    api.memset(
        dst,
        s.value as u64,
        s.count as usize,
        s.element_bytes as u64,
        st,
    )??;
    Ok(Outcome::Done)
}
