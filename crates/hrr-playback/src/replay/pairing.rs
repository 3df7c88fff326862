//! Which export each import of memory shared as a POSIX file descriptor
//! (`cuMemExportToShareableHandle` / `cuMemImportFromShareableHandle`) opened, across the
//! processes of an archive, decided once by `--all` before the replay processes start.
//!
//! Capture keys such a descriptor by the device and inode numbers of its file, the same in
//! every process holding it. The NVIDIA driver gives every exported allocation a descriptor of
//! one and the same file, so the key tells nothing apart: NCCL's 48 exports of a two-rank step
//! all had one key, and pairing by key imported the wrong allocation (`cuMemMap`:
//! NOT_SUPPORTED). What does tell them apart is when and where: a descriptor travels from the
//! exporting process to the importing one (a Unix socket) before the import, one request at a
//! time. So each import is paired with the earliest export not yet paired that has its key,
//! preferring, in this order, one of the same size (the allocation the export's handle was
//! created with, the first mapping of the imported handle), one of another process, one
//! recorded before the import (every process is timestamped by the same realtime clock).
//! The pairs are written to the rendezvous folder ([`write()`]); a replay process reads the
//! export its import is paired with from there (`super::peers::Rendezvous`).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use hrr_archive::reader::EventReader;
use hrr_archive::schema::decode_fields;
use hrr_archive::writer::EVENTS_FILE;
use hrr_calls::cuda::Op;
use hrr_calls::shapes::{MemCreate, MemMap, Shape, Shareable};

