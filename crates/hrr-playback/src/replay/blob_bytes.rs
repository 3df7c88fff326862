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
}

impl Deref for BlobBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            BlobBytes::Read(v) => v,
            BlobBytes::Mapped(m) => m,
        }
    }
}

impl BlobBytes {
    /// Owned bytes (a mapped blob is copied).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            BlobBytes::Read(v) => v,
            BlobBytes::Mapped(m) => m.to_vec(),
        }
    }
}

/// Open blob `id` of `dir` (refusing a link, a non-file, or a size other than `expected`) and
/// read or map it whole.
pub fn load(dir: &Path, id: &ObjectId, expected: Option<u64>) -> Result<BlobBytes> {
    let mut f = hrr_archive::blobs::open_blob(dir, id, expected)
        .with_context(|| format!("blob {id} of {}", dir.display()))?;
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
