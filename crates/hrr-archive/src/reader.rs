//! Streaming reader of events.bin with crash recovery. Memory stays bounded whatever the file
//! size: one buffered window plus one record (at most [`MAX_RECORD_LEN`]). A torn tail, an
//! implausible length or anything after the trailer ends the stream; every complete record before
//! it is delivered and [`Recovery`] says what was dropped. See FORMAT.md §4.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::framing::*;
use crate::fsutil;
use crate::schema::{decode_fields, object_fields, CallDef, FieldType, ObjectRef, Schema, Value};
pub use crate::stream::{Dropped, Record, Recovery};
use crate::stream::{Frame, Framer, Unreadable};

/// Streaming reader over one events.bin: a [`Framer`] fed from the file.
pub struct EventReader {
    path: PathBuf,
    input: BufReader<File>,
    file_len: u64,
    framer: Framer,
    header: FileHeader,
    schema: Option<Schema>,
    failed: bool,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("path", &self.path)
            .field("offset", &self.framer.offset())
            .finish()
    }
}

impl EventReader {
    /// Open `path`, check its header (magic, version) and read the schema record.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, true)
    }

    fn open_with(path: &Path, keep_payloads: bool) -> Result<Self> {
        let file = fsutil::open_read(path)?;
        let file_len = file.metadata().at(path)?.len();
        let mut reader = EventReader {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 20, file),
            file_len,
            framer: Framer::new(Some(file_len), keep_payloads),
            header: FileHeader::current(),
            schema: None,
            failed: false,
        };
        match reader.pump()? {
            Some(Frame::FileHeader(h)) => reader.header = h,
            _ => return Err(reader.unreadable_error()),
        }
        if reader.header.flags & FLAG_SELF_DESCRIBING != 0 {
            match reader.pump()? {
                Some(Frame::Schema(r)) => {
                    let schema =
                        Schema::from_json(&r.payload).map_err(|reason| Error::BadSchema {
                            path: path.to_path_buf(),
                            reason,
                        })?;
                    reader.schema = Some(schema);
                }
                _ => return Err(reader.unreadable_error()),
            }
        }
        Ok(reader)
    }

    /// Why the file could not be opened, from what the framer found.
    fn unreadable_error(&self) -> Error {
        let path = self.path.clone();
        let bad = |reason: String| Error::BadSchema {
            path: self.path.clone(),
            reason,
        };
        match self.framer.unreadable() {
            Some(Unreadable::TooShort { len }) => Error::TooShort { path, len: *len },
            Some(Unreadable::BadMagic { found }) => Error::BadMagic {
                path,
                found: *found,
                expected: MAGIC,
            },
            Some(Unreadable::Version { file }) => Error::VersionMismatch {
                path,
                file: *file,
                reader: FORMAT_VERSION,
            },
            Some(Unreadable::NotSchema { kind }) => bad(format!(
                "first record has type 0x{kind:04x}, expected the schema record 0x{TYPE_SCHEMA:04x}"
            )),
            Some(Unreadable::NoSchema) | None => {
                bad("the file ends before its schema record".into())
            }
        }
    }

    /// Feed the framer from the file until it completes a frame or is done.
    fn pump(&mut self) -> Result<Option<Frame>> {
        loop {
            if let (_, Some(frame)) = self.framer.feed(&[]) {
                return Ok(Some(frame));
            }
            if self.framer.is_done() {
                return Ok(None);
            }
            let skip = self.framer.skippable();
            let buffered = self.input.buffer().len() as u64;
            if skip > buffered {
                // A payload not kept and longer than what is buffered: seek past it.
                self.input.seek_relative(skip as i64).at(&self.path)?;
                self.framer.skip(skip);
                continue;
            }
            let buf = self.input.fill_buf().at(&self.path)?;
            if buf.is_empty() {
                // The file is shorter than when it was opened.
                return Err(Error::Io {
                    path: self.path.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ),
                });
            }
            let (n, frame) = self.framer.feed(buf);
            self.input.consume(n);
            if frame.is_some() {
                return Ok(frame);
            }
        }
    }

    /// Open `path` to read record headers only: payloads are passed over (delivered empty),
    /// except those of writer marks; counting without reading data.
    pub fn open_headers(path: &Path) -> Result<Self> {
        Self::open_with(path, false)
    }

    /// Deliver records with empty payloads (headers only); counting without reading data.
    /// Records already read ahead keep theirs.
    pub fn skip_payloads(self) -> Self {
        let EventReader {
            path,
            input,
            file_len,
            framer,
            header,
            schema,
            failed,
        } = self;
        EventReader {
            framer: framer.without_payloads(),
            path,
            input,
            file_len,
            header,
            schema,
            failed,
        }
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
        self.framer.recovery()
    }

    /// The path being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next record including writer marks (everything but the schema and the trailer).
    pub fn next_raw(&mut self) -> Result<Option<Record>> {
        if self.failed {
            return Ok(None);
        }
        match self.pump() {
            Ok(Some(Frame::Record(r))) => Ok(Some(r)),
            Ok(_) => Ok(None),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Read to the end of the stream, headers only, and return what was found: the pass that
    /// counts records and finds a torn tail without reading payloads.
    pub fn scan_headers(path: &Path) -> Result<Recovery> {
        let mut r = Self::open_headers(path)?;
        while r.next_raw()?.is_some() {}
        Ok(r.recovery().clone())
    }

    /// Events in file order (writer marks are noted in [`Recovery`] and not yielded), each with
    /// its call looked up in `schema` (normally [`Self::schema`], cloned).
    pub fn decoded<'r, 's>(&'r mut self, schema: Option<&'s Schema>) -> Decoded<'r, 's> {
        Decoded {
            reader: self,
            schema,
        }
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
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// If events.bin at `path` has a readable file header and ends with a valid trailer, the event
/// count that trailer claims; reads the header and the last 44 bytes only.
pub fn tail_trailer(path: &Path) -> Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    EventReader::open(path)?;
    let mut f = fsutil::open_read(path)?;
    let len = f.metadata().at(path)?.len();
    if len < TRAILER_LEN as u64 {
        return Ok(None);
    }
    let mut b = [0u8; TRAILER_LEN];
    f.seek(SeekFrom::Start(len - TRAILER_LEN as u64))
        .and_then(|_| f.read_exact(&mut b))
        .at(path)?;
    let header = RecordHeader::decode(b[..RECORD_HEADER_LEN].try_into().expect("32 bytes"));
    Ok(trailer_total(&header, &b[RECORD_HEADER_LEN..]))
}

/// One event with its call looked up in the schema: what `--info`, `--events`, verify and
/// replay read. Fields are decoded on demand, by name, from the schema alone.
#[derive(Debug, Clone)]
pub struct DecodedEvent<'s> {
    /// Record header.
    pub header: RecordHeader,
    /// Payload as stored.
    pub payload: Vec<u8>,
    /// The call, when the schema names this record type.
    pub call: Option<&'s CallDef>,
}

impl<'s> DecodedEvent<'s> {
    /// The call's name, or for a type the schema does not name, [`type_name`]'s.
    pub fn name(&self) -> Cow<'s, str> {
        match self.call {
            Some(c) => Cow::Borrowed(c.name.as_str()),
            None => Cow::Owned(type_name(self.header.kind)),
        }
    }

    /// Every field, by name in schema order (`None`: the schema does not name this type; an
    /// error: the payload does not match its schema entry).
    pub fn fields(&self) -> Option<std::result::Result<Vec<(&'s str, Value)>, String>> {
        self.call.map(|c| decode_fields(c, &self.payload))
    }

    /// Every `blob` and `code` field: where its id lies and the id.
    pub fn object_refs(&self) -> Option<std::result::Result<Vec<ObjectRef<'s>>, String>> {
        self.call.map(|c| object_fields(c, &self.payload))
    }

    /// The call's first field is its result code and it is not success (0).
    pub fn failed(&self) -> bool {
        self.call
            .is_some_and(|c| c.fields.first().is_some_and(|f| f.ty == FieldType::Result))
            && self.payload.len() >= 4
            && self.payload[..4] != [0, 0, 0, 0]
    }
}

/// Iterator of [`EventReader::decoded`].
#[derive(Debug)]
pub struct Decoded<'r, 's> {
    reader: &'r mut EventReader,
    schema: Option<&'s Schema>,
}

impl<'s> Iterator for Decoded<'_, 's> {
    type Item = Result<DecodedEvent<'s>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rec = match self.reader.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(DecodedEvent {
            call: self.schema.and_then(|s| s.call(rec.header.kind)),
            header: rec.header,
            payload: rec.payload,
        }))
    }
}
