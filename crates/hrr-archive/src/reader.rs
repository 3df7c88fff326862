//! Streaming reader of events.bin with crash recovery. Memory stays bounded whatever the file
//! size: one buffered window plus one record (at most [`MAX_RECORD_LEN`]). A torn tail, an
//! implausible length or anything after the trailer ends the stream; every complete record before
//! it is delivered and [`Recovery`] says what was dropped. See FORMAT.md §4.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::framing::*;
use crate::fsutil;
use crate::schema::Schema;

/// One record as stored: header and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Record header.
    pub header: RecordHeader,
    /// Payload (empty when the reader skips payloads).
    pub payload: Vec<u8>,
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// Fewer than 32 bytes were left for a record header.
    TornHeader {
        /// Bytes present.
        have: u64,
    },
    /// A record's length field is below 32 or above the limit.
    ImplausibleLength {
        /// The length field.
        len: u32,
    },
    /// The record's payload runs past the end of the file.
    TornPayload {
        /// The record length claimed.
        expected: u32,
        /// Bytes present (header included).
        have: u64,
    },
}

/// What the reader found about the end of the stream; complete once the iterator is exhausted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Records delivered after the schema record (all types but the trailer).
    pub records: u64,
    /// The event count a valid trailer claims, if one was found.
    pub trailer_total: Option<u64>,
    /// Why reading stopped early, if it did.
    pub dropped: Option<Dropped>,
    /// File offset where the stopped record started.
    pub dropped_at: Option<u64>,
    /// Bytes lost at the tail (a torn record, or everything after an implausible length).
    pub dropped_bytes: u64,
    /// Bytes after a valid trailer (ignored).
    pub bytes_after_trailer: u64,
    /// Reasons of every "incomplete" mark the writer recorded.
    pub incomplete_marks: Vec<String>,
    /// Highest sequence number seen.
    pub last_seq: Option<u64>,
    /// Offset just past the last complete record (where a repair appends the trailer).
    pub good_len: u64,
}

impl Recovery {
    /// True when a trailer was found and counts exactly the records before it.
    pub fn clean_trailer(&self) -> bool {
        self.trailer_total == Some(self.records)
    }

    /// True when the stream ended cleanly and the writer never marked it incomplete.
    pub fn complete(&self) -> bool {
        self.clean_trailer() && self.incomplete_marks.is_empty() && self.dropped.is_none()
    }

    /// Human-readable reasons why the capture is not complete (empty when complete).
    pub fn incompleteness(&self) -> Vec<String> {
        let mut why = Vec::new();
        for m in &self.incomplete_marks {
            why.push(format!("writer marked it incomplete: {m}"));
        }
        match (&self.dropped, self.trailer_total) {
            (Some(d), _) => why.push(format!(
                "no clean-shutdown trailer (capture likely crashed); {}",
                describe_drop(d, self.dropped_bytes)
            )),
            (None, None) => why
                .push("no clean-shutdown trailer (capture likely crashed or still running)".into()),
            (None, Some(t)) if t != self.records => why.push(format!(
                "clean-shutdown trailer counts {t} events but {} precede it",
                self.records
            )),
            _ => {}
        }
        why
    }
}

fn describe_drop(d: &Dropped, bytes: u64) -> String {
    match d {
        Dropped::TornHeader { have } => {
            format!("truncated event header ({have}/{RECORD_HEADER_LEN} bytes) at tail discarded")
        }
        Dropped::ImplausibleLength { len } => format!(
            "implausible record length {len} (min {RECORD_HEADER_LEN}, max {MAX_RECORD_LEN}); {bytes} bytes from there discarded"
        ),
        Dropped::TornPayload { expected, have } => format!(
            "torn trailing record ({have} of {expected} bytes) discarded"
        ),
    }
}

/// Streaming reader over one events.bin.
pub struct EventReader {
    path: PathBuf,
    input: BufReader<File>,
    file_len: u64,
    offset: u64,
    header: FileHeader,
    schema: Option<Schema>,
    read_payloads: bool,
    done: bool,
    recovery: Recovery,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .finish()
    }
}

