//! Kernel parameter layouts read from the code itself, so that a kernel's first launch need
//! not ask the driver for them one parameter at a time (`cuKernelGetParamInfo`: 11-18 µs per
//! kernel on an H100, inside cudaTensorCoreGemm's timed region).
//!
//! Where they are: each kernel of a cubin (an ELF file) has a section `.nv.info.<name>` of
//! attribute records `{u8 format, u8 attribute, u16 value-or-size}`, followed, for the format
//! `EIFMT_SVAL` (4), by `size` bytes. Attribute `EIATTR_KPARAM_INFO` (0x17) describes one
//! parameter in 12 bytes: `u32` index, `u16` ordinal, `u16` offset in the parameter buffer
//! and a `u32` whose bits 18-31 are its size in bytes. Kernels whose parameters pass 4 KiB
//! (CUDA 12.1 and later) have `EIATTR_KPARAM_INFO_V2` (0x45) records instead: the same index,
//! ordinal and offset, then a `u16` size in bytes and a `u16` of attributes. A fat binary
//! (`0xBA55ED50`) holds entries `{u16 kind, u16, u32 header_size, u64 payload_size, ...}`;
//! kind 2 is an ELF cubin. Entries stored compressed (their payload does not start with the
//! ELF magic) and PTX are not read: their kernels' layouts are asked of the driver as before.
//!
//! Only a complete layout is taken: ordinals 0..n each once, none empty, offsets rising in
//! ordinal order without overlap, the whole inside the 32,764 bytes a launch may pass.
//! Anything else (a format this reader does not know, a damaged record, a kernel without
//! parameters) leaves that kernel to the driver.
//! `HRR_CAPTURE_CHECK_LAYOUTS=1` asks the driver anyway and reports every difference
//! ([`crate::api::cuda::state`]).
//!
//! On by default (`HRR_CAPTURE_LAYOUTS_FROM_CODE=0` turns it off, `hook::profile`): the records
//! are NVIDIA's, undocumented; the reading matches the cubins of nvcc (CUDA 12) and Triton
//! (the test below) and, checked against the driver over real programs on an H100
//! (`scripts/check-layouts.sh`: the CUDA samples and the gpu-e2e workloads), 3,212 layouts
//! with none differing; the V2 records are read as public decoders describe them, not yet seen
//! here.

use std::collections::HashMap;
use std::sync::Arc;

use hrr_archive::CodeKind;

use super::image::FATBIN_MAGIC;
use crate::elf::{self, u16_at, u32_at, u64_at};

/// Kernel name -> `(offset, size)` of each parameter, in order.
pub type Layouts = HashMap<String, Arc<[(u32, u32)]>>;

/// `EIFMT_SVAL`: a record whose `u16` is the size of the bytes that follow.
const EIFMT_SVAL: u8 = 4;
/// `EIATTR_KPARAM_INFO`.
const EIATTR_KPARAM_INFO: u8 = 0x17;
/// `EIATTR_KPARAM_INFO_V2` (parameters past 4 KiB).
const EIATTR_KPARAM_INFO_V2: u8 = 0x45;
/// Bytes of parameters a launch may pass (CUDA 12.1 and later).
const MAX_PARAM_BYTES: u32 = 32_764;
/// Fat binary entry kind of an ELF cubin.
const FATBIN_ELF: u16 = 2;
/// Most ELF entries taken from one image (a bound against garbage).
const MAX_ENTRIES: usize = 4096;

/// The parameter layouts the image declares, by kernel name (empty where it declares none
/// that this reader can read).
pub fn layouts(image: &[u8], kind: CodeKind) -> Layouts {
    let mut out = Layouts::new();
    match kind {
        CodeKind::Cubin => read_cubin(image, &mut out),
        CodeKind::Fatbin => {
            for cubin in fatbin_cubins(image) {
                read_cubin(cubin, &mut out);
            }
        }
        CodeKind::Ptx | CodeKind::Hsaco => {}
    }
    out
}

