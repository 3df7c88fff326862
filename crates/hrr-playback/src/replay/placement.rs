//! Device memory during replay, for every API: each recorded allocation is put back at its
//! recorded address with the driver's virtual memory management (reserve the range with the
//! address as hint, verify, create physical memory, map it, grant access), in the driver's
//! granularity, so allocations that shared a page share its mapping again. Where the driver
//! refuses an address, lacks VMM, or `--no-placement`, the allocation goes elsewhere and
//! pointers are translated ([`Placement::translate`]).
//!
//! The algorithm is generic over the [`Vmm`] trait (the handful of driver calls it needs,
//! implemented by each backend's entry-point table); what differs between drivers is a
//! [`Policy`] the backend chooses. Recorded VMM calls of the program itself (`cuMemCreate`,
//! `hipMemMap`, ...) go through the same trait ([`Placement::create_recorded`] and the
//! following methods), with their handles remapped here.

use std::collections::{BTreeMap, HashMap};

use anyhow::{anyhow, Result};

use crate::replay::backend::shared::{Call, H};

/// How recorded allocations landed, counted as replay places them: the summary's JSON type
/// (`allocations`; docs/json.md), used as it is.
pub use hrr_cli::json::AllocationsJson as Tally;

/// The driver calls placement needs (CUDA and HIP share their signatures and semantics).
pub trait Vmm {
    /// Reserve `size` bytes of address space, `hint` the wished address (0: anywhere).
    fn reserve(&self, size: u64, align: u64, hint: u64) -> Call<u64>;
    /// Free a reservation.
    fn free_reservation(&self, addr: u64, size: u64) -> Call<()>;
    /// Create `size` bytes of physical memory with allocation properties `prop`.
    fn create(&self, size: u64, prop: &[u8], flags: u64) -> Call<u64>;
    /// Release physical memory.
    fn release(&self, handle: u64) -> Call<()>;
    /// Map `handle` (from `offset`) at `addr`.
    fn map(&self, addr: u64, size: u64, offset: u64, handle: u64) -> Call<()>;
    /// Unmap `[addr, addr+size)`.
    fn unmap(&self, addr: u64, size: u64) -> Call<()>;
    /// Apply `count` access descriptors (12 bytes each) to `[addr, addr+size)`.
    fn set_access(&self, addr: u64, size: u64, desc: &[u8], count: usize) -> Call<()>;
    /// A plain allocation anywhere (the fallback of a refused placement).
    fn alloc(&self, size: u64) -> Call<u64>;
    /// Free a plain allocation.
    fn free(&self, ptr: u64) -> Call<()>;
    /// Wait for all work on the device.
    fn synchronize(&self) -> Call<()>;
}

/// The other memory calls of the program's allocations (CUDA and HIP share their signatures).
pub trait DeviceMemory {
    /// Managed memory (`flags` as recorded).
    fn alloc_managed(&self, size: u64, flags: u32) -> Call<u64>;
    /// Pinned host memory.
    fn alloc_host(&self, size: u64, flags: u32) -> Call<u64>;
    /// Set `count` elements of `width` bytes (1, 2, else 4) at `dst` to `value`, on `stream`.
    fn memset(&self, dst: u64, value: u64, count: usize, width: u64, stream: H) -> Call<()>;
}

/// How a driver hands out reservations.
#[derive(Debug, Clone, Copy)]
pub enum Reserve {
    /// The address is only a hint the driver may ignore or shift: ranges are reserved in whole
    /// chunks of at least this size, retried lower ([`Placement::reserve_covering`]), and
    /// every reservation is kept for the whole replay (recorded runs reuse addresses).
    Covering {
        /// Chunk size (raised to the granularity).
        chunk: u64,
    },
    /// The driver gives the address asked or refuses: ranges are reserved exactly; one made
    /// for a mapping outside the ranges reserved at start is freed with that mapping.
    Exact,
}