impl EventReader {
    /// Open `path`, check its header (magic, version) and read the schema record.
    pub fn open(path: &Path) -> Result<Self> {
        let file = fsutil::open_read(path)?;
        let file_len = file.metadata().at(path)?.len();
        let mut input = BufReader::with_capacity(1 << 20, file);
        if file_len < FILE_HEADER_LEN as u64 {
            return Err(Error::TooShort {
                path: path.to_path_buf(),
                len: file_len,
            });
        }
        let mut hb = [0u8; FILE_HEADER_LEN];
        input.read_exact(&mut hb).at(path)?;
        let header = FileHeader::decode(&hb);
        if header.magic != MAGIC {
            return Err(Error::BadMagic {
                path: path.to_path_buf(),
                found: header.magic,
                expected: MAGIC,
            });
        }
        if header.version != FORMAT_VERSION {
            return Err(Error::VersionMismatch {
                path: path.to_path_buf(),
                file: header.version,
                reader: FORMAT_VERSION,
            });
        }
        let mut reader = EventReader {
            path: path.to_path_buf(),
            input,
            file_len,
            offset: FILE_HEADER_LEN as u64,
            header,
            schema: None,
            read_payloads: true,
            done: false,
            recovery: Recovery {
                good_len: FILE_HEADER_LEN as u64,
                ..Default::default()
            },
        };
        if header.flags & FLAG_SELF_DESCRIBING != 0 {
            let bad = |reason: String| Error::BadSchema {
                path: path.to_path_buf(),
                reason,
            };
            match reader.read_record()? {
                Some(r) if r.header.kind == TYPE_SCHEMA => {
                    reader.schema = Some(Schema::from_json(&r.payload).map_err(bad)?);
                    reader.recovery.good_len = reader.offset;
                }
                Some(r) => {
                    return Err(bad(format!(
                        "first record has type 0x{:04x}, expected the schema record 0x{TYPE_SCHEMA:04x}",
                        r.header.kind
                    )))
                }
                None => return Err(bad("the file ends before its schema record".into())),
            }
        }
        Ok(reader)
    }

    /// Deliver records with empty payloads (headers only); counting without reading data.
    pub fn skip_payloads(mut self) -> Self {
        self.read_payloads = false;
        self
    }

    /// The file header.
    pub fn file_header(&self) -> FileHeader {
        self.header
    }

    /// The schema, when the file is self-describing.
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// Size of events.bin when it was opened.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// What was recovered and dropped so far (final once iteration ends).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The path being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn stop(&mut self, why: Dropped, at: u64) {
        self.recovery.dropped = Some(why);
        self.recovery.dropped_at = Some(at);
        self.recovery.dropped_bytes = self.file_len.saturating_sub(at);
        self.done = true;
    }

    /// Read the next record of any type; `None` at the end of the stream (or where it stops).
    fn read_record(&mut self) -> Result<Option<Record>> {
        if self.done {
            return Ok(None);
        }
        let start = self.offset;
        let left = self.file_len.saturating_sub(start);
        if left == 0 {
            self.done = true;
            return Ok(None);
        }
        if left < RECORD_HEADER_LEN as u64 {
            self.stop(Dropped::TornHeader { have: left }, start);
            return Ok(None);
        }
        let mut hb = [0u8; RECORD_HEADER_LEN];
        self.input.read_exact(&mut hb).at(&self.path)?;
        let header = RecordHeader::decode(&hb);
        if header.total_len < RECORD_HEADER_LEN as u32 || header.total_len > MAX_RECORD_LEN {
            self.stop(
                Dropped::ImplausibleLength {
                    len: header.total_len,
                },
                start,
            );
            return Ok(None);
        }
        if header.total_len as u64 > left {
            self.stop(
                Dropped::TornPayload {
                    expected: header.total_len,
                    have: left,
                },
                start,
            );
            return Ok(None);
        }
        let len = header.payload_len();
        let must_read = self.read_payloads
            || header.kind == TYPE_TRAILER
            || header.kind == TYPE_INCOMPLETE
            || header.kind == TYPE_SCHEMA;
        let payload = if must_read {
            let mut p = vec![0u8; len];
            self.input.read_exact(&mut p).at(&self.path)?;
            p
        } else {
            self.input.seek_relative(len as i64).at(&self.path)?;
            Vec::new()
        };
        self.offset = start + header.total_len as u64;
        Ok(Some(Record { header, payload }))
    }

    /// The next record including writer marks (everything but the schema and the trailer).
    pub fn next_raw(&mut self) -> Result<Option<Record>> {
        let Some(rec) = self.read_record()? else {
            return Ok(None);
        };
        if let Some(total) = trailer_total(&rec.header, &rec.payload) {
            self.recovery.trailer_total = Some(total);
            self.recovery.bytes_after_trailer = self.file_len - self.offset;
            self.done = true;
            return Ok(None);
        }
        self.recovery.records += 1;
        self.recovery.last_seq = Some(rec.header.seq);
        self.recovery.good_len = self.offset;
        if rec.header.kind == TYPE_INCOMPLETE {
            self.recovery
                .incomplete_marks
                .push(String::from_utf8_lossy(&rec.payload).into_owned());
        }
        Ok(Some(rec))
    }
}

impl Iterator for EventReader {
    type Item = Result<Record>;

    /// Events in file order; writer marks are noted in [`Recovery`] and not yielded.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_raw() {
                Ok(Some(r)) if r.header.kind == TYPE_INCOMPLETE => continue,
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => return None,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