/// The uncompressed ELF entries of the fat binary (or fat binaries, one after the other) `b`.
fn fatbin_cubins(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while u32_at(b, pos) == Some(FATBIN_MAGIC) {
        let (Some(header), Some(fat)) = (u16_at(b, pos + 6), u64_at(b, pos + 8)) else {
            break;
        };
        let start = pos + header as usize;
        let Some(end) = usize::try_from(fat)
            .ok()
            .and_then(|f| start.checked_add(f))
            .filter(|&e| e <= b.len())
        else {
            break;
        };
        let mut e = start;
        while e + 16 <= end && out.len() < MAX_ENTRIES {
            let (Some(kind), Some(eh), Some(size)) =
                (u16_at(b, e), u32_at(b, e + 4), u64_at(b, e + 8))
            else {
                break;
            };
            let payload_at = e.saturating_add(eh as usize);
            let Some(payload_end) = usize::try_from(size)
                .ok()
                .and_then(|s| payload_at.checked_add(s))
                .filter(|&p| p <= end && eh >= 16)
            else {
                break;
            };
            let payload = &b[payload_at..payload_end];
            if kind == FATBIN_ELF && elf::is_elf64_le(payload) {
                out.push(payload);
            }
            e = payload_end;
        }
        if end <= pos {
            break;
        }
        pos = end;
    }
    out
}

