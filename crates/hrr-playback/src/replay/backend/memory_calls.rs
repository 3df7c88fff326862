//! The program's memory calls that CUDA and HIP replay alike, generic over the `Vmm` trait:
//! device allocations and frees (placed by `crate::replay::placement`), and the program's own
//! VMM calls (reserve, free a reservation, create, release, map, unmap, set access), managed
//! and pinned host memory (translated) and memsets (`DeviceMemory`). Each backend's dispatch
//! calls these with its entry-point table; API-specific memory calls stay in the backend's
//! `memory.rs`.

use anyhow::Result;

use super::shared::H;
use super::{Event, Extent, Outcome};
use crate::replay::fields::{name, u, vmm_range};
use crate::replay::placement::{DeviceMemory, Placement, Vmm};

/// An allocation (`cuMemAlloc*`, `hipMalloc*`): placed at the recorded address, or translated.
pub fn alloc(mem: &mut Placement, vmm: &impl Vmm, ev: &Event, extent: Extent) -> Result<Outcome> {
    let f = &ev.fields;
    let addr = u(f, name::DPTR)?;
    let size = match extent {
        Extent::Pitched => u(f, name::PITCH)? * u(f, name::HEIGHT)?,
        _ => u(f, name::BYTESIZE)?,
    };
    mem.alloc(vmm, addr, size)?;
    Ok(Outcome::Done)
}

/// A free of an allocation.
pub fn free(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    mem.free(vmm, u(&ev.fields, name::DPTR)?)?;
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
    let f = &ev.fields;
    let (rec, size) = vmm_range(f)?;
    if mem.reservation_placed(vmm, rec, size)? {
        return Ok(Outcome::Done); // placed: inside a reservation of ours
    }
    let align = u(f, name::ALIGNMENT)?;
    mem.reserve_elsewhere(vmm, (rec, size), align, hint(rec))?;
    Ok(Outcome::Done)
}

/// A reservation freed by the program (ours stay).
pub fn address_free(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let (rec, size) = vmm_range(&ev.fields)?;
    mem.free_recorded_reservation(vmm, rec, size)?;
    Ok(Outcome::Done)
}

/// Physical memory the program created, with allocation properties `prop`.
pub fn create(mem: &mut Placement, vmm: &impl Vmm, ev: &Event, prop: &[u8]) -> Result<Outcome> {
    let f = &ev.fields;
    let (size, flags) = (u(f, name::SIZE)?, u(f, name::FLAGS)?);
    let h = mem.create_recorded(vmm, size, prop, flags)?;
    mem.adopt_handle(u(f, name::HANDLE)?, h);
    Ok(Outcome::Done)
}

/// Physical memory the program released.
pub fn release(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    mem.release_recorded(vmm, u(&ev.fields, name::HANDLE)?)?;
    Ok(Outcome::Done)
}

/// A mapping the program made (the call's name in errors).
pub fn map(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let h = u(f, name::HANDLE)?;
    let range = (u(f, name::PTR)?, u(f, name::SIZE)?, u(f, name::OFFSET)?);
    mem.map_recorded(vmm, ev.name, h, range)?;
    Ok(Outcome::Done)
}

/// A mapping the program removed.
pub fn unmap(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let (ptr, size) = vmm_range(&ev.fields)?;
    mem.unmap_recorded(vmm, ptr, size)?;
    Ok(Outcome::Done)
}

/// Access the program granted: read/write for device 0.
pub fn set_access(mem: &mut Placement, vmm: &impl Vmm, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let (n, ptr, size) = (u(f, name::COUNT)?, u(f, name::PTR)?, u(f, name::SIZE)?);
    mem.set_access_recorded(vmm, n, ptr, size)?;
    Ok(Outcome::Done)
}

/// Managed memory the program allocated: anywhere, translated.
pub fn alloc_managed(mem: &mut Placement, api: &impl DeviceMemory, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let size = u(f, name::BYTESIZE)?;
    let p = api.alloc_managed(size, u(f, name::FLAGS)? as u32)??;
    mem.note_moved(u(f, name::DPTR)?, size, p);
    Ok(Outcome::Done)
}

/// Pinned host memory the program allocated: anywhere, translated.
pub fn alloc_host(mem: &mut Placement, api: &impl DeviceMemory, ev: &Event) -> Result<Outcome> {
    let f = &ev.fields;
    let size = u(f, name::BYTESIZE)?;
    let p = api.alloc_host(size, u(f, name::FLAGS).unwrap_or(0) as u32)??;
    mem.note_moved(u(f, name::HOST_PTR)?, size, p);
    Ok(Outcome::Done)
}

/// A memset, as the async call of the recorded element width on the stream `stream` resolves.
pub fn memset(
    mem: &Placement,
    api: &impl DeviceMemory,
    ev: &Event,
    stream: impl FnOnce() -> Result<H>,
) -> Result<Outcome> {
    let f = &ev.fields;
    let dst = mem.translate(u(f, name::DST)?);
    let (v, n) = (u(f, name::VALUE)?, u(f, name::COUNT)? as usize);
    let s = stream()?;
    api.memset(dst, v, n, u(f, name::ELEMENT_BYTES)?, s)??;
    Ok(Outcome::Done)
}
