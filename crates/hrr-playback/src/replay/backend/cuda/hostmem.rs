//! CUDA host-visible memory: pinned host memory (`cuMemHostAlloc`, `cuMemAllocHost`),
//! registrations (`cuMemHostRegister`) and managed memory, and the capture's pseudo-calls on
//! them (`hrrHostMemWrite`: bytes the host wrote, written again; `hrrHostMemCheck`: bytes the
//! host read after a synchronisation, compared like a D2H result).
//!
//! Pinned and registered memory is re-created at its recorded host address: an anonymous
//! `mmap` with `MAP_FIXED_NOREPLACE`, registered with `DEVICEMAP | PORTABLE`, kept only when
//! the driver's device pointer equals the host pointer (unified addressing, as in the capture),
//! so pointers to it anywhere (kernel arguments, structs in device memory) stay valid. The
//! addresses were held from before the driver loaded (`crate::replay::host_ranges`: the
//! memory goes into its held block); host memory the capture had among device memory, inside
//! what replay reserves for device memory, is backed there by the driver's host memory mapped
//! like device memory, and the host reaches it through copies. When the address is taken in
//! this process, the memory is allocated elsewhere and translated (kernel pointer arguments and
//! copies are translated; pointers stored in memory are not).
//!
//! Managed memory cannot be given an address (`cuMemAllocManaged` has no hint, and the
//! driver's managed ranges cannot be reserved ahead), so it is allocated anywhere and
//! translated (`backend::memory_calls::alloc_managed`); its pseudo-call bytes go to the
//! translated address.

use std::collections::BTreeMap;
use std::ffi::c_void;

use anyhow::{anyhow, bail, Result};
use hrr_calls::shapes::{
    HostDevicePointer, HostMemCheck, HostMemWrite, HostPtr, HostRegister, MemAllocFlags,
};

use super::driver::cu;
use super::Cuda;
use crate::replay::backend::{memory_calls, Blobs, Event, Outcome};

/// `CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP`.
const REGISTER_FLAGS: u32 = 1 | 2;
/// `CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP`.
const HOST_ALLOC_FLAGS: u32 = 1 | 2;
/// Linux `MAP_FIXED_NOREPLACE`.
const MAP_FIXED_NOREPLACE: i32 = 0x100000;
const PAGE: u64 = 4096;

/// How a host-visible region was re-created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Mapped and registered at its recorded address: `[start, start+len)` page-rounded.
    AtAddress { start: u64, len: u64 },
    /// At its recorded address inside a block held for it from the start
    /// (`crate::replay::host_ranges`), registered with the block, which stays until the end.
    InBlock,
    /// At its recorded address inside what replay reserved for device memory (the driver had
    /// put the two side by side): the driver's host memory mapped there like device memory
    /// (`Placement::map_host`), which the host reaches only through copies; kept until the end.
    InReservation,
    /// Pinned elsewhere (`cuMemHostAlloc`), translated.
    Elsewhere,
    /// Managed memory, translated.
    Managed,
}

/// A host-visible region of the capture, as re-created now.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// Live address of the recorded base.
    pub live: u64,
    /// Length.
    pub len: u64,
    /// How it was made.
    pub how: How,
}

/// Host-visible regions by recorded base address.
#[derive(Default)]
pub struct HostRegions(BTreeMap<u64, Region>);

impl HostRegions {
    /// The live range for recorded `[addr, addr+n)` if it lies inside one region, and how that
    /// region was made.
    pub fn live_range(&self, addr: u64, n: u64) -> Option<(u64, How)> {
        let (&base, r) = self.0.range(..=addr).next_back()?;
        (addr.checked_add(n)? <= base + r.len).then(|| (r.live + (addr - base), r.how))
    }
}

/// `CUmemAllocationProp` of pinned memory on host NUMA node 0 (32 bytes), as NCCL creates it.
fn host_numa_prop() -> [u8; 32] {
    let mut p = [0u8; 32];
    p[0..4].copy_from_slice(&1i32.to_le_bytes()); // CU_MEM_ALLOCATION_TYPE_PINNED
    p[8..12].copy_from_slice(&3i32.to_le_bytes()); // CU_MEM_LOCATION_TYPE_HOST_NUMA, node 0
    p
}

