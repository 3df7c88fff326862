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

/// Recorded ranges are reserved in whole chunks of this size. Measured on the H200 (driver 580):
/// the driver ignores the address hint of small reservations (2 MiB ones come from its own pool)
/// and honours it for large, aligned ones; it was also seen to shift a hint by one chunk, which
/// the back-off in [`Memory::reserve_covering`] absorbs. Holding the ranges with host `mmap`
/// before the driver loads made the driver refuse them, so nothing is held.
pub const RESERVE_CHUNK: u64 = 32 << 20;

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
    /// Address ranges this replay reserved from the driver: start → length.
    reservations: BTreeMap<u64, u64>,
    /// Recorded start → (length, replay start) for ranges that did not land at their address.
    moved: BTreeMap<u64, (u64, u64)>,
    /// Recorded allocations alive now: start → length.
    live: BTreeMap<u64, u64>,
    /// Allocations placed at their recorded address.
    pub placed: u64,
    /// Allocations that fell back to translation.
    pub translated: u64,
    /// Why the first refused placement was refused.
    pub first_refusal: Option<String>,
}

impl Memory {
    /// New state; `gran` is the VMM granularity.
    pub fn new(placement: bool, dev: i32, gran: u64) -> Self {
        Memory {
            placement,
            dev,
            gran: gran.max(4096),
            pages: HashMap::new(),
            reservations: BTreeMap::new(),
            moved: BTreeMap::new(),
            live: BTreeMap::new(),
            placed: 0,
            translated: 0,
            first_refusal: None,
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

    /// Is `[start, start+len)` inside one of our reservations?
    pub fn covered(&self, start: u64, len: u64) -> bool {
        matches!(self.reservations.range(..=start).next_back(),
            Some((&s, &l)) if start + len <= s + l)
    }

    /// Reserve the address range `[start, start+len)` from the driver, exactly or inside a
    /// larger reservation around it (the driver treats the address as a hint and may shift it).
    pub fn reserve_covering(&mut self, api: &Api, start: u64, len: u64) -> Result<bool> {
        if self.covered(start, len) {
            return Ok(true);
        }
        let mut got = 0u64;
        let mut last = None;
        let c = RESERVE_CHUNK.max(self.gran);
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
            match cu!(
                api,
                cuMemAddressReserve(&mut got, size as usize, 0, hint, 0)
            ) {
                Ok(()) if got <= start && got + size >= start + len => {
                    self.reservations.insert(got, size);
                    return Ok(true);
                }
                Ok(()) => {
                    last = Some(format!(
                        "the driver put the reservation asked at 0x{hint:x} (+{size} bytes) at 0x{got:x}"
                    ));
                    cu!(api, cuMemAddressFree(got, size as usize))?;
                }
                Err(e) => last = Some(format!("reserving 0x{hint:x}: {e}")),
            }
        }
        if self.first_refusal.is_none() {
            self.first_refusal = last;
        }
        Ok(false)
    }

    /// Reserve every recorded range before anything else takes device addresses (code loading
    /// allocates too): ranges are rounded to the granularity and merged.
    pub fn prereserve(&mut self, api: &Api, ranges: &[(u64, u64)]) -> Result<()> {
        if !self.placement {
            return Ok(());
        }
        let g = RESERVE_CHUNK.max(self.gran);
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
        for (s, e) in merged {
            if !self.reserve_covering(api, s, e - s)? {
                // Try the granules one by one: parts of the run may still be placeable.
                let mut p = s;
                while p < e && (e - s) / g <= 4096 {
                    self.reserve_covering(api, p, g)?;
                    p += g;
                }
            }
        }
        Ok(())
    }

    fn map_page(&mut self, api: &Api, page: u64) -> Result<Option<u64>> {
        let g = self.gran as usize;
        if !self.reserve_covering(api, page, self.gran)? {
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
            // The address range stays reserved (recorded runs reuse addresses).
            let handle = p.handle;
            self.pages.remove(&page);
            cu!(api, cuMemUnmap(page, self.gran as usize))?;
            cu!(api, cuMemRelease(handle))?;
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
