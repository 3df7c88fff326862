//! Device memory during replay: every recorded allocation is put back at its recorded address
//! (driver VMM: reserve with the address as hint, verify, create, map, grant access) page by page,
//! so allocations that share a granularity page share its mapping; where the driver refuses an
//! address (or `--no-placement`), the allocation goes elsewhere and pointers are translated.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

use super::driver::{cu, Api};

/// `CUmemAllocationProp` for pinned device memory on `dev` (32 bytes).
pub fn device_prop(dev: i32) -> [u8; 32] {
    let mut p = [0u8; 32];
    p[0..4].copy_from_slice(&1i32.to_le_bytes()); // CU_MEM_ALLOCATION_TYPE_PINNED
    p[8..12].copy_from_slice(&1i32.to_le_bytes()); // CU_MEM_LOCATION_TYPE_DEVICE
    p[12..16].copy_from_slice(&dev.to_le_bytes());
    p
}

/// `CUmemAccessDesc` granting read/write to `dev` (12 bytes).
pub fn rw_access(dev: i32) -> [u8; 12] {
    let mut d = [0u8; 12];
    d[0..4].copy_from_slice(&1i32.to_le_bytes());
    d[4..8].copy_from_slice(&dev.to_le_bytes());
    d[8..12].copy_from_slice(&3i32.to_le_bytes()); // PROT_READWRITE
    d
}

/// Recorded device ranges held free on the host side (`PROT_NONE`, no reserve) from before the
/// driver loads until each is placed, so neither the driver's own pools nor host mappings take
/// them. Only ranges this process mapped itself are ever unmapped.
#[derive(Default)]
pub struct HostHold {
    held: BTreeMap<u64, u64>,
}

impl HostHold {
    /// Hold every range in `ranges` (start, len), rounded out to `gran`, that is free now.
    pub fn hold(ranges: &[(u64, u64)], gran: u64) -> Self {
        let mut spans: Vec<(u64, u64)> = ranges
            .iter()
            .filter(|(s, l)| *s != 0 && *l != 0)
            .map(|&(s, l)| (s / gran * gran, (s.saturating_add(l)).div_ceil(gran) * gran))
            .collect();
        spans.sort();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let mut hold = HostHold::default();
        for (s, e) in merged {
            if hold.map(s, e - s) {
                continue;
            }
            // Part of the run is taken: hold what is free, a granule at a time (bounded).
            if (e - s) / gran <= 65536 {
                let mut p = s;
                while p < e {
                    hold.map(p, gran);
                    p += gran;
                }
            }
        }
        hold
    }

    fn map(&mut self, start: u64, len: u64) -> bool {
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return false;
        }
        if p as u64 != start {
            // An old kernel without MAP_FIXED_NOREPLACE placed it elsewhere: give it back.
            // SAFETY: unmapping the mapping just made.
            unsafe { libc::munmap(p, len as usize) };
            return false;
        }
        self.held.insert(start, start + len);
        true
    }

    /// Give `[start, start+len)` back (the parts this process holds) so the driver can use it.
    pub fn release(&mut self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        let overlapping: Vec<(u64, u64)> = self
            .held
            .range(..end)
            .filter(|(_, &e)| e > start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in overlapping {
            let (cut_s, cut_e) = (s.max(start), e.min(end));
            // SAFETY: [cut_s, cut_e) lies inside a PROT_NONE mapping this process made.
            unsafe { libc::munmap(cut_s as *mut libc::c_void, (cut_e - cut_s) as usize) };
            self.held.remove(&s);
            if s < cut_s {
                self.held.insert(s, cut_s);
            }
            if cut_e < e {
                self.held.insert(cut_e, e);
            }
        }
    }
}

struct Page {
    handle: u64,
    refs: u32,
}

/// Placement and translation state.
pub struct Memory {
    placement: bool,
    dev: i32,
    gran: u64,
    pages: HashMap<u64, Page>,
    hold: HostHold,
    /// Recorded start → (length, replay start) for ranges that did not land at their address.
    moved: BTreeMap<u64, (u64, u64)>,
    /// Recorded allocations alive now: start → length.
    live: BTreeMap<u64, u64>,
    /// Allocations placed at their recorded address.
    pub placed: u64,
    /// Allocations that fell back to translation.
    pub translated: u64,
}

