//! A recorded blob's bytes as replay holds them: small blobs read into memory, large ones
//! mapped from the archive with their pages read in ahead (`MAP_POPULATE`), so an upload is one
//! copy, the driver's, out of the page cache, and the reading happens on the decoding thread,
//! not between the calls.
//!
//! A mapped blob is the archive's file: a file truncated under a running replay would fault
//! it (`SIGBUS`), as any reader of a mapped file; replay only maps files of its own archive,
//! opened through `hrr_archive::blobs::open_blob` (no links, sizes checked).

use std::io::Read;
use std::ops::Deref;
use std::path::Path;

use anyhow::{Context, Result};
use hrr_archive::ObjectId;

/// Blobs this large or larger are mapped instead of read.
pub const MAP_MIN: u64 = 1 << 20;

/// The bytes of one blob.
pub enum BlobBytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
    /// A mapping made before the clock and kept for the whole replay (`Preloaded`).
    Shared(std::sync::Arc<memmap2::Mmap>),
}

impl Deref for BlobBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            BlobBytes::Read(v) => v,
            BlobBytes::Mapped(m) => m,
            BlobBytes::Shared(m) => m,
        }
    }
}

impl BlobBytes {
    /// Owned bytes (a mapped blob is copied).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            BlobBytes::Read(v) => v,
            BlobBytes::Mapped(m) => m.to_vec(),
            BlobBytes::Shared(m) => m.to_vec(),
        }
    }
}

/// What failed to open: blob `id` of `dir`, and for a missing one how that comes about (a
/// capture killed before its blob threads wrote it) and what to do.
fn open_failed(dir: &Path, id: &ObjectId, e: &hrr_archive::Error) -> String {
    let mut what = format!("blob {id} of {}", dir.display());
    if matches!(e, hrr_archive::Error::Missing(_)) {
        what.push_str(
            " is missing (a capture killed before its blob was written leaves that: \
             `hrr-playback <archive> --repair` keeps the events before the first one naming a \
             missing object)",
        );
    }
    what
}

/// Open blob `id` of `dir` (refusing a link, a non-file, or a size other than `expected`) and
/// read or map it whole.
pub fn load(dir: &Path, id: &ObjectId, expected: Option<u64>) -> Result<BlobBytes> {
    let mut f = hrr_archive::blobs::open_blob(dir, id, expected).map_err(|e| {
        let what = open_failed(dir, id, &e);
        anyhow::Error::new(e).context(what)
    })?;
    let len = f
        .metadata()
        .with_context(|| format!("blob {id} of {}", dir.display()))?
        .len();
    if len >= MAP_MIN {
        // SAFETY: see the module doc: the file is the archive's own, opened without following
        // links; the mapping is read-only and private.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&f) };
        if let Ok(map) = map {
            return Ok(BlobBytes::Mapped(map));
        }
    }
    let mut v = Vec::with_capacity(len as usize);
    f.read_to_end(&mut v)
        .with_context(|| format!("reading blob {id} of {}", dir.display()))?;
    Ok(BlobBytes::Read(v))
}

/// Large H2D sources mapped before the clock (their pages read in), shared by the decoding
/// thread and the backend for the whole replay: the backend page-locks them
/// (`Backend::pin_sources`) so their uploads go to the device without a staging copy. At most
/// [`PRELOAD_MAX`] bytes (`HRR_REPLAY_PRELOAD_MB` sets another limit, 0 none preloaded), and a
/// quarter of the memory available.
#[derive(Default)]
pub struct Preloaded(pub std::collections::HashMap<ObjectId, std::sync::Arc<memmap2::Mmap>>);

/// The most source bytes preloaded by default.
pub const PRELOAD_MAX: u64 = 8 << 30;

/// The most source bytes preloaded: `HRR_REPLAY_PRELOAD_MB` (MiB) or [`PRELOAD_MAX`].
fn preload_max() -> u64 {
    std::env::var("HRR_REPLAY_PRELOAD_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(PRELOAD_MAX, |mb| mb.saturating_mul(1 << 20))
}

impl Preloaded {
    /// Map the blobs `ids` of `dir` (each at least [`MAP_MIN`] bytes, in the order given, while
    /// they fit the budget); a blob that cannot be mapped is left to the decoding thread.
    pub fn map(dir: &Path, ids: &[ObjectId]) -> Preloaded {
        let budget = preload_max().min(available_memory() / 4);
        let mut out = std::collections::HashMap::new();
        let mut total = 0u64;
        for id in ids {
            if out.contains_key(id) {
                continue;
            }
            let Ok(f) = hrr_archive::blobs::open_blob(dir, id, None) else {
                continue;
            };
            let len = f.metadata().map_or(0, |m| m.len());
            if len < MAP_MIN || total + len > budget {
                continue;
            }
            // SAFETY: as in `load`: the archive's own file, read-only and private.
            if let Ok(map) = unsafe { memmap2::MmapOptions::new().populate().map(&f) } {
                total += len;
                out.insert(*id, std::sync::Arc::new(map));
            }
        }
        Preloaded(out)
    }

    /// The bytes of blob `id`, if preloaded.
    pub fn get(&self, id: &ObjectId) -> Option<BlobBytes> {
        self.0.get(id).map(|m| BlobBytes::Shared(m.clone()))
    }

    /// Every preloaded mapping.
    pub fn slices(&self) -> Vec<&[u8]> {
        self.0.values().map(|m| &m[..]).collect()
    }
}

/// `MemAvailable` of `/proc/meminfo` in bytes (0 where it cannot be read: nothing preloaded).
fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing blob says so and points at `--repair`; a blob of the wrong size does not.
    #[test]
    fn a_missing_blob_names_itself_and_the_repair() {
        let dir = tempfile::tempdir().unwrap();
        let id = ObjectId::of(b"never written");
        let e = format!("{:#}", load(dir.path(), &id, None).err().unwrap());
        assert!(
            e.contains(&id.to_string()) && e.contains("is missing"),
            "{e}"
        );
        assert!(e.contains("--repair"), "{e}");
        let path = hrr_archive::blobs::blob_path(dir.path(), &id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"never written").unwrap();
        let e = format!("{:#}", load(dir.path(), &id, Some(3)).err().unwrap());
        assert!(!e.contains("--repair"), "{e}");
        assert_eq!(&*load(dir.path(), &id, Some(13)).unwrap(), b"never written");
    }
}