/// The pairs' file in the rendezvous folder: a line `IMPORT_PID IMPORT_SEQ EXPORT_PID
/// EXPORT_SEQ` per paired import.
pub const PAIRS_FILE: &str = "shareable-pairs";

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`: the handles paired here (fabric handles are
/// their own key).
pub const HANDLE_POSIX_FD: u32 = 1;

/// One recorded export or import of a descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    /// The recorded process.
    pub pid: u32,
    /// Its event.
    pub seq: u64,
    /// When it was recorded (ns since the epoch).
    pub ts: u64,
    /// Capture's key (device and inode numbers of the descriptor's file).
    pub key: Vec<u8>,
    /// The allocation's size, where the recording shows it.
    pub size: Option<u64>,
}

/// An event of a process: `(pid, seq)`.
pub type EventId = (u32, u64);

/// The descriptor exports and imports `pid` recorded in `dir` (a `pid-<pid>/` folder): its
/// exports and its imports, each in event order. Not a CUDA capture: none.
pub fn scan(pid: u32, dir: &Path) -> Result<(Vec<Shared>, Vec<Shared>)> {
    let path = dir.join(EVENTS_FILE);
    let mut reader = EventReader::open(&path)?;
    let Some(schema) = reader.schema().cloned() else {
        return Ok(Default::default());
    };
    let mut ops: HashMap<u16, Option<Op>> = HashMap::new();
    let mut sizes: HashMap<u64, u64> = HashMap::new(); // allocation handle -> size
    let mut unmapped: HashMap<u64, usize> = HashMap::new(); // imported handle -> import
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    for rec in reader.by_ref() {
        let rec = rec?;
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        let op = *ops
            .entry(rec.header.kind)
            .or_insert_with(|| Op::from_name(&call.name));
        let Some(op) = op.filter(|op| {
            matches!(
                op,
                Op::MemCreate
                    | Op::MemMap
                    | Op::MemExportToShareableHandle
                    | Op::MemImportFromShareableHandle
            )
        }) else {
            continue;
        };
        let seq = rec.header.seq;
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("{}: event #{seq}: {e}", path.display()))?;
        if super::fields::status_not_zero(&fields) {
            continue;
        }
        let shared = |s: &Shareable, size| Shared {
            pid,
            seq,
            ts: rec.header.timestamp_ns,
            key: s.key.clone(),
            size,
        };
        let at = |e| anyhow!("{}: event #{seq}: {e}", path.display());
        match op {
            Op::MemCreate => {
                let s = MemCreate::read(&fields).map_err(at)?;
                sizes.insert(s.handle, s.size);
            }
            Op::MemMap => {
                let s = MemMap::read(&fields).map_err(at)?;
                if let Some(i) = unmapped.remove(&s.handle) {
                    let import: &mut Shared = &mut imports[i];
                    import.size = Some(s.size + s.offset);
                }
            }
            Op::MemExportToShareableHandle => {
                let s = Shareable::read(&fields).map_err(at)?;
                if s.kind == HANDLE_POSIX_FD && !s.key.is_empty() {
                    exports.push(shared(&s, sizes.get(&s.handle).copied()));
                }
            }
            _ => {
                let s = Shareable::read(&fields).map_err(at)?;
                if s.kind == HANDLE_POSIX_FD && !s.key.is_empty() {
                    unmapped.insert(s.handle, imports.len());
                    imports.push(shared(&s, None));
                }
            }
        }
    }
    Ok((exports, imports))
}

/// Pair each import with an export (see the module's doc): `(import, export)` for each import
/// that has a candidate, in the imports' recorded order.
pub fn pair(exports: &[Shared], imports: &[Shared]) -> Vec<(EventId, EventId)> {
    let mut by_time: Vec<&Shared> = imports.iter().collect();
    by_time.sort_by_key(|i| (i.ts, i.pid, i.seq));
    let mut taken = vec![false; exports.len()];
    let mut pairs = Vec::new();
    for imp in by_time {
        let best = exports
            .iter()
            .enumerate()
            .filter(|(i, e)| !taken[*i] && e.key == imp.key)
            .min_by_key(|(_, e)| {
                let other_size = matches!((e.size, imp.size), (Some(a), Some(b)) if a != b);
                (
                    other_size,
                    e.pid == imp.pid,
                    e.ts > imp.ts,
                    e.ts,
                    e.pid,
                    e.seq,
                )
            });
        if let Some((i, e)) = best {
            taken[i] = true;
            pairs.push(((imp.pid, imp.seq), (e.pid, e.seq)));
        }
    }
    pairs
}

/// Scan every process of `processes` and write the pairs of their descriptor imports into
/// the rendezvous folder `dir`. A process whose events cannot be read is left out (its own
/// replay says why).
pub fn write(dir: &Path, processes: &[(u32, std::path::PathBuf)]) -> Result<()> {
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    for (pid, folder) in processes {
        if let Ok((e, i)) = scan(*pid, folder) {
            exports.extend(e);
            imports.extend(i);
        }
    }
    let text: String = pair(&exports, &imports)
        .into_iter()
        .map(|((ip, is), (ep, es))| format!("{ip} {is} {ep} {es}\n"))
        .collect();
    let path = dir.join(PAIRS_FILE);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// The export the import `import` is paired with in the pairs' file text `text`.
pub fn paired(text: &str, import: EventId) -> Option<EventId> {
    text.lines().find_map(|l| {
        let n: Vec<u64> = l.split(' ').filter_map(|w| w.parse().ok()).collect();
        match n[..] {
            [ip, is, ep, es] if (ip, is) == (u64::from(import.0), import.1) => {
                Some((u32::try_from(ep).ok()?, es))
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pid: u32, seq: u64, ts: u64, size: Option<u64>) -> Shared {
        Shared {
            pid,
            seq,
            ts,
            key: vec![6, 0xad],
            size,
        }
    }

    #[test]
    fn imports_take_the_earliest_export_of_another_process_before_them() {
        // two ranks exporting to each other alternately, every key the same (NCCL on the H200)
        let exports = [
            ev(1, 10, 100, None),
            ev(2, 11, 105, None),
            ev(1, 12, 120, None),
            ev(2, 13, 125, None),
        ];
        let imports = [
            ev(2, 20, 110, None),
            ev(1, 21, 112, None),
            ev(2, 22, 130, None),
            ev(1, 23, 131, None),
        ];
        let pairs = pair(&exports, &imports);
        assert_eq!(
            pairs,
            [
                ((2, 20), (1, 10)),
                ((1, 21), (2, 11)),
                ((2, 22), (1, 12)),
                ((1, 23), (2, 13)),
            ]
        );
    }

    #[test]
    fn sizes_and_keys_tell_exports_apart() {
        let mut other_key = ev(1, 1, 10, Some(4096));
        other_key.key = vec![7];
        let exports = [
            other_key,
            ev(1, 2, 20, Some(4096)),
            ev(1, 3, 30, Some(8192)),
        ];
        // the import of the 8 KiB allocation skips the earlier 4 KiB export
        let imports = [ev(2, 9, 40, Some(8192)), ev(2, 10, 50, None)];
        assert_eq!(
            pair(&exports, &imports),
            [((2, 9), (1, 3)), ((2, 10), (1, 2))]
        );
        // nothing left to pair: not paired
        assert_eq!(pair(&exports[..1], &imports[..1]), []);
    }

    #[test]
    fn the_pairs_file_is_read_back() {
        let text = "2 20 1 10\n1 21 2 11\n";
        assert_eq!(paired(text, (1, 21)), Some((2, 11)));
        assert_eq!(paired(text, (1, 20)), None);
        assert_eq!(paired("garbage\n", (1, 20)), None);
    }
}
