//! Secrets straddling two blobs. A program that uploads one host buffer in several copies (a
//! staging loop, a chunked transfer) leaves each piece in its own blob, and a secret lying across
//! a piece boundary is whole in neither. The copies' events say which blobs are neighbours: two
//! host-to-device copies whose host sources (or device destinations) are contiguous. The end of
//! the first and the start of the second are scanned together, and a finding that crosses the
//! junction is reported as two findings, one per blob, each covering (and redacting) its part, so
//! scrub needs nothing special.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::Result;
use hrr_archive::blobs::blob_path;
use hrr_archive::layout::EVENTS_FILE;
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{field, Value};
use hrr_archive::{fsutil, ObjectId};

use super::{Finding, Scanner};
use crate::fingerprint::FingerprintKey;

/// Bytes taken from each side of a junction: more than the longest secret a rule matches.
const SIDE: u64 = 8 << 10;

/// One host-to-device copy with its blob.
#[derive(Debug, Clone, Copy)]
struct Piece {
    src: Option<u64>,
    dst: Option<u64>,
    len: u64,
    blob: ObjectId,
}

/// The host-to-device copies of a process, from its events (copies without a blob or with a
/// damaged payload are left out: they hold nothing to scan here).
fn pieces(dir: &Path) -> Result<Vec<Piece>> {
    let path = dir.join(EVENTS_FILE);
    let mut reader = EventReader::open(&path)?;
    let schema = reader.schema().cloned();
    let mut out = Vec::new();
    for ev in reader.decoded(schema.as_ref()) {
        let Some(Ok(fields)) = ev?.fields() else {
            continue;
        };
        let Some(Value::Blob(Some(blob))) = field(&fields, "h2d_blob") else {
            continue;
        };
        let num = |n| field(&fields, n).and_then(Value::as_u64);
        let len = num("bytes").or(num("size")).unwrap_or(0);
        if len > 0 {
            out.push(Piece {
                src: num("src"),
                dst: num("dst"),
                len,
                blob: *blob,
            });
        }
    }
    Ok(out)
}

/// Pairs of pieces that are contiguous on the host side or on the device side, first piece
/// first, each pair once.
fn neighbours(pieces: &[Piece]) -> Vec<(Piece, Piece)> {
    let mut pairs = Vec::new();
    for key in [|p: &Piece| p.src, |p: &Piece| p.dst] {
        let by_start: HashMap<u64, &Piece> =
            pieces.iter().filter_map(|p| Some((key(p)?, p))).collect();
        for a in pieces {
            let Some(start) = key(a) else { continue };
            if let Some(&b) = by_start.get(&start.wrapping_add(a.len)) {
                pairs.push((*a, *b));
            }
        }
    }
    pairs.sort_by_key(|(a, b)| (a.blob, b.blob));
    pairs.dedup_by_key(|(a, b)| (a.blob, b.blob));
    pairs
}

/// `len` bytes of a blob file from `offset` (shorter if the file is).
fn read_part(path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let mut f = fsutil::open_read(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Findings across the junctions of the process folder `dir`: (blob path below `dir`, finding
/// in that blob).
pub fn scan_junctions(
    scanner: &Scanner,
    key: &FingerprintKey,
    dir: &Path,
) -> Result<Vec<(String, Finding)>> {
    if !dir.join(EVENTS_FILE).is_file() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (a, b) in neighbours(&pieces(dir)?) {
        let (pa, pb) = (blob_path(dir, &a.blob), blob_path(dir, &b.blob));
        let (Ok(ma), Ok(_)) = (
            std::fs::symlink_metadata(&pa),
            std::fs::symlink_metadata(&pb),
        ) else {
            continue; // a missing blob: verify reports it
        };
        let tail_from = ma.len().saturating_sub(SIDE);
        let mut joined = read_part(&pa, tail_from, SIDE)?;
        let cut = joined.len() as u64;
        joined.extend(read_part(&pb, 0, SIDE)?);
        let rel = |p: &Path| {
            p.strip_prefix(dir)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        };
        for f in scanner.scan_bytes(key, &joined) {
            if f.offset >= cut || f.offset + f.length <= cut {
                continue; // whole in one blob: its own scan found it
            }
            let (first, second) = split_at(&f, cut);
            out.push((rel(&pa), shifted(first, tail_from)));
            out.push((rel(&pb), second));
        }
    }
    Ok(out)
}

/// A finding crossing `cut` of the joined bytes as its part before (offsets in the joined
/// bytes) and its part after (offsets in the second blob).
fn split_at(f: &Finding, cut: u64) -> (Finding, Finding) {
    let red = f.redact_range();
    let mid = red.start.max(cut).min(red.end); // where the redaction crosses into the second blob
    let first_end = red.end.min(cut).max(red.start);
    let mut first = f.clone();
    first.length = cut - f.offset;
    first.redact_offset = red.start.min(cut);
    first.replacement = f.replacement[..(first_end - red.start) as usize].to_vec();
    first.preview = format!("{} (first part; continues in the next blob)", f.preview);
    let mut second = f.clone();
    second.offset = 0;
    second.length = f.offset + f.length - cut;
    second.redact_offset = mid.max(cut) - cut;
    second.replacement = f.replacement[(mid - red.start) as usize..].to_vec();
    second.preview = format!("{} (second part; begins in the previous blob)", f.preview);
    (first, second)
}

/// `f` with its offsets moved by `by`.
fn shifted(mut f: Finding, by: u64) -> Finding {
    f.offset += by;
    f.redact_offset += by;
    f
}