/// Add the layouts of the cubin `elf` to `out` (kernels already there are kept).
fn read_cubin(elf: &[u8], out: &mut Layouts) {
    let Ok(sections) = elf::sections(elf) else {
        return;
    };
    for s in sections {
        let Some(name) = s.name.strip_prefix(b".nv.info.") else {
            continue;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if name.is_empty() || out.contains_key(name) {
            continue;
        }
        if let Some(layout) = kernel_layout(s.data) {
            out.insert(name.to_string(), layout.into());
        }
    }
}

/// The complete parameter layout the attribute records `info` declare, if they declare one.
fn kernel_layout(info: &[u8]) -> Option<Vec<(u32, u32)>> {
    let mut params: Vec<(u16, u32, u32)> = Vec::new();
    let mut p = 0usize;
    while p < info.len() {
        let (format, attr, value) = (*info.get(p)?, *info.get(p + 1)?, u16_at(info, p + 2)?);
        p += 4;
        match format {
            1..=3 => {}
            EIFMT_SVAL => {
                let data = info.get(p..p.checked_add(value as usize)?)?;
                p += value as usize;
                if attr == EIATTR_KPARAM_INFO || attr == EIATTR_KPARAM_INFO_V2 {
                    if data.len() < 12 {
                        return None;
                    }
                    let ordinal = u16_at(data, 4)?;
                    let offset = u16_at(data, 6)? as u32;
                    let size = match attr {
                        EIATTR_KPARAM_INFO => u32_at(data, 8)? >> 18,
                        _ => u16_at(data, 8)? as u32,
                    };
                    params.push((ordinal, offset, size));
                }
            }
            _ => return None, // a format this reader does not know: trust nothing after it
        }
    }
    complete(params)
}

/// `params` (ordinal, offset, size) in ordinal order, if they make a layout a launch can have.
fn complete(mut params: Vec<(u16, u32, u32)>) -> Option<Vec<(u32, u32)>> {
    if params.is_empty() {
        return None;
    }
    params.sort_unstable();
    let mut end_of_previous = 0u32;
    for (i, &(ordinal, offset, size)) in params.iter().enumerate() {
        let well_formed = ordinal as usize == i
            && size > 0
            && offset >= end_of_previous
            && offset.saturating_add(size) <= MAX_PARAM_BYTES;
        if !well_formed {
            return None;
        }
        end_of_previous = offset + size;
    }
    Some(params.into_iter().map(|(_, o, s)| (o, s)).collect())
}

#[cfg(test)]
pub(crate) mod testkit {
    use super::*;

    /// `.nv.info.<kernel>` bytes declaring `params` (`(offset, size)`, in order), listed last
    /// parameter first as nvcc writes them, between other records.
    pub fn nv_info(params: &[(u32, u32)]) -> Vec<u8> {
        let mut b = vec![0x04, 0x2f, 0x08, 0x00, 1, 0, 0, 0, 0x10, 0, 0, 0]; // an SVAL record
        b.extend_from_slice(&[0x03, 0x19, 0x20, 0x00]); // an HVAL record
        for (i, &(offset, size)) in params.iter().enumerate().rev() {
            b.extend_from_slice(&[EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0]);
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&(i as u16).to_le_bytes());
            b.extend_from_slice(&(offset as u16).to_le_bytes());
            b.extend_from_slice(&((size << 18) | 0x1f000).to_le_bytes());
        }
        b.extend_from_slice(&[0x01, 0x0a, 0x00, 0x00]); // an NVAL record
        b
    }

    /// A cubin whose kernels declare the given layouts.
    pub fn cubin(kernels: &[(&str, &[(u32, u32)])]) -> Vec<u8> {
        let infos: Vec<(String, Vec<u8>)> = kernels
            .iter()
            .map(|(k, p)| (format!(".nv.info.{k}"), nv_info(p)))
            .collect();
        let sections: Vec<(&str, u32, &[u8])> = infos
            .iter()
            .map(|(n, b)| (n.as_str(), 0x7000_0000, b.as_slice()))
            .collect();
        elf::testkit::elf_with_sections(&sections)
    }

    /// A fat binary holding `entries` as `(kind, payload)`.
    pub fn fatbin(entries: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, payload) in entries {
            let mut h = [0u8; 64];
            h[..2].copy_from_slice(&kind.to_le_bytes());
            h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            h[4..8].copy_from_slice(&64u32.to_le_bytes());
            h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            body.extend_from_slice(&h);
            body.extend_from_slice(payload);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&(body.len() as u64).to_le_bytes());
        b.extend_from_slice(&body);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;

    const AXPY: &[(u32, u32)] = &[(0, 4), (8, 8), (16, 8), (24, 4)];

    #[test]
    fn reads_layouts_from_a_cubin_and_a_fatbin() {
        let cubin = cubin(&[("_Z4axpyfPfS_i", AXPY), ("_Z1kv", &[])]);
        let l = layouts(&cubin, CodeKind::Cubin);
        assert_eq!(&*l["_Z4axpyfPfS_i"], AXPY);
        assert!(
            !l.contains_key("_Z1kv"),
            "no parameters: left to the driver"
        );
        let other = self::cubin(&[("_Z4axpyfPfS_i", &[(0, 8)]), ("_Z5otherPi", &[(0, 8)])]);
        let compressed = [0x28u8, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0];
        let fat = fatbin(&[
            (1, b".version 8.0\0"),
            (FATBIN_ELF, &compressed),
            (FATBIN_ELF, &cubin),
            (FATBIN_ELF, &other),
        ]);
        let l = layouts(&fat, CodeKind::Fatbin);
        assert_eq!(
            &*l["_Z4axpyfPfS_i"], AXPY,
            "the first entry declaring a kernel wins"
        );
        assert_eq!(&*l["_Z5otherPi"], &[(0, 8)]);
        assert!(layouts(b".version 8.0\0", CodeKind::Ptx).is_empty());
    }

    /// `.nv.info.saxpy_kernel` as nvcc (CUDA 12) and Triton's ptxas wrote it for
    /// `saxpy_kernel(float a, float *x, float *y, float *out, unsigned n)`: besides the five
    /// `EIATTR_KPARAM_INFO` records, `EIATTR_CUDA_API_VERSION`, `EIATTR_MAXREG_COUNT`,
    /// `EIATTR_EXIT_INSTR_OFFSETS`, `EIATTR_CBANK_PARAM_SIZE`, `EIATTR_PARAM_CBANK` and others.
    const NVCC_SAXPY: &str = "043704008000000004170c00000000000400200000f0110004170c0000000000\
        0300180000f0210004170c00000000000200100000f0210004170c0000000000\
        0100080000f0210004170c00000000000000000000f0110003500000031bff00\
        041c0800700000004001000003192400040a0800070000001002240004360400\
        08000000";
    const TRITON_SAXPY: &str = "043704008000000004170c00000000000400200000f0110004170c0000000000\
        0300180000f0210004170c00000000000200100000f0210004170c0000000000\
        0100080000f0210004170c00000000000000000000f0110003500000031bff00\
        041c0800400100006001000004050c0080000000010000000100000003192400\
        040a08000a000000100224000436040008000000";

    #[test]
    fn reads_the_records_nvcc_and_triton_write() {
        let bytes = |hex: &str| -> Vec<u8> {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        };
        for hex in [NVCC_SAXPY, TRITON_SAXPY] {
            assert_eq!(
                kernel_layout(&bytes(hex)).as_deref(),
                Some(&[(0, 4), (8, 8), (16, 8), (24, 8), (32, 4)][..])
            );
        }
    }

    #[test]
    fn reads_the_records_of_parameters_past_4_kib() {
        // kernel(struct { int v[2000]; } big, float *out): 8,000 bytes, then a pointer.
        let record = |ordinal: u16, offset: u16, size: u16, attrs: u16| {
            let mut r = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO_V2, 12, 0, 0, 0, 0, 0];
            for v in [ordinal, offset, size, attrs] {
                r.extend_from_slice(&v.to_le_bytes());
            }
            r
        };
        let mut info = record(1, 8000, 8, 0x0500);
        info.extend(record(0, 0, 8000, 0));
        assert_eq!(
            kernel_layout(&info).as_deref(),
            Some(&[(0, 8000), (8000, 8)][..])
        );
    }

    #[test]
    fn incomplete_or_odd_layouts_are_left_to_the_driver() {
        let ok = |p: Vec<(u16, u32, u32)>| complete(p).is_some();
        assert!(ok(vec![(1, 8, 8), (0, 0, 4)]));
        assert!(
            ok(vec![(0, 0, 24), (1, 24, 1)]),
            "a 24-byte struct, 8-aligned"
        );
        assert!(!ok(vec![(0, 0, 4), (2, 8, 8)]), "a missing ordinal");
        assert!(!ok(vec![(0, 0, 4), (0, 8, 8)]), "an ordinal twice");
        assert!(!ok(vec![(0, 0, 8), (1, 4, 4)]), "overlapping");
        assert!(
            ok(vec![(0, 0, 1), (1, 4, 12)]),
            "a 12-byte struct of ints, 4-aligned"
        );
        assert!(!ok(vec![(0, 0, 0)]), "empty");
        assert!(!ok(vec![(0, 32_760, 8)]), "past the parameter space");
        // A record format the reader does not know stops the section.
        let mut info = nv_info(AXPY);
        info.splice(0..0, [0x09, 0x17, 0, 0]);
        assert_eq!(kernel_layout(&info), None);
        assert_eq!(kernel_layout(&nv_info(AXPY)).as_deref(), Some(AXPY));
    }

    #[test]
    fn damaged_images_give_no_layouts_and_no_panic() {
        let fat = fatbin(&[(FATBIN_ELF, &cubin(&[("_Z1kPi", &[(0, 8)])]))]);
        for n in 0..fat.len() {
            let l = layouts(&fat[..n], CodeKind::Fatbin);
            assert!(l.is_empty() || n == fat.len());
        }
        let mut garbage = fat.clone();
        garbage[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(layouts(&garbage, CodeKind::Fatbin).is_empty());
        assert_eq!(layouts(&fat, CodeKind::Fatbin).len(), 1);
    }
}