/// What differs between drivers.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// How reservations are made.
    pub reserve: Reserve,
    /// One physical allocation per page (else one per run of unmapped pages).
    pub per_page: bool,
    /// A failure to create or map physical memory is a refusal (the allocation falls back to
    /// translation) rather than an error of the replay.
    pub refuse_unbackable: bool,
    /// Wait for the device before unmapping (queued work may still use the memory).
    pub sync_before_unmap: bool,
}

/// `CUmemAccessDesc` / `hipMemAccessDesc` (one layout) granting read/write to `dev`.
pub fn rw_access(dev: i32) -> [u8; 12] {
    let mut d = [0u8; 12];
    d[0..4].copy_from_slice(&1i32.to_le_bytes()); // location type: device
    d[4..8].copy_from_slice(&dev.to_le_bytes());
    d[8..12].copy_from_slice(&3i32.to_le_bytes()); // PROT_READWRITE
    d
}

/// Physical memory mapped for placed allocations: one create + map per segment.
struct Segment {
    len: u64,
    handle: u64,
    /// Pages of the segment some live allocation uses.
    live_pages: u64,
    /// The segment has a reservation of its own (outside the ranges reserved at start).
    own_reservation: bool,
}

/// Placement and translation state.
pub struct Placement {
    policy: Policy,
    /// Allocation properties of placed memory; `None`: placement is off.
    prop: Option<[u8; 32]>,
    /// The device placed memory is made on (the current one).
    dev: i32,
    /// The devices placed memory is made accessible to (all the replay opened; `[dev]` unless
    /// [`Placement::share_with`] said otherwise).
    access: Vec<i32>,
    /// The driver's allocation granularity: the unit of placement.
    page: u64,
    /// Address ranges this replay reserved: start → length.
    reservations: BTreeMap<u64, u64>,
    /// Mapped page → (its segment, live allocations using it).
    pages: HashMap<u64, (u64, u32)>,
    segments: BTreeMap<u64, Segment>,
    /// Recorded start → (length, replay start) for ranges that did not land at their address.
    moved: BTreeMap<u64, (u64, u64)>,
    /// Recorded allocations alive now: start → length.
    live: BTreeMap<u64, u64>,
    /// Recorded VMM handles → live ones.
    handles: HashMap<u64, u64>,
    /// Ranges the program's VMM calls mapped, alive now: recorded start → length.
    mapped: BTreeMap<u64, u64>,
    /// Recorded allocations made plainly, never placed: those exported to other processes
    /// (an IPC handle is for memory of a plain allocation, not of mapped physical memory).
    plain: std::collections::HashSet<u64>,
    /// Pages backed by host memory (the driver's, mapped like device memory: host memory the
    /// capture had inside what replay reserved for device memory) → their handles; kept until
    /// the end.
    host_pages: HashMap<u64, u64>,
    tally: Tally,
}

impl Placement {
    /// New state; placement is on when `prop` (the allocation properties of placed memory) is
    /// given; `gran` is the VMM granularity (at least 4 KiB is used).
    pub fn new(policy: Policy, dev: i32, prop: Option<[u8; 32]>, gran: u64) -> Self {
        Placement {
            policy,
            prop,
            dev,
            access: vec![dev],
            page: gran.max(4096),
            reservations: BTreeMap::new(),
            pages: HashMap::new(),
            segments: BTreeMap::new(),
            moved: BTreeMap::new(),
            live: BTreeMap::new(),
            handles: HashMap::new(),
            mapped: BTreeMap::new(),
            plain: Default::default(),
            host_pages: HashMap::new(),
            tally: Tally::default(),
        }
    }

    /// Make placed memory accessible to every device of `devs` (a replay on several devices:
    /// a kernel on one reads another's memory once the program enabled peer access).
    pub fn share_with(&mut self, devs: &[i32]) {
        if !devs.is_empty() {
            self.access = devs.to_vec();
        }
    }

