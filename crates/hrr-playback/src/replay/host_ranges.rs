//! Host address ranges kept free, from before the driver loads, for the host memory a capture
//! made visible to the device (pinned allocations, registrations): the device reaches such
//! memory at its host address (unified addressing), and programs keep that address in device
//! memory (NCCL keeps the addresses of its pinned flags in the structures its kernels read), so
//! replay must re-create it there. Left to chance, the address was often taken by then: by the
//! driver's own mappings, or by replay's reservations of the device ranges around it (the
//! driver allocates both from one address space), and the memory went elsewhere, translated
//! where replay sees a pointer but not inside device memory (an NCCL all-gather read a flag at
//! the recorded address and faulted).
//!
//! The recorded ranges are rounded to pages and merged where they share one (the driver
//! suballocates small pinned allocations from one mapping: a 4-byte flag and a 1 MiB buffer
//! shared a page), each merged block held by an inaccessible anonymous mapping
//! ([`HostRanges::reserve`]). The backend makes a block usable when the first allocation in it
//! is replayed ([`HostRanges::make_usable`]) and registers it with the driver; the block stays
//! until replay ends.
//!
//! Device memory comes first: the driver interleaves device and host memory in one address
//! range, and device reservations are asked for in 32 MiB chunks, which the driver honours
//! only whole (asked for a piece that stops short of a held host block, it put the whole piece
//! past the block: NCCL's 190 MiB of reservations went 192 MiB higher and its kernels faulted
//! reading them). So a block inside a chunk device memory needs is given up before the device
//! ranges are reserved ([`HostRanges::give_up_meeting`]); its memory is then backed inside
//! that reservation by the driver's host memory mapped like device memory, at its address
//! (`Placement::map_host`; the host reaches it through copies), and only where that fails
//! goes elsewhere, translated.

use std::collections::BTreeMap;
use std::ffi::c_void;

use anyhow::{bail, Result};

/// Linux `MAP_FIXED_NOREPLACE`.
const MAP_FIXED_NOREPLACE: i32 = 0x100000;
const PAGE: u64 = 4096;

/// A held block of host addresses.
#[derive(Debug, Clone, Copy)]
struct Block {
    len: u64,
    usable: bool,
}

/// The held blocks, by start address.
#[derive(Debug, Default)]
pub struct HostRanges {
    blocks: BTreeMap<u64, Block>,
}

