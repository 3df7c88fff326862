//! Shared builders for tests, examples and benchmarks (cargo feature `testkit`, off by default):
//! schemas from compact call lists, the small schemas several suites share, a capture of copied
//! blobs and one the writer marked incomplete written through the real writer, a
//! deterministic random source, and the member names of a tar. Not part of the
//! format; nothing here is used by the library itself.

use std::path::{Path, PathBuf};

use crate::blobs::{CodeKind, ObjectId};
use crate::schema::{CallClass, CallDef, FieldDef, FieldType, PayloadBuilder, Schema};
use crate::writer::ProcessWriter;

/// A call from its id, name, class and `(field name, type)` list.
pub fn call(id: u16, name: &str, class: CallClass, fields: &[(&str, FieldType)]) -> CallDef {
    CallDef {
        id,
        name: name.into(),
        class,
        fields: fields
            .iter()
            .map(|(n, t)| FieldDef {
                name: (*n).into(),
                ty: *t,
            })
            .collect(),
    }
}

/// A `cuda-driver` schema (API version 13000) of `calls`.
pub fn cuda_schema(calls: Vec<CallDef>) -> Schema {
    Schema::new("cuda-driver", 13000, calls)
}

/// The `test-api` schema of version `api_version`: call 1 `apiAlloc(result, ptr, size)` and
/// call 2 `apiLaunch` (a launch) with `launch_fields`.
pub fn test_api_schema(api_version: u64, launch_fields: &[(&str, FieldType)]) -> Schema {
    use FieldType::*;
    Schema::new(
        "test-api",
        api_version,
        vec![
            call(
                1,
                "apiAlloc",
                CallClass::Other,
                &[("result", Result), ("ptr", Ptr), ("size", U64)],
            ),
            call(2, "apiLaunch", CallClass::Launch, launch_fields),
        ],
    )
}

/// A `cuda-driver` schema of copies: 1 `cuModuleLoadData(result, module, code)`,
/// 2 `cuMemcpyHtoD_v2(result, dst, size, h2d_blob)`, 3 `cuMemcpyDtoH_v2(result, src, size,
/// d2h_blob)` followed by `d2h_extra`.
pub fn copy_schema(d2h_extra: &[(&str, FieldType)]) -> Schema {
    use FieldType::*;
    let mut d2h = vec![
        ("result", Result),
        ("src", Ptr),
        ("size", U64),
        ("d2h_blob", Blob),
    ];
    d2h.extend_from_slice(d2h_extra);
    cuda_schema(vec![
        call(
            1,
            "cuModuleLoadData",
            CallClass::Other,
            &[("result", Result), ("module", Handle), ("code", Code)],
        ),
        call(
            2,
            "cuMemcpyHtoD_v2",
            CallClass::H2d,
            &[
                ("result", Result),
                ("dst", Ptr),
                ("size", U64),
                ("h2d_blob", Blob),
            ],
        ),
        call(3, "cuMemcpyDtoH_v2", CallClass::D2h, &d2h),
    ])
}

/// The device address a [`CopyCapture`] gives blob `i`.
pub fn copy_address(base: u64, stride: u64, i: usize) -> u64 {
    base + i as u64 * stride
}

/// What [`write_copy_capture`] writes under `root/pid-<pid>/` with [`copy_schema`]: one code
/// object loaded, then every blob copied H2D and back D2H by thread `thread`, at device address
/// `base + i * stride`; the D2H events get `d2h_note` as their extra bytes field when given.
#[derive(Debug, Clone, Copy)]
pub struct CopyCapture<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id of every event.
    pub thread: u64,
    /// The code object's bytes.
    pub code: &'a [u8],
    /// The module handle recorded.
    pub module: u64,
    /// Address of the first blob.
    pub base: u64,
    /// Distance between blobs.
    pub stride: u64,
    /// Extra `bytes` field of the D2H events (the schema needs it: `copy_schema(&[(_, Bytes)])`).
    pub d2h_note: Option<&'a [u8]>,
}

impl CopyCapture<'static> {
    /// The small capture the hostile-archive suites plant their damage in: thread 7, a 16-byte
    /// code object as module 0x10, blobs 4 KiB apart from `0x7f00_0000_0000`, no D2H note.
    pub fn small(pid: u32) -> Self {
        CopyCapture {
            pid,
            thread: 7,
            code: b"\x7fELF code object",
            module: 0x10,
            base: 0x7f00_0000_0000,
            stride: 0x1000,
            d2h_note: None,
        }
    }
}

