//! Sizing GPU code images that the driver receives as bare pointers: the fatbin wrapper cudart
//! passes, fat binaries, ELF cubins and NUL-terminated PTX. See the table in
//! `cuda-interposition-notes.md` §6.

use hrr_archive::CodeKind;

/// Magic of cudart's fatbin wrapper struct `{u32 magic, u32 version, const void *data, void *}`.
pub const FATBIN_WRAPPER_MAGIC: u32 = 0x466243B1;
/// Magic of a fat binary `{u32 magic, u16 version, u16 header_size, u64 fat_size}`.
pub const FATBIN_MAGIC: u32 = 0xBA55ED50;
/// Largest image accepted (a sanity bound against garbage).
pub const MAX_IMAGE: u64 = 4 << 30;

/// Where an image's bytes are, how long it is and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image {
    /// First byte (the fatbin itself when given a wrapper).
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
    /// Kind.
    pub kind: CodeKind,
}

unsafe fn read_u32(p: *const u8) -> u32 {
    u32::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 4]))
}
unsafe fn read_u16(p: *const u8) -> u16 {
    u16::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 2]))
}
unsafe fn read_u64(p: *const u8) -> u64 {
    u64::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 8]))
}

/// Identify and size the image at `ptr`.
///
/// # Safety
/// `ptr` must point at a code image the driver would accept (readable for its whole length).
pub unsafe fn identify(ptr: *const u8) -> Option<Image> {
    if ptr.is_null() {
        return None;
    }
    let magic = read_u32(ptr);
    match magic {
        FATBIN_WRAPPER_MAGIC => {
            let data = std::ptr::read_unaligned(ptr.add(8) as *const *const u8);
            if data.is_null() || data == ptr {
                return None;
            }
            identify(data)
        }
        FATBIN_MAGIC => {
            let header = read_u16(ptr.add(6)) as u64;
            let fat = read_u64(ptr.add(8));
            let len = header.checked_add(fat).filter(|&l| l <= MAX_IMAGE)?;
            Some(Image {
                ptr,
                len: len as usize,
                kind: CodeKind::Fatbin,
            })
        }
        0x464C457F => {
            let len = elf_len(ptr)?;
            Some(Image {
                ptr,
                len: len as usize,
                kind: CodeKind::Cubin,
            })
        }
        _ => {
            let len = libc::strlen(ptr as *const libc::c_char) as u64 + 1;
            (len <= MAX_IMAGE).then_some(Image {
                ptr,
                len: len as usize,
                kind: CodeKind::Ptx,
            })
        }
    }
}

/// Length of a 64-bit ELF in memory: the furthest of the section table, the program header
/// table and the end of every non-NOBITS section.
pub(crate) unsafe fn elf_len(p: *const u8) -> Option<u64> {
    if *p.add(4) != 2 {
        return None; // not ELFCLASS64
    }
    let phoff = read_u64(p.add(0x20));
    let shoff = read_u64(p.add(0x28));
    let phentsize = read_u16(p.add(0x36)) as u64;
    let phnum = read_u16(p.add(0x38)) as u64;
    let shentsize = read_u16(p.add(0x3A)) as u64;
    let shnum = read_u16(p.add(0x3C)) as u64;
    let mut end = 64u64
        .max(shoff + shnum * shentsize)
        .max(phoff + phnum * phentsize);
    if end > MAX_IMAGE {
        return None;
    }
    for i in 0..shnum {
        let sh = p.add((shoff + i * shentsize) as usize);
        let sh_type = read_u32(sh.add(4));
        if sh_type == 8 {
            continue; // SHT_NOBITS
        }
        let off = read_u64(sh.add(0x18));
        let size = read_u64(sh.add(0x20));
        end = end.max(off.saturating_add(size));
    }
    (end <= MAX_IMAGE).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_wrapper_fatbin_and_ptx() {
        let mut fat = [0u8; 16 + 40];
        fat[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fat[4..6].copy_from_slice(&1u16.to_le_bytes());
        fat[6..8].copy_from_slice(&16u16.to_le_bytes());
        fat[8..16].copy_from_slice(&40u64.to_le_bytes());
        #[repr(C)]
        struct Wrapper(u32, u32, *const u8, *const u8);
        let w = Wrapper(FATBIN_WRAPPER_MAGIC, 1, fat.as_ptr(), std::ptr::null());
        let img = unsafe { identify(&w as *const Wrapper as *const u8) }.unwrap();
        assert_eq!(
            (img.ptr, img.len, img.kind),
            (fat.as_ptr(), 56, CodeKind::Fatbin)
        );
        let ptx = b".version 8.0\n.entry k\n\0";
        let img = unsafe { identify(ptx.as_ptr()) }.unwrap();
        assert_eq!((img.len, img.kind), (ptx.len(), CodeKind::Ptx));
    }
}
