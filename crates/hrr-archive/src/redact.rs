//! Redaction records and the scrub primitives of the format: `redactions.json` (which byte
//! ranges of which objects were overwritten, never what they held), the ranges replay must not
//! hold against a result, and the rewrite of events.bin that points events at renamed objects.
//! The scanning itself lives in `hrr-pack`. See FORMAT.md §10.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::blobs::ObjectId;
use crate::error::{IoContext, Result};
use crate::fsutil;
use crate::manifest;
use crate::reader::EventReader;
use crate::schema::object_fields;

pub use crate::layout::names::REDACTIONS_FILE;
/// Version of `redactions.json` this library writes.
pub const REDACTIONS_VERSION: u32 = 1;
/// How fingerprints are made: BLAKE3 in keyed mode over the secret, first 128 bits.
pub const FINGERPRINT_SCHEME: &str = "blake3-keyed-128";

/// What kind of object a redaction applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// A blob (`blobs/`).
    #[default]
    Blob,
    /// A code object (`code_objects/`).
    Code,
}

/// One overwritten range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    /// First byte overwritten.
    pub offset: u64,
    /// Bytes overwritten.
    pub length: u64,
    /// The rule that found the secret (`github-token`, `pem-private-key`, ...).
    pub rule: String,
    /// `ascii`, `utf16le` or `binary`.
    pub encoding: String,
    /// Keyed fingerprint of the secret (`fp:` + 32 hex); never the secret.
    pub fingerprint: String,
}

/// The redactions of one object, listed under its id after the scrub.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RedactedObject {
    /// Blob or code object.
    #[serde(default)]
    pub kind: ObjectKind,
    /// Size of the object.
    pub size: u64,
    /// The ranges overwritten, sorted by offset.
    pub ranges: Vec<Redaction>,
}

/// `pid-<pid>/redactions.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RedactionsFile {
    /// [`REDACTIONS_VERSION`].
    pub version: u32,
    /// [`FINGERPRINT_SCHEME`].
    pub fingerprint: String,
    /// Identifies the fingerprint key (a hash of it) so fingerprints of two scrubs can be
    /// compared; reveals nothing of the key.
    pub key_id: String,
    /// Redacted objects by their (new) 32-hex id.
    pub objects: BTreeMap<String, RedactedObject>,
    /// Ranges overwritten inside events.bin payloads (file offsets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Redaction>,
    /// Keys this version does not know; kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Read `pid_dir/redactions.json`; `None` when there is none.
pub fn read_redactions(pid_dir: &Path) -> Result<Option<RedactionsFile>> {
    let path = pid_dir.join(REDACTIONS_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    manifest::read_json(&path).map(Some)
}

/// Write `pid_dir/redactions.json` atomically.
pub fn write_redactions(pid_dir: &Path, file: &RedactionsFile) -> Result<()> {
    manifest::write_json(&pid_dir.join(REDACTIONS_FILE), file)
}

/// The redacted byte ranges of every object of a process capture, sorted and merged; empty when
/// the capture was never scrubbed. Replay uses it so that a result differing from the recorded
/// one only inside these ranges is not called a failure.
pub fn redacted_ranges(pid_dir: &Path) -> Result<BTreeMap<ObjectId, Vec<Range<u64>>>> {
    let mut out = BTreeMap::new();
    let Some(file) = read_redactions(pid_dir)? else {
        return Ok(out);
    };
    for (hex, obj) in file.objects {
        let Some(id) = ObjectId::from_hex(&hex) else {
            continue;
        };
        let mut ranges: Vec<Range<u64>> = obj
            .ranges
            .iter()
            .map(|r| r.offset..r.offset.saturating_add(r.length))
            .collect();
        out.insert(id, merge_ranges(&mut ranges));
    }
    Ok(out)
}

/// Sort and merge overlapping or touching ranges.
pub fn merge_ranges(ranges: &mut [Range<u64>]) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<u64>> = Vec::new();
    for r in ranges.iter().filter(|r| r.start < r.end) {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r.clone()),
        }
    }
    merged
}

/// What [`rewrite_events`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsRewrite {
    /// Records copied (after the schema record, before any trailer).
    pub records: u64,
    /// Object references pointed at a renamed object.
    pub references: u64,
    /// Of those, found by searching payloads that do not decode with their schema entry.
    pub references_by_search: u64,
    /// The byte ranges actually overwritten (parts of the requested ones inside event payloads).
    pub redacted: Vec<Range<u64>>,
}