    /// Place memory on device `dev` from now on (the current context's device changed).
    pub fn set_device(&mut self, dev: i32) {
        self.dev = dev;
        if let Some(p) = self.prop.as_mut() {
            p[12..16].copy_from_slice(&dev.to_le_bytes());
        }
    }

    /// Read/write access descriptors for every device of [`Placement::share_with`], and
    /// their count.
    fn access_descriptors(&self) -> (Vec<u8>, usize) {
        let desc = self.access.iter().flat_map(|&d| rw_access(d)).collect();
        (desc, self.access.len())
    }

    /// Allocate the recorded allocations at `addrs` plainly (translated), never placed.
    pub fn allocate_plainly(&mut self, addrs: &[u64]) {
        self.plain.extend(addrs.iter().copied());
    }

    /// The allocation properties of placed memory, when placement is on.
    pub fn prop(&self) -> Option<[u8; 32]> {
        self.prop
    }

    /// How recorded allocations landed so far.
    pub fn tally(&self) -> Tally {
        self.tally.clone()
    }

    /// Count host-visible memory re-created at its address (`placed`) or elsewhere.
    pub fn note_host(&mut self, placed: bool) {
        match placed {
            true => self.tally.host_placed += 1,
            false => self.tally.host_translated += 1,
        }
    }

    /// Note why placement is refused, unless an earlier reason was noted.
    pub fn refuse(&mut self, why: String) {
        if self.tally.first_refusal.is_none() {
            self.tally.first_refusal = Some(why);
        }
    }

    /// The unit ranges are reserved in.
    fn reserve_unit(&self) -> u64 {
        match self.policy.reserve {
            Reserve::Covering { chunk } => chunk.max(self.page),
            Reserve::Exact => self.page,
        }
    }

    /// The spans [`Placement::prereserve`] reserves for recorded `ranges`: rounded to the
    /// reservation unit and merged (`(start, end)`, ascending; none without placement).
    pub fn spans_to_reserve(&self, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        if self.prop.is_none() {
            return Vec::new();
        }
        spans_in_units(self.reserve_unit(), ranges)
    }

    /// Reserve every recorded range before anything else takes device addresses (code loading
    /// allocates too): ranges are rounded to the reservation unit and merged.
    pub fn prereserve(&mut self, vmm: &impl Vmm, ranges: &[(u64, u64)]) -> Result<()> {
        let g = self.reserve_unit();
        for (s, e) in self.spans_to_reserve(ranges) {
            match self.policy.reserve {
                Reserve::Covering { .. } => {
                    if !self.reserve_covering(vmm, s, e - s)? {
                        // Try the chunks one by one: parts of the run may still be placeable.
                        let mut p = s;
                        while p < e && (e - s) / g <= 4096 {
                            self.reserve_covering(vmm, p, g)?;
                            p += g;
                        }
                    }
                }
                Reserve::Exact => {
                    if self.reserve_exact(vmm, s, e - s)? {
                        self.reservations.insert(s, e - s);
                    }
                }
            }
        }
        Ok(())
    }

    /// Is `[start, start+len)` inside one of our reservations?
    pub fn covered(&self, start: u64, len: u64) -> bool {
        matches!(self.reservations.range(..=start).next_back(),
            Some((&s, &l)) if start + len <= s + l)
    }

    /// Reserve `[start, start+len)` exactly; false (and the reason noted) when refused.
    fn reserve_exact(&mut self, vmm: &impl Vmm, start: u64, len: u64) -> Result<bool> {
        let got = match vmm.reserve(len, 0, start)? {
            Ok(got) => got,
            Err(e) => {
                self.refuse(format!("reserving 0x{start:x} (+{len} bytes): {e}"));
                return Ok(false);
            }
        };
        if got != start {
            self.refuse(format!(
                "the runtime put the reservation asked at 0x{start:x} (+{len} bytes) at 0x{got:x}"
            ));
            vmm.free_reservation(got, len)??;
            return Ok(false);
        }
        Ok(true)
    }

