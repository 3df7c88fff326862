//! The packed form of an archive: one `<name>.hrr.tar.zst` file to hand over. A zstd stream of a
//! GNU tar whose first member is a pack index (every file with its size and BLAKE3 hash, and a
//! summary of every process), then the archive's folders and files in sorted order with fixed
//! headers, so the same archive always packs to the same bytes. Reading streams with bounded
//! memory, checks every file against the index while it is read, and accepts only the subset of
//! tar this writer produces: no links, devices, FIFOs, set-id bits, absolute paths or `..`.
//! See FORMAT.md §9.
//!
//! ```
//! use hrr_archive::{pack, progress::NoProgress, schema::Schema, writer::ProcessWriter};
//! let tmp = tempfile::tempdir().unwrap();
//! let src = tmp.path().join("run.hrr");
//! let mut w = ProcessWriter::create(&src, 7, 1, &Schema::new("cuda-driver", 13000, vec![])).unwrap();
//! w.put_blob(b"host bytes").unwrap();
//! w.finish().unwrap();
//! let packed = tmp.path().join("run.hrr.tar.zst");
//! pack::pack_to_file(&src, Some(&packed), &pack::PackOptions::default(), &NoProgress).unwrap();
//! let index = pack::read_index(&packed).unwrap();
//! assert_eq!(index.processes[0].blobs, 1);
//! let dest = tmp.path().join("dest");
//! std::fs::create_dir(&dest).unwrap();
//! let out = pack::unpack(&packed, &dest, false, &NoProgress).unwrap();
//! assert_eq!(out, dest.join("run.hrr"));
//! ```

mod index;
mod read;
mod unpack;
mod write;

pub use index::{
    list_dir, PackError, PackFile, PackIndex, PackKind, PackResult, ProcessListing, UnsafeEntry,
    INDEX_NAME, INDEX_SCHEMA, LEVELS, MAX_INDEX_BYTES, MAX_NAME_BYTES, PACK_SUFFIX, TAR_MTIME,
    WINDOW_LOG_MAX,
};
pub use read::{is_pack_file, read_index, read_pack, PackVisitor};
pub use unpack::{remove_stale_unpack_dirs, unpack};
pub use write::{
    default_pack_name, pack_to_file, plan, workers, write_pack, PackOptions, PackOutcome, PackPlan,
    PACK_FILE_MODE,
};
