//! AMDGPU code as HIP receives it, and the kernel argument layouts it declares.
//!
//! - `__hipRegisterFatBinary` is handed a wrapper `{u32 magic 0x48495046 ("HIPF"), u32 version,
//!   const void *bundle, void *unused}` whose `bundle` is what hipcc put in `.hip_fatbin`.
//! - A clang offload bundle: `__CLANG_OFFLOAD_BUNDLE__`, `u64` entry count, then per entry
//!   `{u64 offset, u64 size, u64 triple_len, triple}`; offsets are from the bundle's start and
//!   the bundle ends where its furthest entry does. Device entries (`hip*-amdgcn-amd-amdhsa--gfx*`)
//!   are ELF code objects.
//! - An AMDGPU ELF code object carries the `NT_AMDGPU_METADATA` note (owner `AMDGPU`, type 32), a
//!   MessagePack map whose `amdhsa.kernels[]` give `.name`, `.symbol`, `.kernarg_segment_size` and
//!   `.args[]` with `.offset`, `.size` and `.value_kind` (`hidden_*` kinds are filled in by the
//!   runtime, not passed by the program).
//! - A compressed bundle (`CCOB`, clang's `--offload-compress`): `CCOB`, `u16` version, `u16`
//!   method (0 zlib, 1 zstd), then the total length (version 2: `u32`, 3: `u64`; version 1 has
//!   none), the uncompressed length (`u32`, version 3 `u64`) and an 8-byte hash, then the
//!   compressed offload bundle ([`decompress_bundle`]). Sized from its header in memory
//!   (versions 2 and 3), stored as it is, and decompressed (bounded by [`MAX_IMAGE`]) to read
//!   its kernels' layouts.

use std::collections::HashMap;
use std::fmt;

use super::msgpack::{self, Value};
use crate::elf::{u16_at, u32_at, u64_at};

/// Magic of the wrapper `__hipRegisterFatBinary` receives.
pub const HIPF_MAGIC: u32 = 0x4849_5046;
/// Magic of a clang offload bundle.
pub const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed offload bundle.
pub const CCOB_MAGIC: &[u8; 4] = b"CCOB";
/// Program header type of a note segment.
const PT_NOTE: u32 = 4;
/// ELF note type of the AMDGPU code object metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Largest image accepted (a sanity bound against garbage).
pub const MAX_IMAGE: u64 = 4 << 30;
/// Most bundle entries accepted.
const MAX_ENTRIES: u64 = 4096;
/// Longest target triple accepted.
const MAX_TRIPLE: u64 = 4096;

/// Why an image could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(what: impl Into<String>) -> Result<T, Error> {
    Err(Error(what.into()))
}

/// One kernel argument of the metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelArg {
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// `.value_kind` (`by_value`, `global_buffer`, `hidden_global_offset_x`, ...).
    pub value_kind: String,
}

impl KernelArg {
    /// Filled in by the runtime rather than passed by the program.
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// One kernel of the metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// `.name` (the source-level, usually mangled, name).
    pub name: String,
    /// `.symbol` (the kernel descriptor, `<name>.kd`).
    pub symbol: String,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.args`, in order.
    pub args: Vec<KernelArg>,
}

impl Kernel {
    /// `(offset, size)` of the arguments the program passes (hidden ones left out), in order:
    /// what a launch's `void **args` point at, one pointer per entry.
    pub fn explicit_layout(&self) -> Vec<(u32, u32)> {
        self.args
            .iter()
            .filter(|a| !a.is_hidden())
            .map(|a| (a.offset, a.size))
            .collect()
    }
}

/// One entry of an offload bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Target triple, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a`.
    pub triple: String,
    /// The entry's bytes.
    pub bytes: &'a [u8],
}

impl Entry<'_> {
    /// An AMDGPU device entry.
    pub fn is_amdgcn(&self) -> bool {
        self.triple.contains("amdgcn-amd-amdhsa")
    }
}