    /// Reserve the address range `[start, start+len)`, exactly or inside a larger reservation
    /// around it (the driver treats the address as a hint and may shift it); kept.
    pub fn reserve_covering(&mut self, vmm: &impl Vmm, start: u64, len: u64) -> Result<bool> {
        if self.covered(start, len) {
            return Ok(true);
        }
        let mut last = None;
        let c = self.reserve_unit();
        let (chunk_start, chunk_end) = (start / c * c, (start + len).div_ceil(c) * c);
        // The driver was seen to put a reservation one chunk above an aligned hint; asking up
        // to two chunks lower (and that much longer) still covers the range when it does.
        let span = chunk_end - chunk_start;
        let attempts = [
            (chunk_start, span),
            (chunk_start.saturating_sub(c), span + c),
            (chunk_start.saturating_sub(2 * c), span + 2 * c),
            (start, len),
        ];
        for (hint, size) in attempts {
            match vmm.reserve(size, 0, hint)? {
                Ok(got) if got <= start && got + size >= start + len => {
                    self.reservations.insert(got, size);
                    return Ok(true);
                }
                Ok(got) => {
                    last = Some(format!(
                        "the driver put the reservation asked at 0x{hint:x} (+{size} bytes) at 0x{got:x}"
                    ));
                    vmm.free_reservation(got, size)??;
                }
                Err(e) => last = Some(format!("reserving 0x{hint:x}: {e}")),
            }
        }
        if let Some(why) = last {
            self.refuse(why);
        }
        Ok(false)
    }

    /// Recreate an allocation recorded at `addr` of `size` bytes.
    pub fn alloc(&mut self, vmm: &impl Vmm, addr: u64, size: u64) -> Result<()> {
        let size = size.max(1);
        if self.prop.is_some() && !self.plain.contains(&addr) && self.place(vmm, addr, size)? {
            self.tally.placed += 1;
        } else {
            let p = vmm.alloc(size)??;
            self.moved.insert(addr, (size, p));
            self.tally.translated += 1;
        }
        self.live.insert(addr, size);
        Ok(())
    }

    /// Map what `[addr, addr+size)` needs at its address: unmapped pages become segments (one
    /// per page, or one per run); pages mapped already (shared with another allocation) are
    /// reused.
    fn place(&mut self, vmm: &impl Vmm, addr: u64, size: u64) -> Result<bool> {
        let g = self.page;
        let (first, end) = (addr / g * g, (addr + size).div_ceil(g) * g);
        let mut made = Vec::new();
        let mut page = first;
        if (first..end)
            .step_by(g as usize)
            .any(|p| self.host_pages.contains_key(&p))
        {
            return Ok(false); // host memory there
        }
        while page < end {
            if self.pages.contains_key(&page) {
                page += g;
                continue;
            }
            let mut run_end = page + g;
            while !self.policy.per_page && run_end < end && !self.pages.contains_key(&run_end) {
                run_end += g;
            }
            if !self.map_segment(vmm, page, run_end - page)? {
                for s in made {
                    self.drop_segment(vmm, s)?;
                }
                return Ok(false);
            }
            made.push(page);
            page = run_end;
        }
        let mut page = first;
        while page < end {
            let (seg, refs) = self.pages.get_mut(&page).expect("mapped above");
            *refs += 1;
            if *refs == 1 {
                let seg = *seg;
                self.segments.get_mut(&seg).expect("segment").live_pages += 1;
            }
            page += g;
        }
        Ok(true)
    }

