//! glibc versions: the newest `GLIBC_x.y` a dynamically linked binary asks for (its ELF
//! `.gnu.version_r` section), and the newest a base image's `libc.so.6` provides.

use std::fmt;
use std::io::Read;

/// A glibc symbol version, `GLIBC_<major>.<minor>[.<patch>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlibcVersion(pub u32, pub u32, pub u32);

impl fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.2 == 0 {
            write!(f, "{}.{}", self.0, self.1)
        } else {
            write!(f, "{}.{}.{}", self.0, self.1, self.2)
        }
    }
}

impl GlibcVersion {
    /// Parse `2.34` or `2.2.5` (the part after `GLIBC_`).
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        let patch = match it.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        it.next()
            .is_none()
            .then_some(GlibcVersion(major, minor, patch))
    }
}

/// What the binary needs from the C library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    /// Dynamically linked against glibc; the newest symbol version it references.
    Glibc(GlibcVersion),
    /// Not a dynamically linked glibc program (static, or no versioned glibc references).
    Nothing,
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// Is `elf` a 64-bit little-endian x86-64 ELF file?
pub fn is_x86_64_elf(elf: &[u8]) -> bool {
    elf.len() > 64
        && &elf[..4] == b"\x7fELF"
        && elf[4] == 2
        && elf[5] == 1
        && u16_at(elf, 18) == Some(62)
}

/// The newest `GLIBC_*` version in the ELF's version-needed section (`SHT_GNU_verneed`).
/// `None` when the file is not a 64-bit little-endian ELF or its tables are malformed.
pub fn needed(elf: &[u8]) -> Option<Needs> {
    const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
    if !is_x86_64_elf(elf) {
        return None;
    }
    let shoff = u64_at(elf, 0x28)? as usize;
    let shentsize = u16_at(elf, 0x3a)? as usize;
    let shnum = u16_at(elf, 0x3c)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, u32)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            u32_at(elf, h + 4)?,
            u64_at(elf, h + 0x18)? as usize,
            u64_at(elf, h + 0x20)? as usize,
            u32_at(elf, h + 0x28)?,
        ))
    };
    let mut best: Option<GlibcVersion> = None;
    for i in 0..shnum {
        let (ty, off, size, link) = section(i)?;
        if ty != SHT_GNU_VERNEED {
            continue;
        }
        let (_, str_off, str_size, _) = section(link as usize)?;
        let strtab = elf.get(str_off..str_off.checked_add(str_size)?)?;
        let name_at = |o: u32| -> Option<&str> {
            let s = strtab.get(o as usize..)?;
            let end = s.iter().position(|&b| b == 0)?;
            std::str::from_utf8(&s[..end]).ok()
        };
        let mut vn = off;
        for _ in 0..4096 {
            if vn + 16 > off + size {
                break;
            }
            let cnt = u16_at(elf, vn + 2)?;
            let aux = u32_at(elf, vn + 8)? as usize;
            let next = u32_at(elf, vn + 12)? as usize;
            let mut a = vn.checked_add(aux)?;
            for _ in 0..cnt {
                if let Some(v) = name_at(u32_at(elf, a + 8)?)
                    .and_then(|n| n.strip_prefix("GLIBC_"))
                    .and_then(GlibcVersion::parse)
                {
                    best = best.max(Some(v));
                }
                let an = u32_at(elf, a + 12)? as usize;
                if an == 0 {
                    break;
                }
                a = a.checked_add(an)?;
            }
            if next == 0 {
                break;
            }
            vn = vn.checked_add(next)?;
        }
    }
    Some(best.map_or(Needs::Nothing, Needs::Glibc))
}

/// The newest `GLIBC_x.y` string in a C library's bytes (glibc's `libc.so.6` names every
/// version it defines in its dynamic string table).
pub fn provided_by_libc(mut libc: impl Read) -> std::io::Result<Option<GlibcVersion>> {
    let mut bytes = Vec::new();
    libc.read_to_end(&mut bytes)?;
    let mut best = None;
    let pat = b"GLIBC_";
    let mut i = 0;
    while let Some(p) = bytes[i..].windows(pat.len()).position(|w| w == pat) {
        let start = i + p + pat.len();
        let end = bytes[start..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'.'))
            .map_or(bytes.len(), |e| start + e);
        if let Some(v) = std::str::from_utf8(&bytes[start..end])
            .ok()
            .and_then(GlibcVersion::parse)
        {
            best = best.max(Some(v));
        }
        i = end.max(start);
    }
    Ok(best)
}

/// The version in an old-style glibc file name, `libc-2.31.so`.
pub fn from_file_name(name: &str) -> Option<GlibcVersion> {
    GlibcVersion::parse(name.strip_prefix("libc-")?.strip_suffix(".so")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(GlibcVersion::parse("2.2.5"), Some(GlibcVersion(2, 2, 5)));
        assert!(GlibcVersion::parse("2.34").unwrap() > GlibcVersion::parse("2.2.5").unwrap());
        assert_eq!(GlibcVersion::parse("PRIVATE"), None);
        assert_eq!(from_file_name("libc-2.31.so"), Some(GlibcVersion(2, 31, 0)));
    }

    #[test]
    fn libc_strings_give_the_newest_version() {
        let fake = b"\0GLIBC_2.2.5\0GLIBC_PRIVATE\0GLIBC_2.17\0GLIBC_2.3\0";
        assert_eq!(
            provided_by_libc(&fake[..]).unwrap(),
            Some(GlibcVersion(2, 17, 0))
        );
    }

    #[test]
    fn this_test_binary_needs_some_glibc() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        match needed(&me).expect("an ELF") {
            Needs::Glibc(v) => assert!(v >= GlibcVersion(2, 2, 5), "{v}"),
            Needs::Nothing => panic!("test binaries link glibc dynamically"),
        }
        assert_eq!(needed(b"#!/bin/sh\n"), None);
    }
}
