//! Reading the sections of a 64-bit little-endian ELF file held in memory: what the AMDGPU
//! code-object reader (`api::hip::code_object`, its metadata note) and the CUDA cubin reader
//! (`api::cuda::param_info`, its `.nv.info.*` sections) share. Every offset is bounds-checked;
//! a damaged file is an error, never a panic or a read outside the slice.

/// Section type of a note section (`SHT_NOTE`).
pub const SHT_NOTE: u32 = 7;
/// Section type of a section without bytes in the file (`SHT_NOBITS`).
const SHT_NOBITS: u32 = 8;

/// A little-endian `u16` at `off` of `b`.
pub fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// A little-endian `u32` at `off` of `b`.
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// A little-endian `u64` at `off` of `b`.
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// One section of an ELF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section<'a> {
    /// Its name from the section-name string table (empty where the file has none).
    pub name: &'a [u8],
    /// `sh_type`.
    pub kind: u32,
    /// Its bytes in the file (empty for `SHT_NOBITS`).
    pub data: &'a [u8],
}

/// Whether `b` starts like a 64-bit little-endian ELF file.
pub fn is_elf64_le(b: &[u8]) -> bool {
    b.starts_with(b"\x7fELF") && b.get(4) == Some(&2) && b.get(5) == Some(&1)
}

/// The program header entries of type `p_type`, as `(p_offset, p_filesz)`.
pub fn segments(elf: &[u8], p_type: u32) -> Result<Vec<(u64, u64)>, String> {
    check_header(elf)?;
    let bad = || "ELF program headers are truncated".to_string();
    let phoff = u64_at(elf, 0x20).ok_or_else(bad)? as usize;
    let phentsize = u16_at(elf, 0x36).ok_or_else(bad)? as usize;
    let phnum = u16_at(elf, 0x38).ok_or_else(bad)? as usize;
    let mut out = Vec::new();
    for i in 0..phnum {
        let ph = phoff.saturating_add(i.saturating_mul(phentsize));
        if u32_at(elf, ph) == Some(p_type) {
            out.push((
                u64_at(elf, ph + 0x08).ok_or_else(bad)?,
                u64_at(elf, ph + 0x20).ok_or_else(bad)?,
            ));
        }
    }
    Ok(out)
}

fn check_header(elf: &[u8]) -> Result<(), String> {
    if !elf.starts_with(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    if !is_elf64_le(elf) {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    Ok(())
}

/// The sections of `elf`, in order, with their names.
pub fn sections(elf: &[u8]) -> Result<Vec<Section<'_>>, String> {
    check_header(elf)?;
    let bad = || "ELF section headers are truncated".to_string();
    let shoff = u64_at(elf, 0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(elf, 0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(elf, 0x3c).ok_or_else(bad)? as usize;
    let shstrndx = u16_at(elf, 0x3e).ok_or_else(bad)? as usize;
    if shnum > 0 && shentsize < 0x28 {
        return Err(format!("ELF section header size {shentsize} is too small"));
    }
    let header = |i: usize| shoff.saturating_add(i.saturating_mul(shentsize));
    let data_of = |sh: usize| -> Result<&[u8], String> {
        if u32_at(elf, sh + 4).ok_or_else(bad)? == SHT_NOBITS {
            return Ok(&[]);
        }
        let off = u64_at(elf, sh + 0x18).ok_or_else(bad)?;
        let size = u64_at(elf, sh + 0x20).ok_or_else(bad)?;
        off.checked_add(size)
            .and_then(|end| elf.get(usize::try_from(off).ok()?..usize::try_from(end).ok()?))
            .ok_or_else(|| "an ELF section lies outside the file".to_string())
    };
    let names = if shstrndx != 0 && shstrndx < shnum {
        data_of(header(shstrndx))?
    } else {
        &[]
    };
    (0..shnum)
        .map(|i| {
            let sh = header(i);
            let name_at = u32_at(elf, sh).ok_or_else(bad)? as usize;
            let name = names.get(name_at..).unwrap_or(&[]);
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            Ok(Section {
                name,
                kind: u32_at(elf, sh + 4).ok_or_else(bad)?,
                data: data_of(sh)?,
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod testkit {
    /// A minimal ELF64 (little-endian) holding `sections` as `(name, sh_type, bytes)`, with a
    /// section-name string table.
    pub fn elf_with_sections(sections: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let mut names = vec![0u8];
        let mut name_at = Vec::new();
        for (n, _, _) in sections {
            name_at.push(names.len() as u32);
            names.extend_from_slice(n.as_bytes());
            names.push(0);
        }
        let shstrtab_name = names.len() as u32;
        names.extend_from_slice(b".shstrtab\0");
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        let mut placed = Vec::new();
        for (_, _, bytes) in sections {
            placed.push((elf.len() as u64, bytes.len() as u64));
            elf.extend_from_slice(bytes);
        }
        let names_at = elf.len() as u64;
        elf.extend_from_slice(&names);
        while !elf.len().is_multiple_of(8) {
            elf.push(0);
        }
        let shoff = elf.len() as u64;
        let count = sections.len() + 2;
        elf[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&(count as u16).to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&((count - 1) as u16).to_le_bytes());
        let header = |name: u32, ty: u32, (off, size): (u64, u64)| {
            let mut sh = [0u8; 64];
            sh[..4].copy_from_slice(&name.to_le_bytes());
            sh[4..8].copy_from_slice(&ty.to_le_bytes());
            sh[0x18..0x20].copy_from_slice(&off.to_le_bytes());
            sh[0x20..0x28].copy_from_slice(&size.to_le_bytes());
            sh
        };
        elf.extend_from_slice(&[0u8; 64]); // section 0
        for (i, (_, ty, _)) in sections.iter().enumerate() {
            elf.extend_from_slice(&header(name_at[i], *ty, placed[i]));
        }
        elf.extend_from_slice(&header(shstrtab_name, 3, (names_at, names.len() as u64)));
        elf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_with_their_names() {
        let elf =
            testkit::elf_with_sections(&[(".nv.info.k", 0x7000_0000, b"abcd"), (".x", 1, b"")]);
        let s = sections(&elf).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[1].name, b".nv.info.k");
        assert_eq!(s[1].kind, 0x7000_0000);
        assert_eq!(s[1].data, b"abcd");
        assert_eq!(s[2].name, b".x");
        assert_eq!(s[3].name, b".shstrtab");
    }

    #[test]
    fn damaged_files_are_errors_not_panics() {
        let elf = testkit::elf_with_sections(&[(".a", 1, b"0123456789")]);
        assert!(sections(b"\x7fELF").is_err());
        assert!(sections(b"MZ").is_err());
        let mut big_endian = elf.clone();
        big_endian[5] = 2;
        assert!(sections(&big_endian).is_err());
        // Every truncation of a good file is refused or read within the slice.
        for n in 0..elf.len() {
            let _ = sections(&elf[..n]);
        }
        // A section whose bytes lie past the end.
        let mut far = elf.clone();
        let sh1 = u64_at(&elf, 0x28).unwrap() as usize + 64;
        far[sh1 + 0x18..sh1 + 0x20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(sections(&far).is_err());
    }
}