    /// Back recorded host memory `[addr, addr+len)` inside this replay's reservations with the
    /// driver's host memory (`host_prop`: pinned memory on a host NUMA node), mapped at its
    /// address and made accessible to the devices, page by page (pages backed so before are
    /// kept). False, with nothing left mapped by this call, when a page is outside the
    /// reservations, holds device memory, or the driver refuses.
    pub fn map_host(
        &mut self,
        vmm: &impl Vmm,
        (addr, len): (u64, u64),
        host_prop: &[u8],
    ) -> Result<bool> {
        let g = self.page;
        let (first, end) = (
            addr / g * g,
            addr.saturating_add(len.max(1)).div_ceil(g) * g,
        );
        let pages: Vec<u64> = (first..end).step_by(g as usize).collect();
        if self.prop.is_none()
            || pages
                .iter()
                .any(|&p| !self.covered(p, g) || self.pages.contains_key(&p))
        {
            return Ok(false);
        }
        let mut made: Vec<(u64, u64)> = Vec::new();
        let (desc, n) = self.access_descriptors();
        for &page in pages.iter().filter(|p| !self.host_pages.contains_key(p)) {
            let backed = match vmm.create(g, host_prop, 0)? {
                Ok(h) => match vmm.map(page, g, 0, h)? {
                    Ok(()) => match vmm.set_access(page, g, &desc, n)? {
                        Ok(()) => Ok(h),
                        Err(e) => {
                            vmm.unmap(page, g)??;
                            vmm.release(h)??;
                            Err(e)
                        }
                    },
                    Err(e) => {
                        vmm.release(h)??;
                        Err(e)
                    }
                },
                Err(e) => Err(e),
            };
            match backed {
                Ok(h) => made.push((page, h)),
                Err(e) => {
                    self.refuse(format!("backing host memory at 0x{page:x}: {e}"));
                    for (p, h) in made {
                        vmm.unmap(p, g)??;
                        vmm.release(h)??;
                    }
                    return Ok(false);
                }
            }
        }
        self.host_pages.extend(made);
        Ok(true)
    }

    /// Back `[start, start+len)` with physical memory at its address.
    fn map_segment(&mut self, vmm: &impl Vmm, start: u64, len: u64) -> Result<bool> {
        let own_reservation = match self.policy.reserve {
            Reserve::Covering { .. } => {
                if !self.reserve_covering(vmm, start, len)? {
                    return Ok(false);
                }
                false
            }
            Reserve::Exact => {
                let own = !self.covered(start, len);
                if own && !self.reserve_exact(vmm, start, len)? {
                    return Ok(false);
                }
                own
            }
        };
        let prop = self.prop.expect("placement on");
        let mut handle = 0u64;
        let mapped = match vmm.create(len, &prop, 0)? {
            Ok(h) => {
                handle = h;
                vmm.map(start, len, 0, h)?
            }
            Err(e) => Err(e),
        };
        if let Err(e) = mapped {
            if !self.policy.refuse_unbackable {
                return Err(e.into());
            }
            self.refuse(format!("backing 0x{start:x} (+{len} bytes): {e}"));
            if handle != 0 {
                vmm.release(handle)??;
            }
            if own_reservation {
                vmm.free_reservation(start, len)??;
            }
            return Ok(false);
        }
        let (desc, n) = self.access_descriptors();
        match vmm.set_access(start, len, &desc, n)? {
            // devices without peer access to each other: the current one only
            Err(_) if n > 1 => vmm.set_access(start, len, &rw_access(self.dev), 1)??,
            r => r?,
        }
        self.segments.insert(
            start,
            Segment {
                len,
                handle,
                live_pages: 0,
                own_reservation,
            },
        );
        let mut page = start;
        while page < start + len {
            self.pages.insert(page, (start, 0));
            page += self.page;
        }
        Ok(true)
    }

    fn drop_segment(&mut self, vmm: &impl Vmm, start: u64) -> Result<()> {
        let Some(seg) = self.segments.remove(&start) else {
            return Ok(());
        };
        if self.policy.sync_before_unmap {
            vmm.synchronize()??;
        }
        vmm.unmap(start, seg.len)??;
        vmm.release(seg.handle)??;
        if seg.own_reservation {
            vmm.free_reservation(start, seg.len)??;
        }
        let mut page = start;
        while page < start + seg.len {
            self.pages.remove(&page);
            page += self.page;
        }
        Ok(())
    }