/// [`CopyCapture::small`] of three 64-byte blobs (all 0, all 1, all 2) written with
/// [`copy_schema`] under `root`; returns its `pid-<pid>/` folder.
pub fn write_small_capture(root: &Path, pid: u32) -> crate::Result<PathBuf> {
    let blobs = (0..3u8).map(|i| vec![i; 64]);
    write_copy_capture(root, &copy_schema(&[]), &CopyCapture::small(pid), blobs)?;
    Ok(root.join(crate::layout::pid_dir_name(pid)))
}

/// A capture under `root` whose writer marked it incomplete (`reason`) after one event (call 1,
/// thread 1, payload `0, 1, 2`), still open: its writer, for the test to finish or abandon.
pub fn write_marked_incomplete(
    root: &Path,
    pid: u32,
    schema: &Schema,
    reason: &str,
) -> crate::Result<ProcessWriter> {
    let mut w = ProcessWriter::create(root, pid, 1, schema)?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(1).u64(2);
    w.events().append(1, 1, p.as_bytes())?;
    w.events().mark_incomplete(reason)?;
    Ok(w)
}

/// Cut the last `n` bytes off the file at `path` (what a write torn by a crash leaves).
pub fn cut_tail(path: &Path, n: u64) -> std::io::Result<()> {
    let len = std::fs::metadata(path)?.len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(len.saturating_sub(n))
}

/// Move the folder `dir/name` to `outside/name` (or make an empty one there when `dir` has none)
/// and leave a symbolic link to it in its place: a capture whose folder escapes the archive.
pub fn link_folder_out(dir: &Path, name: &str, outside: &Path) -> std::io::Result<()> {
    let target = outside.join(name);
    if dir.join(name).exists() {
        std::fs::rename(dir.join(name), &target)?;
    } else {
        std::fs::create_dir(&target)?;
    }
    std::os::unix::fs::symlink(&target, dir.join(name))
}

/// Write a [`CopyCapture`] of `blobs` with `schema` and finish it; returns the blobs' ids.
pub fn write_copy_capture(
    root: &Path,
    schema: &Schema,
    c: &CopyCapture<'_>,
    blobs: impl IntoIterator<Item = Vec<u8>>,
) -> crate::Result<Vec<ObjectId>> {
    let mut w = ProcessWriter::create(root, c.pid, 1, schema)?;
    let co = w.put_code_object(c.code, CodeKind::Cubin)?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(c.module).object(Some(co));
    w.events().append(1, c.thread, p.as_bytes())?;
    let mut ids = Vec::new();
    for (i, b) in blobs.into_iter().enumerate() {
        let id = w.put_blob(&b)?;
        ids.push(id);
        let addr = copy_address(c.base, c.stride, i);
        for kind in [2, 3] {
            let mut p = PayloadBuilder::new();
            p.i32(0).u64(addr).u64(b.len() as u64).object(Some(id));
            if let (3, Some(note)) = (kind, c.d2h_note) {
                p.bytes(note);
            }
            w.events().append(kind, c.thread, p.as_bytes())?;
        }
    }
    w.finish()?;
    Ok(ids)
}

/// xorshift64*: deterministic, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (below 1 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Fill `v` with random bytes.
    pub fn fill(&mut self, v: &mut [u8]) {
        for c in v.chunks_mut(8) {
            let x = self.next().to_le_bytes();
            c.copy_from_slice(&x[..c.len()]);
        }
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.fill(&mut v);
        v
    }

    /// `n` random characters of `alphabet`.
    pub fn text(&mut self, n: usize, alphabet: &[u8]) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }

    /// `n` random letters and digits.
    pub fn word(&mut self, n: usize) -> String {
        self.text(
            n,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        )
    }
}

/// Panics, showing all of `haystack`, unless it contains `needle`: the one-line form of
/// `assert!(haystack.contains(needle), "{haystack}")` that the test suites repeat.
#[track_caller]
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{haystack}");
}

/// The member names of an uncompressed tar, in order (paths as text).
#[cfg(feature = "pack")]
pub fn tar_names(tar: &[u8]) -> Vec<String> {
    tar::Archive::new(tar)
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}