impl Memory {
    /// New state; `gran` is the VMM granularity.
    pub fn new(placement: bool, dev: i32, gran: u64, hold: HostHold) -> Self {
        Memory {
            placement,
            dev,
            gran: gran.max(4096),
            pages: HashMap::new(),
            hold,
            moved: BTreeMap::new(),
            live: BTreeMap::new(),
            placed: 0,
            translated: 0,
        }
    }

    /// Recreate an allocation recorded at `addr` of `size` bytes.
    pub fn alloc(&mut self, api: &Api, addr: u64, size: u64) -> Result<()> {
        let size = size.max(1);
        if self.placement && self.place(api, addr, size)? {
            self.placed += 1;
        } else {
            let mut p = 0u64;
            cu!(api, cuMemAlloc_v2(&mut p, size as usize))?;
            self.moved.insert(addr, (size, p));
            self.translated += 1;
        }
        self.live.insert(addr, size);
        Ok(())
    }

    fn place(&mut self, api: &Api, addr: u64, size: u64) -> Result<bool> {
        let first = addr / self.gran * self.gran;
        let end = (addr + size).div_ceil(self.gran) * self.gran;
        let mut taken = Vec::new();
        let mut page = first;
        while page < end {
            if let Some(p) = self.pages.get_mut(&page) {
                p.refs += 1;
                taken.push(page);
            } else if let Some(handle) = self.map_page(api, page)? {
                self.pages.insert(page, Page { handle, refs: 1 });
                taken.push(page);
            } else {
                for t in taken {
                    self.unref_page(api, t)?;
                }
                return Ok(false);
            }
            page += self.gran;
        }
        Ok(true)
    }

    /// Give a held range back before the driver is asked for it.
    pub fn release_hold(&mut self, start: u64, len: u64) {
        self.hold.release(start, len);
    }

    fn map_page(&mut self, api: &Api, page: u64) -> Result<Option<u64>> {
        let g = self.gran as usize;
        self.hold.release(page, self.gran);
        let mut got = 0u64;
        if cu!(api, cuMemAddressReserve(&mut got, g, 0, page, 0)).is_err() {
            return Ok(None);
        }
        if got != page {
            cu!(api, cuMemAddressFree(got, g))?;
            return Ok(None);
        }
        let prop = device_prop(self.dev);
        let mut handle = 0u64;
        cu!(api, cuMemCreate(&mut handle, g, prop.as_ptr(), 0))?;
        cu!(api, cuMemMap(page, g, 0, handle, 0))?;
        let access = rw_access(self.dev);
        cu!(api, cuMemSetAccess(page, g, access.as_ptr(), 1))?;
        Ok(Some(handle))
    }

    fn unref_page(&mut self, api: &Api, page: u64) -> Result<()> {
        let Some(p) = self.pages.get_mut(&page) else {
            return Ok(());
        };
        p.refs -= 1;
        if p.refs == 0 {
            let handle = p.handle;
            self.pages.remove(&page);
            let g = self.gran as usize;
            cu!(api, cuMemUnmap(page, g))?;
            cu!(api, cuMemRelease(handle))?;
            cu!(api, cuMemAddressFree(page, g))?;
        }
        Ok(())
    }

    /// Free the allocation recorded at `addr`.
    pub fn free(&mut self, api: &Api, addr: u64) -> Result<()> {
        let Some(size) = self.live.remove(&addr) else {
            return Ok(());
        };
        if let Some((_, p)) = self.moved.remove(&addr) {
            cu!(api, cuMemFree_v2(p))?;
            return Ok(());
        }
        let first = addr / self.gran * self.gran;
        let end = (addr + size).div_ceil(self.gran) * self.gran;
        let mut page = first;
        while page < end {
            self.unref_page(api, page)?;
            page += self.gran;
        }
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

    /// Does any range need translating?
    pub fn any_moved(&self) -> bool {
        !self.moved.is_empty()
    }
}