    fn unref_page(&mut self, vmm: &impl Vmm, page: u64) -> Result<()> {
        let Some((seg, refs)) = self.pages.get_mut(&page) else {
            return Ok(());
        };
        *refs -= 1;
        if *refs == 0 {
            let seg = *seg;
            let s = self.segments.get_mut(&seg).expect("segment");
            s.live_pages -= 1;
            if s.live_pages == 0 {
                self.drop_segment(vmm, seg)?;
            }
        }
        Ok(())
    }

    /// Free the allocation recorded at `addr`.
    pub fn free(&mut self, vmm: &impl Vmm, addr: u64) -> Result<()> {
        let Some(size) = self.live.remove(&addr) else {
            return Ok(());
        };
        if let Some((_, p)) = self.moved.remove(&addr) {
            vmm.free(p)??;
            return Ok(());
        }
        let g = self.page;
        let mut page = addr / g * g;
        while page < addr + size {
            self.unref_page(vmm, page)?;
            page += g;
        }
        Ok(())
    }

    /// Is a reservation the program made at `recorded` placed (inside ours)? With placement
    /// on: for [`Reserve::Covering`] one is made to cover it when none does; for
    /// [`Reserve::Exact`] only one made at start counts.
    pub fn reservation_placed(&mut self, vmm: &impl Vmm, recorded: u64, size: u64) -> Result<bool> {
        Ok(self.prop.is_some()
            && match self.policy.reserve {
                Reserve::Covering { .. } => self.reserve_covering(vmm, recorded, size)?,
                Reserve::Exact => self.covered(recorded, size),
            })
    }

    /// A reservation the program made at `recorded`, not placed: made from `hint` and
    /// translated.
    pub fn reserve_elsewhere(
        &mut self,
        vmm: &impl Vmm,
        (recorded, size): (u64, u64),
        align: u64,
        hint: u64,
    ) -> Result<()> {
        let got = vmm.reserve(size, align, hint)??;
        self.note_moved(recorded, size, got);
        Ok(())
    }

    /// A recorded reservation freed by the program (ours stay).
    pub fn free_recorded_reservation(
        &mut self,
        vmm: &impl Vmm,
        recorded: u64,
        size: u64,
    ) -> Result<()> {
        if !(self.prop.is_some() && self.covered(recorded, size)) {
            vmm.free_reservation(self.translate(recorded), size)??;
            self.forget(recorded);
        }
        Ok(())
    }

    /// `cuMemCreate` / `hipMemCreate` of the program: physical memory with `prop`; the live
    /// handle, to [`Self::adopt_handle`].
    pub fn create_recorded(
        &self,
        vmm: &impl Vmm,
        size: u64,
        prop: &[u8],
        flags: u64,
    ) -> Result<u64> {
        Ok(vmm.create(size, prop, flags)??)
    }

    /// The recorded VMM handle `recorded` is `live` now.
    pub fn adopt_handle(&mut self, recorded: u64, live: u64) {
        self.handles.insert(recorded, live);
    }

    /// The live handle of the recorded VMM handle `recorded`, if replay made or imported it.
    pub fn live_handle(&self, recorded: u64) -> Option<u64> {
        self.handles.get(&recorded).copied()
    }

    /// `cuMemRelease` / `hipMemRelease` of the program.
    pub fn release_recorded(&mut self, vmm: &impl Vmm, recorded: u64) -> Result<()> {
        if let Some(h) = self.handles.remove(&recorded) {
            vmm.release(h)??;
        }
        Ok(())
    }