/// `[start, end)` page-rounded ranges merged where they overlap.
fn merged_pages(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut pages: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|&&(a, n)| a != 0 && n != 0)
        .filter_map(|&(a, n)| Some((a / PAGE * PAGE, a.checked_add(n)?.div_ceil(PAGE) * PAGE)))
        .collect();
    pages.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in pages {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

impl HostRanges {
    /// Hold the recorded host ranges `ranges` (address, length): each merged block is mapped
    /// inaccessible at its address, where that address is free now (others are left out),
    /// except blocks meeting `device` (`(start, end)`: the spans device memory will be
    /// reserved in). Those are never held: a block held there from before the driver loads
    /// moves the driver's own mappings into the span, and the device reservation then fails
    /// even after the block is let go (seen on the H200: a 256 KiB pinned buffer among a
    /// VMM range and `cuMemAlloc` blocks sent their 32 MiB chunk elsewhere, and a kernel
    /// following pointers stored in device memory faulted).
    pub fn reserve(ranges: &[(u64, u64)], device: &[(u64, u64)]) -> HostRanges {
        let mut held = HostRanges::default();
        let meets_device = |s: u64, e: u64| device.iter().any(|&(a, b)| a < e && s < b);
        for (s, e) in merged_pages(ranges) {
            if meets_device(s, e) {
                continue;
            }
            // SAFETY: a fresh inaccessible mapping that replaces nothing (MAP_FIXED_NOREPLACE).
            let p = unsafe {
                libc::mmap(
                    s as *mut c_void,
                    (e - s) as usize,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE
                        | libc::MAP_ANONYMOUS
                        | libc::MAP_NORESERVE
                        | MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                continue;
            }
            if p as u64 != s {
                // SAFETY: the mapping just made (an old kernel put it elsewhere).
                unsafe { libc::munmap(p, (e - s) as usize) };
                continue;
            }
            held.blocks.insert(
                s,
                Block {
                    len: e - s,
                    usable: false,
                },
            );
        }
        held
    }

    /// The held blocks, `(start, end)`.
    #[cfg(test)]
    fn spans(&self) -> Vec<(u64, u64)> {
        self.blocks.iter().map(|(&s, b)| (s, s + b.len)).collect()
    }

    /// The held block containing `[addr, addr+len)`: its start, length and whether it was made
    /// usable already.
    pub fn block_of(&self, addr: u64, len: u64) -> Option<(u64, u64, bool)> {
        let (&s, b) = self.blocks.range(..=addr).next_back()?;
        (addr.checked_add(len.max(1))? <= s + b.len).then_some((s, b.len, b.usable))
    }

    /// Make the held block at `start` readable and writable (zeroed), once.
    pub fn make_usable(&mut self, start: u64) -> Result<()> {
        let Some(b) = self.blocks.get_mut(&start) else {
            bail!("no host block is held at 0x{start:x}");
        };
        if b.usable {
            return Ok(());
        }
        // SAFETY: replaces this module's own inaccessible mapping of the block, nothing else.
        let p = unsafe {
            libc::mmap(
                start as *mut c_void,
                b.len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "mapping the host block at 0x{start:x} (+{} bytes): {}",
                b.len,
                std::io::Error::last_os_error()
            );
        }
        b.usable = true;
        Ok(())
    }

    /// Give up every block that meets one of `spans` (`(start, end)`): device memory is placed
    /// there (see [`HostRanges`]).
    pub fn give_up_meeting(&mut self, spans: &[(u64, u64)]) {
        let meeting: Vec<u64> = self
            .blocks
            .iter()
            .filter(|(&s, b)| spans.iter().any(|&(a, e)| a < s + b.len && s < e))
            .map(|(&s, _)| s)
            .collect();
        for s in meeting {
            self.give_up(s);
        }
    }

    /// Give the block at `start` up (the driver would not register it): unmapped, no longer
    /// held.
    pub fn give_up(&mut self, start: u64) {
        if let Some(b) = self.blocks.remove(&start) {
            // SAFETY: this module's own mapping of the block.
            unsafe { libc::munmap(start as *mut c_void, b.len as usize) };
        }
    }
}

impl Drop for HostRanges {
    fn drop(&mut self) {
        for (&s, b) in &self.blocks {
            // SAFETY: this module's own mappings.
            unsafe { libc::munmap(s as *mut c_void, b.len as usize) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_sharing_a_page_are_one_block() {
        // a 4-byte flag and a 1 MiB buffer the driver put 512 bytes after it; another page apart
        let merged = merged_pages(&[
            (0x7000_0000_0000, 4),
            (0x7000_0000_0200, 1 << 20),
            (0x7000_0020_0000, 8),
            (0, 5),
        ]);
        assert_eq!(
            merged,
            [
                (0x7000_0000_0000, 0x7000_0010_1000),
                (0x7000_0020_0000, 0x7000_0020_1000)
            ]
        );
    }

    #[test]
    fn a_held_block_is_free_for_its_memory_only() {
        // an address far from anything this test process maps
        let base = 0x6f00_0000_0000u64;
        let mut held = HostRanges::reserve(
            &[(base, 10), (base + 100, 3000), (base + 0x10_0000, 1)],
            &[],
        );
        assert_eq!(
            held.spans(),
            [(base, base + 4096), (base + 0x10_0000, base + 0x10_1000)]
        );
        assert_eq!(held.block_of(base + 100, 3000), Some((base, 4096, false)));
        assert_eq!(held.block_of(base + 100, 4096), None);
        // nothing else gets the held addresses
        // SAFETY: asks for a mapping that must not replace the held one.
        let p = unsafe {
            libc::mmap(
                base as *mut c_void,
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(p, libc::MAP_FAILED);
        held.make_usable(base).unwrap();
        // SAFETY: the block was made readable and writable.
        unsafe {
            *((base + 100) as *mut u32) = 7;
            assert_eq!(*((base + 100) as *const u32), 7);
        }
        assert_eq!(held.block_of(base, 1), Some((base, 4096, true)));
        held.give_up(base);
        assert_eq!(held.block_of(base, 1), None);
        // a block inside a span device memory needs is given up, one outside it kept
        held.give_up_meeting(&[(base + 0x8_0000, base + 0x20_0000)]);
        assert!(held.spans().is_empty());
        let mut held = HostRanges::reserve(&[(base, 1), (base + 0x40_0000, 1)], &[]);
        held.give_up_meeting(&[(base + 0x20_0000, base + 0x40_0000)]);
        assert_eq!(
            held.spans(),
            [(base, base + 4096), (base + 0x40_0000, base + 0x40_1000)]
        );
        held.give_up_meeting(&[(base + 0x20_0000, base + 0x40_0001)]);
        assert_eq!(held.spans(), [(base, base + 4096)]);
    }

    #[test]
    fn blocks_among_device_memory_are_never_held() {
        let base = 0x6e00_0000_0000u64;
        // device memory's chunk [base + 32 MiB, base + 64 MiB): the pinned buffer inside it is
        // left to the driver; the ones outside are held
        let device = [(base + (32 << 20), base + (64 << 20))];
        let held = HostRanges::reserve(
            &[
                (base, 1),
                (base + (40 << 20), 1 << 18),
                (base + (64 << 20), 8),
            ],
            &device,
        );
        assert_eq!(
            held.spans(),
            [
                (base, base + 4096),
                (base + (64 << 20), base + (64 << 20) + 4096)
            ]
        );
        // nothing of this process holds the address inside the chunk
        assert_eq!(held.block_of(base + (40 << 20), 1), None);
    }
}