/// Entries of the offload bundle `b` (which may be followed by unrelated bytes).
pub fn bundle_entries(b: &[u8]) -> Result<Vec<Entry<'_>>, Error> {
    if !b.starts_with(BUNDLE_MAGIC) {
        return err("not a clang offload bundle");
    }
    let short = || Error("offload bundle header is truncated".into());
    let n = u64_at(b, 24).ok_or_else(short)?;
    if n > MAX_ENTRIES {
        return err(format!("offload bundle claims {n} entries"));
    }
    let mut pos = 32usize;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let off = u64_at(b, pos).ok_or_else(short)?;
        let size = u64_at(b, pos + 8).ok_or_else(short)?;
        let tlen = u64_at(b, pos + 16).ok_or_else(short)?;
        if tlen > MAX_TRIPLE {
            return err("offload bundle entry has an implausible triple length");
        }
        pos += 24;
        let triple = b.get(pos..pos + tlen as usize).ok_or_else(short)?;
        pos += tlen as usize;
        let end = off
            .checked_add(size)
            .filter(|&e| e <= b.len() as u64)
            .ok_or_else(|| Error("offload bundle entry lies outside the bundle".into()))?;
        out.push(Entry {
            triple: String::from_utf8_lossy(triple).into_owned(),
            bytes: &b[off as usize..end as usize],
        });
    }
    Ok(out)
}

/// Length of an offload bundle, reading only its header through `read(offset, len)` (which
/// returns `None` past what can be read).
pub fn bundle_len(read: &dyn Fn(u64, usize) -> Option<Vec<u8>>) -> Option<u64> {
    let head = read(0, 32)?;
    if !head.starts_with(BUNDLE_MAGIC) {
        return None;
    }
    let n = u64_at(&head, 24)?;
    if n > MAX_ENTRIES {
        return None;
    }
    let mut pos = 32u64;
    let mut len = pos;
    for _ in 0..n {
        let e = read(pos, 24)?;
        let (off, size, tlen) = (u64_at(&e, 0)?, u64_at(&e, 8)?, u64_at(&e, 16)?);
        if tlen > MAX_TRIPLE {
            return None;
        }
        pos += 24 + tlen;
        len = len.max(pos).max(off.checked_add(size)?);
    }
    (len <= MAX_IMAGE).then_some(len)
}

/// Total length of a compressed bundle (versions 2 and 3 record it; version 1 does not).
pub fn compressed_len(head: &[u8]) -> Option<u64> {
    if !head.starts_with(CCOB_MAGIC) {
        return None;
    }
    let len = match u16_at(head, 4)? {
        2 => u32_at(head, 8)? as u64,
        3 => u64_at(head, 8)?,
        _ => return None,
    };
    (16..=MAX_IMAGE).contains(&len).then_some(len)
}

/// The offload bundle a compressed one (`CCOB`) holds: versions 1 to 3, zstd or zlib, its
/// length the one the header declares (at most [`MAX_IMAGE`]).
pub fn decompress_bundle(image: &[u8]) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let short = || Error("compressed offload bundle header truncated".into());
    let version = u16_at(image, 4).ok_or_else(short)?;
    let method = u16_at(image, 6).ok_or_else(short)?;
    let (header, want) = match version {
        1 => (20, u32_at(image, 8).map(u64::from)),
        2 => (24, u32_at(image, 12).map(u64::from)),
        3 => (32, u64_at(image, 16)),
        v => return err(format!("compressed offload bundle version {v} unknown")),
    };
    let want = want.ok_or_else(short)?;
    if want > MAX_IMAGE {
        return err(format!(
            "compressed offload bundle of {want} bytes uncompressed"
        ));
    }
    let end = match compressed_len(image) {
        Some(n) if n as usize <= image.len() => n as usize,
        Some(n) => return err(format!("compressed offload bundle of {n} bytes truncated")),
        None => image.len(), // version 1 records no length
    };
    let data = image.get(header..end).ok_or_else(short)?;
    let out = match method {
        1 => zstd::bulk::decompress(data, want as usize)
            .map_err(|e| Error(format!("compressed offload bundle (zstd): {e}")))?,
        0 => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(data)
                .take(want + 1)
                .read_to_end(&mut out)
                .map_err(|e| Error(format!("compressed offload bundle (zlib): {e}")))?;
            out
        }
        m => {
            return err(format!(
                "compressed offload bundle: compression method {m} unknown"
            ))
        }
    };
    if out.len() as u64 != want {
        return err(format!(
            "compressed offload bundle: {} bytes uncompressed, its header says {want}",
            out.len()
        ));
    }
    Ok(out)
}