/// Copy the events.bin at `src` to a new file `dst`, byte for byte (file header, schema record,
/// records, trailer, whatever follows it or a torn tail), except that every `blob`/`code` field
/// holding an id in `renames` gets the new id (the 16 bytes patched in place, found through the
/// schema; in a payload that does not decode, or of a type the schema does not name, by
/// searching for the old ids), and that the bytes of `redact` (file offset → replacement bytes)
/// are overwritten where they fall inside the payload of an event after the schema record; record
/// headers are never touched. `dst` is created exclusively (0600) and fsynced.
pub fn rewrite_events(
    src: &Path,
    dst: &Path,
    renames: &HashMap<ObjectId, ObjectId>,
    redact: &[(u64, Vec<u8>)],
) -> Result<EventsRewrite> {
    let mut reader = EventReader::open(src)?;
    let schema = reader.schema().cloned();
    let mut raw = BufReader::with_capacity(1 << 20, fsutil::open_read(src)?);
    let out = fsutil::create_new(dst)?;
    let mut w = BufWriter::with_capacity(1 << 20, out);
    let mut stats = EventsRewrite::default();
    let head = reader.recovery().good_len;
    let copied = std::io::copy(&mut (&mut raw).take(head), &mut w).at(dst)?;
    if copied != head {
        return Err(crate::Error::Io {
            path: src.to_path_buf(),
            source: std::io::ErrorKind::UnexpectedEof.into(),
        });
    }
    let mut pos = head;
    let old_ids: HashSet<[u8; 16]> = renames.keys().map(|id| id.0).collect();
    let mut redact: Vec<&(u64, Vec<u8>)> = redact.iter().filter(|(_, b)| !b.is_empty()).collect();
    redact.sort_by_key(|(o, _)| *o);
    let mut next_redaction = 0usize;
    let mut bytes = Vec::new();
    while let Some(rec) = reader.next_raw()? {
        let total = rec.header.total_len as usize;
        bytes.resize(total, 0);
        raw.read_exact(&mut bytes).at(src)?;
        stats.records += 1;
        let payload = &mut bytes[crate::framing::RECORD_HEADER_LEN..];
        if !old_ids.is_empty() {
            let refs = schema
                .as_ref()
                .and_then(|s| s.call(rec.header.kind))
                .map(|call| object_fields(call, &rec.payload));
            match refs {
                Some(Ok(refs)) => {
                    for r in refs {
                        if let Some(new) = r.id.and_then(|id| renames.get(&id)) {
                            payload[r.offset..r.offset + 16].copy_from_slice(&new.0);
                            stats.references += 1;
                        }
                    }
                }
                _ => {
                    let mut i = 0;
                    while i + 16 <= payload.len() {
                        let window: [u8; 16] = payload[i..i + 16].try_into().expect("16 bytes");
                        if old_ids.contains(&window) {
                            let new = renames[&ObjectId(window)];
                            payload[i..i + 16].copy_from_slice(&new.0);
                            stats.references += 1;
                            stats.references_by_search += 1;
                            i += 16;
                        } else {
                            i += 1;
                        }
                    }
                }
            }
        }
        // Redactions inside this record's payload (file offsets).
        let pay_start = pos + crate::framing::RECORD_HEADER_LEN as u64;
        let rec_end = pos + total as u64;
        while next_redaction < redact.len()
            && redact[next_redaction].0 + redact[next_redaction].1.len() as u64 <= pay_start
        {
            next_redaction += 1;
        }
        let mut k = next_redaction;
        while k < redact.len() && redact[k].0 < rec_end {
            let (off, repl) = redact[k];
            let start = (*off).max(pay_start);
            let end = (off + repl.len() as u64).min(rec_end);
            if start < end {
                let src_from = (start - off) as usize;
                let dst_from = (start - pay_start) as usize;
                let n = (end - start) as usize;
                payload[dst_from..dst_from + n].copy_from_slice(&repl[src_from..src_from + n]);
                stats.redacted.push(start..end);
            }
            k += 1;
        }
        w.write_all(&bytes).at(dst)?;
        pos = rec_end;
    }
    std::io::copy(&mut raw, &mut w).at(dst)?;
    let out = w.into_inner().map_err(|e| crate::Error::Io {
        path: dst.to_path_buf(),
        source: e.into_error(),
    })?;
    out.sync_all().at(dst)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge() {
        let mut r = vec![5..9, 0..2, 8..12, 2..3, 20..20];
        assert_eq!(merge_ranges(&mut r), vec![0..3, 5..12]);
    }
}