impl Cuda {
    /// Register `size` bytes of host memory at `p` for the device: whether the driver's device
    /// pointer for them is `p` itself (unified addressing, as in the capture); they stay
    /// registered only then.
    fn register_in_place(&self, p: *mut c_void, size: usize) -> Result<bool> {
        if cu!(self.api, cuMemHostRegister_v2(p, size, REGISTER_FLAGS)).is_err() {
            return Ok(false);
        }
        let mut d = 0u64;
        if cu!(self.api, cuMemHostGetDevicePointer_v2(&mut d, p, 0)).is_ok() && d == p as u64 {
            return Ok(true);
        }
        cu!(self.api, cuMemHostUnregister(p))?;
        Ok(false)
    }

    /// Map `[addr, addr+len)` (page-rounded) at its address and register it for the device.
    /// `None` when the address is taken or the driver's device pointer differs (the caller then
    /// places the memory elsewhere).
    fn map_at(&self, addr: u64, len: u64) -> Result<Option<How>> {
        let start = addr / PAGE * PAGE;
        let end = (addr + len.max(1)).div_ceil(PAGE) * PAGE;
        let size = (end - start) as usize;
        // SAFETY: a fresh anonymous mapping that replaces nothing (MAP_FIXED_NOREPLACE).
        let p = unsafe {
            libc::mmap(
                start as *mut c_void,
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Ok(None);
        }
        let unmap = || {
            // SAFETY: the mapping made above.
            unsafe { libc::munmap(p, size) };
        };
        if p as u64 != start {
            unmap(); // an old kernel that ignores the flag put it elsewhere
            return Ok(None);
        }
        if !self.register_in_place(p, size)? {
            unmap();
            return Ok(None);
        }
        Ok(Some(How::AtAddress {
            start,
            len: size as u64,
        }))
    }

    /// `[addr, addr+len)` inside a block held for host memory: the block made usable and
    /// registered for the device when it is first used (given up, `None`, when the driver's
    /// device pointer would differ).
    fn in_held_block(&mut self, addr: u64, len: u64) -> Result<Option<How>> {
        let Some((start, size, usable)) = self.host_held.block_of(addr, len) else {
            return Ok(None);
        };
        if !usable {
            self.host_held.make_usable(start)?;
            if !self.register_in_place(start as *mut c_void, size as usize)? {
                self.host_held.give_up(start);
                return Ok(None);
            }
        }
        Ok(Some(How::InBlock))
    }

    /// `[addr, addr+len)` inside what replay reserved for device memory: backed by the
    /// driver's host memory mapped there (`None` when it cannot be). The first time, the
    /// memory is checked by a round trip through copies; where that fails the way is not taken
    /// again (the memory goes elsewhere, translated, as before).
    fn in_reservation(&mut self, addr: u64, len: u64) -> Result<Option<How>> {
        if self.host_in_reservation == Some(false)
            || !self
                .mem
                .map_host(&self.api, (addr, len), &host_numa_prop())?
        {
            return Ok(None);
        }
        let at = (addr, How::InReservation);
        if self.host_in_reservation.is_none() {
            let probe: Vec<u8> = (0..len.clamp(1, 64) as u8).map(|i| i ^ 0x5a).collect();
            let works = self.write_host(at, &probe).is_ok()
                && self
                    .read_host(at, probe.len())
                    .is_ok_and(|got| got == probe);
            self.host_in_reservation = Some(works);
            if !works {
                self.mem.refuse(format!(
                    "host memory at 0x{addr:x} inside a device reservation did not read back"
                ));
                return Ok(None);
            }
        }
        Ok(Some(How::InReservation))
    }

    /// Write `bytes` at live host-visible `at` (made as `how`): directly, or through a copy
    /// for memory the host cannot reach (the device idle around it, as when the capture's
    /// host wrote).
    fn write_host(&self, (at, how): (u64, How), bytes: &[u8]) -> Result<()> {
        if how == How::InReservation {
            let null: *mut c_void = std::ptr::null_mut();
            cu!(self.api, cuCtxSynchronize())?;
            let src = bytes.as_ptr() as *const c_void;
            cu!(self.api, cuMemcpyHtoDAsync_v2(at, src, bytes.len(), null))?;
            cu!(self.api, cuCtxSynchronize())?;
            return Ok(());
        }
        // SAFETY: inside a live host-visible region of at least `bytes.len()` bytes (the
        // caller's look-up).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
        Ok(())
    }

    /// Read `n` bytes at live host-visible `at` (made as `how`), as [`Cuda::write_host`].
    fn read_host(&self, (at, how): (u64, How), n: usize) -> Result<Vec<u8>> {
        if how == How::InReservation {
            let mut got = vec![0u8; n];
            let null: *mut c_void = std::ptr::null_mut();
            cu!(self.api, cuCtxSynchronize())?;
            let dst = got.as_mut_ptr() as *mut c_void;
            cu!(self.api, cuMemcpyDtoHAsync_v2(dst, at, n, null))?;
            cu!(self.api, cuCtxSynchronize())?;
            return Ok(got);
        }
        // SAFETY: inside a live host-visible region of at least `n` bytes (the caller's
        // look-up).
        Ok(unsafe { std::slice::from_raw_parts(at as *const u8, n) }.to_vec())
    }

    /// Pinned host memory recorded at `addr`: at its address (in the block held for it, in
    /// replay's device reservations, else mapped now), else elsewhere and translated;
    /// `contents` written into it (as [`Cuda::write_host`] writes, for however it was made).
    fn host_region(&mut self, addr: u64, len: u64, contents: Option<&[u8]>) -> Result<()> {
        let placed = match self.in_held_block(addr, len)? {
            Some(how) => Some(how),
            None => match self.in_reservation(addr, len)? {
                Some(how) => Some(how),
                None => self.map_at(addr, len)?,
            },
        };
        let (live, how) = match placed {
            Some(how) => (addr, how),
            None => {
                let mut p: *mut c_void = std::ptr::null_mut();
                cu!(
                    self.api,
                    cuMemHostAlloc(&mut p, len.max(1) as usize, HOST_ALLOC_FLAGS)
                )?;
                (p as u64, How::Elsewhere)
            }
        };
        if let Some(c) = contents {
            self.write_host((live, how), &c[..c.len().min(len as usize)])?;
        }
        if placed.is_none() {
            self.mem.note_moved(addr, len, live);
        }
        self.mem.note_host(placed.is_some());
        self.host.0.insert(addr, Region { live, len, how });
        Ok(())
    }

    /// `cuMemHostAlloc` (`flagged`) and `cuMemAllocHost`.
    pub(super) fn host_alloc(&mut self, ev: &Event, flagged: bool) -> Result<Outcome> {
        let s = memory_calls::read_host_alloc(ev, flagged)?;
        self.host_region(s.host_ptr, s.bytesize, None)?;
        Ok(Outcome::Done)
    }

    /// `cuMemHostRegister`: the program's memory, with its contents at registration.
    pub(super) fn host_register(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: HostRegister = ev.read()?;
        let contents = blobs(s.contents, Some(s.bytesize))?;
        self.host_region(s.host_ptr, s.bytesize, contents.as_deref())?;
        Ok(Outcome::Done)
    }

    /// `cuMemFreeHost`, `cuMemHostUnregister`: the region goes.
    pub(super) fn host_release(&mut self, ev: &Event) -> Result<Outcome> {
        let s: HostPtr = ev.read()?;
        self.host_release_managed(s.host_ptr)
    }

    /// The host-visible region recorded at `base` goes (managed memory: by `cuMemFree`).
    pub(super) fn host_release_managed(&mut self, base: u64) -> Result<Outcome> {
        let Some(r) = self.host.0.remove(&base) else {
            return Ok(Outcome::Done);
        };
        self.mem.forget(base);
        match r.how {
            How::AtAddress { start, len } => {
                cu!(self.api, cuMemHostUnregister(start as *mut c_void))?;
                // SAFETY: the mapping `map_at` made.
                unsafe { libc::munmap(start as *mut c_void, len as usize) };
            }
            How::InBlock | How::InReservation => {} // stays until the end
            How::Elsewhere => cu!(self.api, cuMemFreeHost(r.live as *mut c_void))?,
            How::Managed => cu!(self.api, cuMemFree_v2(r.live))?,
        }
        Ok(Outcome::Done)
    }

    /// `cuMemHostGetDevicePointer`: with unified addressing the device pointer is the host
    /// pointer; a recorded one that differs is translated to the live one.
    pub(super) fn host_device_pointer(&mut self, ev: &Event) -> Result<Outcome> {
        let s: HostDevicePointer = ev.read()?;
        if s.dptr == 0 || s.dptr == s.host_ptr {
            return Ok(Outcome::Done);
        }
        let Some((&base, r)) = self.host.0.range(..=s.host_ptr).next_back() else {
            return Ok(Outcome::Done);
        };
        let (live_host, rest) = (r.live + (s.host_ptr - base), base + r.len - s.host_ptr);
        let mut d = 0u64;
        cu!(
            self.api,
            cuMemHostGetDevicePointer_v2(&mut d, live_host as *mut c_void, 0)
        )?;
        self.mem.note_moved(s.dptr, rest, d);
        Ok(Outcome::Done)
    }

    /// `cuMemAllocManaged`: anywhere, translated, and known as host-visible.
    pub(super) fn alloc_managed(&mut self, ev: &Event) -> Result<Outcome> {
        let s: MemAllocFlags = ev.read()?;
        memory_calls::alloc_managed(&mut self.mem, &self.api, ev)?;
        self.mem.note_host(false);
        let region = Region {
            live: self.mem.translate(s.dptr),
            len: s.bytesize,
            how: How::Managed,
        };
        self.host.0.insert(s.dptr, region);
        Ok(Outcome::Done)
    }

    /// Is recorded `dptr` managed memory (freed by `cuMemFree`)?
    pub(super) fn is_managed(&self, dptr: u64) -> bool {
        self.host
            .0
            .get(&dptr)
            .is_some_and(|r| r.how == How::Managed)
    }

    /// The live address of recorded `[ptr+offset, +bytes)`, inside a host-visible region, and
    /// how the region was made.
    fn host_bytes(&self, ev: &Event, ptr: u64, offset: u64, bytes: u64) -> Result<(u64, How)> {
        ptr.checked_add(offset)
            .and_then(|a| self.host.live_range(a, bytes))
            .ok_or_else(|| {
                anyhow!(
                    "event #{}: 0x{ptr:x}+{offset} ({bytes} bytes) is not inside host-visible memory this replay made",
                    ev.seq
                )
            })
    }

    /// `hrrHostMemWrite`: the bytes the host wrote, written again before the same call.
    pub(super) fn host_write(&mut self, ev: &Event, blobs: &Blobs) -> Result<Outcome> {
        let s: HostMemWrite = ev.read()?;
        let Some(data) = blobs(s.h2d_blob, Some(s.bytes))? else {
            bail!(
                "event #{}: the host write's bytes were not recorded",
                ev.seq
            );
        };
        let dst = self.host_bytes(ev, s.ptr, s.offset, s.bytes)?;
        let n = data.len().min(s.bytes as usize);
        self.write_host(dst, &data[..n])?;
        Ok(Outcome::Done)
    }

    /// `hrrHostMemCheck`: the bytes the host read after a synchronisation, compared.
    pub(super) fn host_check(&mut self, ev: &Event) -> Result<Outcome> {
        let s: HostMemCheck = ev.read()?;
        let src = self.host_bytes(ev, s.ptr, s.offset, s.bytes)?;
        let got = self.read_host(src, s.bytes as usize)?;
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
            site: s.ptr + s.offset,
        })
    }

    /// A D2H copy's result `got` for recorded destination `dst`: written into host-visible
    /// memory when the destination is there (the capture's copy wrote it; later host reads
    /// and kernels see it).
    pub(super) fn mirror_d2h(&self, dst: u64, got: &[u8]) -> Result<()> {
        match self.host.live_range(dst, got.len() as u64) {
            Some(live) => self.write_host(live, got),
            None => Ok(()),
        }
    }
}