/// The description of the `NT_AMDGPU_METADATA` note of an ELF code object, if it has one.
pub fn elf_metadata_note(elf: &[u8]) -> Result<Option<&[u8]>, Error> {
    // Note ranges: SHT_NOTE sections, else PT_NOTE segments.
    let mut notes: Vec<&[u8]> = crate::elf::sections(elf)
        .map_err(Error)?
        .into_iter()
        .filter(|s| s.kind == crate::elf::SHT_NOTE)
        .map(|s| s.data)
        .collect();
    if notes.is_empty() {
        for (off, size) in crate::elf::segments(elf, PT_NOTE).map_err(Error)? {
            notes.push(
                off.checked_add(size)
                    .and_then(|end| elf.get(off as usize..end as usize))
                    .ok_or_else(|| Error("ELF note lies outside the file".into()))?,
            );
        }
    }
    for notes in notes {
        let mut p = 0usize;
        while p + 12 <= notes.len() {
            let namesz = u32_at(notes, p).unwrap_or(0) as usize;
            let descsz = u32_at(notes, p + 4).unwrap_or(0) as usize;
            let ty = u32_at(notes, p + 8).unwrap_or(0);
            let name_at = p + 12;
            let desc_at = name_at.saturating_add(namesz.div_ceil(4) * 4);
            let next = desc_at.saturating_add(descsz.div_ceil(4) * 4);
            let (Some(name), Some(desc)) = (
                notes.get(name_at..name_at.saturating_add(namesz)),
                notes.get(desc_at..desc_at.saturating_add(descsz)),
            ) else {
                return err("ELF note is truncated");
            };
            if ty == NT_AMDGPU_METADATA && name.split(|&c| c == 0).next() == Some(b"AMDGPU") {
                return Ok(Some(desc));
            }
            p = next;
        }
    }
    Ok(None)
}