    /// `cuMemMap` / `hipMemMap` of the program (`call` names it in errors).
    pub fn map_recorded(
        &mut self,
        vmm: &impl Vmm,
        call: &str,
        recorded: u64,
        (addr, size, offset): (u64, u64, u64),
    ) -> Result<()> {
        let h = *self
            .handles
            .get(&recorded)
            .ok_or_else(|| anyhow!("{call} of an unknown allocation handle"))?;
        vmm.map(self.translate(addr), size, offset, h)??;
        self.mapped.insert(addr, size);
        Ok(())
    }

    /// `cuMemUnmap` / `hipMemUnmap` of the program.
    pub fn unmap_recorded(&mut self, vmm: &impl Vmm, addr: u64, size: u64) -> Result<()> {
        vmm.unmap(self.translate(addr), size)??;
        let end = addr.saturating_add(size);
        self.mapped.retain(|&start, _| start < addr || start >= end);
        Ok(())
    }

    /// Whether `[start, start + len)` (recorded addresses) is memory replay holds now: inside
    /// one live allocation, or covered by ranges the program's VMM calls mapped.
    pub fn holds(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        if let Some((&s, &l)) = self.live.range(..=start).next_back() {
            if end <= s + l {
                return true;
            }
        }
        // mapped ranges, contiguous from the one holding `start` to `end`
        let mut at = start;
        for (&s, &l) in self.mapped.range(..end) {
            if s <= at && at < s + l {
                at = s + l;
                if at >= end {
                    return true;
                }
            }
        }
        false
    }

    /// `cuMemSetAccess` / `hipMemSetAccess` of the program: read/write for the current device,
    /// `count` descriptors (at least one); on several devices, for every device opened.
    pub fn set_access_recorded(
        &mut self,
        vmm: &impl Vmm,
        count: u64,
        addr: u64,
        size: u64,
    ) -> Result<()> {
        let (desc, n) = match self.access.len() {
            1 => {
                let n = count.max(1) as usize;
                ((0..n).flat_map(|_| rw_access(self.dev)).collect(), n)
            }
            _ => self.access_descriptors(),
        };
        vmm.set_access(self.translate(addr), size, &desc, n)??;
        Ok(())
    }

    /// Note that a recorded range now lives elsewhere (globals, VMM reservations, host memory).
    pub fn note_moved(&mut self, recorded: u64, len: u64, now: u64) {
        if recorded != now {
            self.moved.insert(recorded, (len, now));
        }
    }

    /// Forget a moved range.
    pub fn forget(&mut self, recorded: u64) {
        self.moved.remove(&recorded);
    }

    /// The replay address of recorded address `v` (unchanged when it did not move).
    pub fn translate(&self, v: u64) -> u64 {
        match self.moved.range(..=v).next_back() {
            Some((&start, &(len, now))) if v < start + len => now + (v - start),
            _ => v,
        }
    }

    /// The length of the allocation recorded at `addr`, while it is alive.
    pub fn live_len(&self, addr: u64) -> Option<u64> {
        self.live.get(&addr).copied()
    }

    /// Does any range need translating?
    pub fn any_moved(&self) -> bool {
        !self.moved.is_empty()
    }

    /// Recorded allocations alive now, `(recorded start, length)` in address order (what an
    /// extraction snapshots, `super::extract`).
    pub fn live(&self) -> Vec<(u64, u64)> {
        self.live.iter().map(|(&s, &l)| (s, l)).collect()
    }
}

/// `ranges` (start, length) rounded out to multiples of `unit` and merged: `(start, end)`,
/// ascending (what device memory is reserved in, [`Placement::spans_to_reserve`]).
pub fn spans_in_units(unit: u64, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let g = unit.max(1);
    let mut spans: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|(s, l)| *s != 0 && *l != 0)
        .map(|&(s, l)| (s / g * g, s.saturating_add(l).div_ceil(g) * g))
        .collect();
    spans.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

#[cfg(test)]
mod tests;