fn num(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// Kernels declared by the metadata of an ELF code object (none when it has no metadata note).
pub fn elf_kernels(elf: &[u8]) -> Result<Vec<Kernel>, Error> {
    let Some(note) = elf_metadata_note(elf)? else {
        return Ok(Vec::new());
    };
    let meta = msgpack::decode(note).map_err(|e| Error(format!("AMDGPU metadata: {e}")))?;
    let Some(kernels) = meta.get("amdhsa.kernels").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let Some(name) = k.get(".name").and_then(Value::as_str) else {
            return err("AMDGPU metadata: a kernel without .name");
        };
        let mut args = Vec::new();
        for a in k.get(".args").and_then(Value::as_array).unwrap_or(&[]) {
            let (Some(offset), Some(size)) = (num(a.get(".offset")), num(a.get(".size"))) else {
                return err(format!(
                    "AMDGPU metadata: kernel {name} has an argument without .offset or .size"
                ));
            };
            args.push(KernelArg {
                offset,
                size,
                value_kind: a
                    .get(".value_kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
        out.push(Kernel {
            name: name.to_string(),
            symbol: k
                .get(".symbol")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            kernarg_segment_size: num(k.get(".kernarg_segment_size")).unwrap_or(0),
            args,
        });
    }
    Ok(out)
}

/// Kernels of an image (offload bundle: every device entry, the first declaration of a name
/// kept; ELF code object: its own), by name.
pub fn kernels(image: &[u8]) -> Result<HashMap<String, Kernel>, Error> {
    let mut out = HashMap::new();
    if image.starts_with(BUNDLE_MAGIC) {
        for e in bundle_entries(image)?.into_iter().filter(Entry::is_amdgcn) {
            if e.bytes.is_empty() {
                continue;
            }
            for k in elf_kernels(e.bytes)? {
                out.entry(k.name.clone()).or_insert(k);
            }
        }
    } else if image.starts_with(b"\x7fELF") {
        for k in elf_kernels(image)? {
            out.entry(k.name.clone()).or_insert(k);
        }
    } else if image.starts_with(CCOB_MAGIC) {
        let inner = decompress_bundle(image)?;
        if !inner.starts_with(BUNDLE_MAGIC) {
            return err("a compressed offload bundle that holds no offload bundle");
        }
        return kernels(&inner);
    } else {
        return err("neither an offload bundle nor an ELF code object");
    }
    Ok(out)
}

/// Identify and size the image at `ptr`: a `HIPF` wrapper (followed to its bundle), an offload
/// bundle, a compressed bundle or an ELF code object. Returns where its bytes start and how many
/// there are.
///
/// # Safety
/// `ptr` must point at an image the runtime would accept (readable for its whole length).
pub unsafe fn identify(ptr: *const u8) -> Option<(*const u8, usize)> {
    if ptr.is_null() {
        return None;
    }
    let read = |off: u64, len: usize| -> Option<Vec<u8>> {
        // SAFETY: header fields inside the image the caller vouches for.
        Some(unsafe { std::slice::from_raw_parts(ptr.add(off as usize), len) }.to_vec())
    };
    let head = read(0, 4)?;
    if u32_at(&head, 0) == Some(HIPF_MAGIC) {
        let inner = std::ptr::read_unaligned(ptr.add(8) as *const *const u8);
        if inner.is_null() || std::ptr::read_unaligned(inner as *const u32) == HIPF_MAGIC {
            return None;
        }
        return identify(inner);
    }
    let len = if head == b"\x7fELF" {
        crate::api::cuda::image::elf_len(ptr)?
    } else if head == CCOB_MAGIC {
        compressed_len(&read(0, 16)?)?
    } else if head == BUNDLE_MAGIC[..4] && read(0, 24)? == BUNDLE_MAGIC {
        bundle_len(&read)?
    } else {
        return None;
    };
    (len <= MAX_IMAGE).then_some((ptr, len as usize))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A MessagePack encoder for test inputs.
    pub(crate) enum M<'a> {
        S(&'a str),
        U(u64),
        A(Vec<M<'a>>),
        Map(Vec<(&'a str, M<'a>)>),
    }

    pub(crate) fn enc(m: &M, out: &mut Vec<u8>) {
        match m {
            M::S(s) => {
                out.push(0xd9);
                out.push(s.len() as u8);
                out.extend_from_slice(s.as_bytes());
            }
            M::U(u) => {
                out.push(0xcf);
                out.extend_from_slice(&u.to_be_bytes());
            }
            M::A(v) => {
                out.push(0xdc);
                out.extend_from_slice(&(v.len() as u16).to_be_bytes());
                for x in v {
                    enc(x, out);
                }
            }
            M::Map(v) => {
                out.push(0xde);
                out.extend_from_slice(&(v.len() as u16).to_be_bytes());
                for (k, x) in v {
                    enc(&M::S(k), out);
                    enc(x, out);
                }
            }
        }
    }

    fn arg<'a>(off: u64, size: u64, kind: &'a str) -> M<'a> {
        M::Map(vec![
            (".offset", M::U(off)),
            (".size", M::U(size)),
            (".value_kind", M::S(kind)),
        ])
    }

    /// A minimal ELF64 with one SHT_NOTE section holding an AMDGPU metadata note.
    pub(crate) fn elf_with_note(desc: &[u8]) -> Vec<u8> {
        let mut note = Vec::new();
        note.extend_from_slice(&7u32.to_le_bytes());
        note.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        note.extend_from_slice(&NT_AMDGPU_METADATA.to_le_bytes());
        note.extend_from_slice(b"AMDGPU\0\0");
        note.extend_from_slice(desc);
        while note.len() % 4 != 0 {
            note.push(0);
        }
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        let note_off = 64u64;
        elf.extend_from_slice(&note);
        let shoff = elf.len() as u64;
        elf[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        elf.extend_from_slice(&[0u8; 64]); // section 0
        let mut sh = [0u8; 64];
        sh[4..8].copy_from_slice(&7u32.to_le_bytes());
        sh[0x18..0x20].copy_from_slice(&note_off.to_le_bytes());
        sh[0x20..0x28].copy_from_slice(&(note.len() as u64).to_le_bytes());
        elf.extend_from_slice(&sh);
        elf
    }

    pub(crate) fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut head = BUNDLE_MAGIC.to_vec();
        head.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let head_len = 32 + entries.iter().map(|(t, _)| 24 + t.len()).sum::<usize>();
        let mut off = head_len.div_ceil(16) * 16;
        let mut body = Vec::new();
        for (t, b) in entries {
            head.extend_from_slice(&(off as u64).to_le_bytes());
            head.extend_from_slice(&(b.len() as u64).to_le_bytes());
            head.extend_from_slice(&(t.len() as u64).to_le_bytes());
            head.extend_from_slice(t.as_bytes());
            body.push((off, *b));
            off += b.len();
        }
        for (o, b) in body {
            head.resize(o, 0);
            head.extend_from_slice(b);
        }
        head
    }

    pub(crate) fn sample_metadata() -> Vec<u8> {
        let meta = M::Map(vec![
            (
                "amdhsa.kernels",
                M::A(vec![M::Map(vec![
                    (".name", M::S("_Z5saxpyfPKfPfi")),
                    (".symbol", M::S("_Z5saxpyfPKfPfi.kd")),
                    (".kernarg_segment_size", M::U(56)),
                    (
                        ".args",
                        M::A(vec![
                            arg(0, 4, "by_value"),
                            arg(8, 8, "global_buffer"),
                            arg(16, 8, "global_buffer"),
                            arg(24, 4, "by_value"),
                            arg(32, 8, "hidden_global_offset_x"),
                            arg(40, 8, "hidden_hostcall_buffer"),
                        ]),
                    ),
                ])]),
            ),
            ("amdhsa.target", M::S("amdgcn-amd-amdhsa--gfx90a")),
        ]);
        let mut out = Vec::new();
        enc(&meta, &mut out);
        out
    }

    /// A code object with the sample metadata, and a bundle of it beside an empty host entry.
    fn sample_bundle() -> (Vec<u8>, Vec<u8>) {
        let elf = elf_with_note(&sample_metadata());
        let b = bundle(&[
            ("host-x86_64-unknown-linux", &[]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &elf),
        ]);
        (elf, b)
    }

    #[test]
    fn reads_kernel_layouts_from_a_bundle() {
        let (elf, b) = sample_bundle();
        let ks = kernels(&b).unwrap();
        let k = &ks["_Z5saxpyfPKfPfi"];
        assert_eq!(k.kernarg_segment_size, 56);
        assert_eq!(k.args.len(), 6);
        assert_eq!(k.explicit_layout(), vec![(0, 4), (8, 8), (16, 8), (24, 4)]);
        assert_eq!(k.symbol, "_Z5saxpyfPKfPfi.kd");
        // the ELF alone reads the same
        assert_eq!(kernels(&elf).unwrap()["_Z5saxpyfPKfPfi"], *k);
        // sizing from the header alone
        let read = |o: u64, l: usize| b.get(o as usize..o as usize + l).map(<[u8]>::to_vec);
        assert_eq!(bundle_len(&read), Some(b.len() as u64));
        // identify in memory, through the HIPF wrapper
        #[repr(C)]
        struct Wrapper(u32, u32, *const u8, *const u8);
        let w = Wrapper(HIPF_MAGIC, 1, b.as_ptr(), std::ptr::null());
        let got = unsafe { identify(&w as *const Wrapper as *const u8) }.unwrap();
        assert_eq!(got, (b.as_ptr(), b.len()));
        let got = unsafe { identify(elf.as_ptr()) }.unwrap();
        assert_eq!(got.1, elf.len());
    }

    /// A compressed offload bundle (`CCOB`) of `bundle`, as clang writes it: header `version`,
    /// `method` 0 zlib or 1 zstd.
    pub(crate) fn ccob(version: u16, method: u16, bundle: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let data = if method == 0 {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(bundle).unwrap();
            z.finish().unwrap()
        } else {
            zstd::bulk::compress(bundle, 3).unwrap()
        };
        let header = match version {
            1 => 20,
            2 => 24,
            _ => 32,
        };
        let total = (header + data.len()) as u64;
        let mut out = b"CCOB".to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&method.to_le_bytes());
        match version {
            1 => out.extend_from_slice(&(bundle.len() as u32).to_le_bytes()),
            2 => {
                out.extend_from_slice(&(total as u32).to_le_bytes());
                out.extend_from_slice(&(bundle.len() as u32).to_le_bytes());
            }
            _ => {
                out.extend_from_slice(&total.to_le_bytes());
                out.extend_from_slice(&(bundle.len() as u64).to_le_bytes());
            }
        }
        out.extend_from_slice(&0x0123_4567_89ab_cdefu64.to_le_bytes()); // the hash, unchecked
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn reads_kernel_layouts_from_a_compressed_bundle() {
        let (_, b) = sample_bundle();
        let want = kernels(&b).unwrap();
        for (version, method) in [(1, 1), (2, 1), (3, 1), (2, 0), (3, 0)] {
            let c = ccob(version, method, &b);
            assert_eq!(
                kernels(&c).unwrap(),
                want,
                "version {version}, method {method}"
            );
            if version > 1 {
                // sized in memory from its header
                let got = unsafe { identify(c.as_ptr()) }.unwrap();
                assert_eq!(got.1, c.len());
            }
        }
    }

    #[test]
    fn damaged_images_are_errors() {
        let elf = elf_with_note(&sample_metadata());
        let b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &elf)]);
        for cut in [10, 40, 60, b.len() - 1] {
            assert!(kernels(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = elf.clone();
        bad[64 + 20] = 0xc1; // a reserved msgpack tag inside the note
        assert!(kernels(&bad).is_err());
        assert!(kernels(b"CCOB\x03\x00\x01\x00").is_err());
        // a compressed bundle whose data is not what its header says
        let mut liar = ccob(3, 1, &b);
        liar[16] ^= 1; // uncompressed length
        assert!(kernels(&liar).is_err());
        assert!(kernels(&ccob(3, 7, &b)).is_err(), "an unknown method");
        let cut = ccob(2, 1, &b);
        assert!(kernels(&cut[..cut.len() - 1]).is_err(), "truncated");
        assert!(kernels(b"garbage").is_err());
        assert_eq!(elf_kernels(&elf_with_note(&[0x80])).unwrap(), vec![]);
        let mut ccob = b"CCOB".to_vec();
        ccob.extend_from_slice(&3u16.to_le_bytes());
        ccob.extend_from_slice(&1u16.to_le_bytes());
        ccob.extend_from_slice(&100u64.to_le_bytes());
        assert_eq!(compressed_len(&ccob), Some(100));
    }
}
