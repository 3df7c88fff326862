//! Writers: [`EventWriter`] appends records to events.bin (buffered, periodically flushed and
//! fsynced, trailer on `finish`, explicit incomplete marks); [`ProcessWriter`] owns one
//! `pid-<pid>/` capture: its events, objects, `active` marker and manifests. See FORMAT.md §5.

use std::path::{Path, PathBuf};

use crate::blobs::{CodeKind, ObjectId, ObjectStore};
use crate::error::{Error, Result};
use crate::event_sink::EventSink;
use crate::framing::*;
use crate::fsutil;
use crate::layout::{self, BLOBS_DIR, CODE_OBJECTS_DIR};
use crate::manifest::{self, ProcessManifest};
use crate::schema::{PayloadBuilder, Schema};

pub use crate::layout::names::{ACTIVE_MARKER, EVENTS_FILE};

/// When the writer hands its buffer to the kernel and when it fsyncs.
#[derive(Debug, Clone, Copy)]
pub struct FlushPolicy {
    /// Buffer size; a fuller buffer is written out.
    pub buffer_bytes: usize,
    /// Write the buffer out after this many events.
    pub flush_every_events: u64,
    /// fsync after this many events.
    pub sync_every_events: u64,
}

impl Default for FlushPolicy {
    fn default() -> Self {
        FlushPolicy {
            buffer_bytes: 256 << 10,
            flush_every_events: 1024,
            sync_every_events: 262_144,
        }
    }
}

/// Appends records to one events.bin.
#[derive(Debug)]
pub struct EventWriter {
    sink: EventSink,
    buf: Vec<u8>,
    policy: FlushPolicy,
    next_seq: u64,
    records: u64,
    since_flush: u64,
    since_sync: u64,
    marks: Vec<String>,
    bytes: u64,
}

/// A record being written in place at the end of an [`EventWriter`]'s buffer
/// ([`EventWriter::begin_record`]).
#[derive(Debug)]
pub struct OpenRecord {
    payload: PayloadBuilder,
    /// Where the record's header starts in the buffer.
    start: usize,
}

impl OpenRecord {
    /// The payload, to append the record's fields to.
    #[inline]
    pub fn payload(&mut self) -> &mut PayloadBuilder {
        &mut self.payload
    }
}

impl EventWriter {
    /// Create a new events.bin (must not exist) with the file header and schema record.
    pub fn create(path: &Path, schema: &Schema, policy: FlushPolicy) -> Result<Self> {
        let file = fsutil::create_new(path)?;
        let mut w = EventWriter {
            sink: EventSink::direct(file, path.to_path_buf()),
            buf: Vec::with_capacity(policy.buffer_bytes),
            policy,
            next_seq: 0,
            records: 0,
            since_flush: 0,
            since_sync: 0,
            marks: Vec::new(),
            bytes: 0,
        };
        w.buf.extend_from_slice(&FileHeader::current().encode());
        let json = schema.to_json();
        w.push_record(TYPE_SCHEMA, 0, now_ns(), &json)?;
        w.flush(true)?;
        Ok(w)
    }

    fn push_record(&mut self, kind: u16, thread_id: u64, ts: u64, payload: &[u8]) -> Result<u64> {
        let mut record = self.begin_record();
        record.payload().encoded(payload);
        self.close_record(record, (kind, thread_id, ts))
    }

    /// Start a record whose payload is written in place, after room for its header at the end
    /// of the buffer (no copy of the payload): write the payload into
    /// [`OpenRecord::payload`], then [`Self::end_record`] or [`Self::cancel_record`]. Nothing
    /// else may be appended meanwhile (the buffer is the open record's until then).
    /// Inlined, as [`Self::end_record`] is: a record's framing is capture's per-call path.
    #[inline]
    pub fn begin_record(&mut self) -> OpenRecord {
        let mut buf = std::mem::take(&mut self.buf);
        let start = buf.len();
        buf.resize(start + RECORD_HEADER_LEN, 0);
        OpenRecord {
            payload: PayloadBuilder::appending(buf),
            start,
        }
    }

    /// Finish the open record `record` as one event (as [`Self::append_at`] appends one);
    /// returns its sequence number. A payload over the record limit is dropped, the buffer
    /// kept as it was before the record.
    #[inline]
    pub fn end_record(
        &mut self,
        record: OpenRecord,
        kind: u16,
        thread_id: u64,
        ts: u64,
    ) -> Result<u64> {
        let seq = self.close_record(record, (kind, thread_id, ts))?;
        self.count_appended()?;
        Ok(seq)
    }

    /// Drop the open record `record`: the buffer is as it was before [`Self::begin_record`].
    pub fn cancel_record(&mut self, record: OpenRecord) {
        let mut buf = record.payload.into_bytes();
        buf.truncate(record.start);
        self.buf = buf;
    }

    /// Give the buffer back with `record` closed: its header (record type, thread, time stamp)
    /// written in front of its payload.
    #[inline]
    fn close_record(
        &mut self,
        record: OpenRecord,
        (kind, thread_id, ts): (u16, u64, u64),
    ) -> Result<u64> {
        let total = (record.payload.as_bytes().len() - record.start) as u64;
        if total > MAX_RECORD_LEN as u64 {
            return Err(self.refuse_record(record, total));
        }
        let start = record.start;
        let mut buf = record.payload.into_bytes();
        let seq = self.next_seq;
        let header = RecordHeader {
            kind,
            seq,
            timestamp_ns: ts,
            thread_id,
            total_len: total as u32,
        };
        buf[start..start + RECORD_HEADER_LEN].copy_from_slice(&header.encode());
        self.buf = buf;
        self.next_seq += 1;
        if self.buf.len() >= self.policy.buffer_bytes {
            self.hand_over()?;
        }
        Ok(seq)
    }

    /// Drop `record`, `total` bytes long, over the record limit: the error saying so.
    #[cold]
    #[inline(never)]
    fn refuse_record(&mut self, record: OpenRecord, total: u64) -> Error {
        self.cancel_record(record);
        Error::TooLarge {
            what: "event record",
            size: total,
            limit: MAX_RECORD_LEN as u64,
        }
    }

    /// An event was appended: count it, and write out or fsync as the policy says.
    #[inline]
    fn count_appended(&mut self) -> Result<()> {
        self.records += 1;
        self.since_flush += 1;
        self.since_sync += 1;
        if self.since_sync >= self.policy.sync_every_events {
            self.flush(true)
        } else if self.since_flush >= self.policy.flush_every_events {
            self.hand_over()
        } else {
            Ok(())
        }
    }

    /// Append one event; returns its sequence number.
    pub fn append(&mut self, kind: u16, thread_id: u64, payload: &[u8]) -> Result<u64> {
        self.append_at(kind, thread_id, now_ns(), payload)
    }

    /// Append one event with an explicit timestamp.
    pub fn append_at(&mut self, kind: u16, thread_id: u64, ts: u64, payload: &[u8]) -> Result<u64> {
        let seq = self.push_record(kind, thread_id, ts, payload)?;
        self.count_appended()?;
        Ok(seq)
    }

    /// Record that the capture lost something: the archive can never be called complete, not
    /// even by a repair. Written through and fsynced at once.
    pub fn mark_incomplete(&mut self, reason: &str) -> Result<()> {
        self.marks.push(reason.to_string());
        self.push_record(TYPE_INCOMPLETE, 0, now_ns(), reason.as_bytes())?;
        self.records += 1;
        self.flush(true)
    }

    /// Write events.bin from a background thread from now on ([`EventSink`]), which first
    /// runs `on_start`: buffered records are handed to it instead of being written by the
    /// appending thread; [`Self::flush`] still returns only once everything appended is with
    /// the kernel.
    pub fn write_in_background(&mut self, on_start: fn()) -> Result<()> {
        self.sink.start_background(on_start)
    }

    /// Hand buffered records on to be written (by the background thread when there is one,
    /// else now), without waiting for them.
    pub fn hand_over(&mut self) -> Result<()> {
        self.bytes += self.buf.len() as u64;
        self.since_flush = 0;
        self.sink.hand_over(&mut self.buf)
    }

    /// Hand buffered records to the kernel (and everything handed over before them); with
    /// `sync`, also fsync.
    pub fn flush(&mut self, sync: bool) -> Result<()> {
        self.bytes += self.buf.len() as u64;
        self.sink.write_all_now(&mut self.buf)?;
        self.since_flush = 0;
        if sync {
            self.sink.sync()?;
            self.since_sync = 0;
        }
        Ok(())
    }

    /// Records written so far (events and marks).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Reasons given to [`Self::mark_incomplete`].
    pub fn incomplete_marks(&self) -> &[String] {
        &self.marks
    }

    /// Bytes handed on to be written so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Write the trailer, flush and fsync. Returns the record count.
    pub fn finish(mut self) -> Result<u64> {
        let trailer = encode_trailer(self.next_seq, now_ns(), self.records);
        self.buf.extend_from_slice(&trailer);
        self.flush(true)?;
        Ok(self.records)
    }
}

/// Writes one process capture: `pid-<pid>/` with events.bin, blobs, code objects, manifests.
#[derive(Debug)]
pub struct ProcessWriter {
    root: PathBuf,
    dir: PathBuf,
    events: EventWriter,
    objects: std::sync::Arc<ObjectStore>,
    manifest: ProcessManifest,
}

impl ProcessWriter {
    /// Create `root/pid-<pid>/` (and `root`), write the `active` marker and an initial manifest
    /// (`complete: false`), then the events.bin header and schema. Fails if that folder already
    /// holds a capture.
    pub fn create(root: &Path, pid: u32, parent_pid: u32, schema: &Schema) -> Result<Self> {
        Self::create_with(root, pid, parent_pid, schema, FlushPolicy::default())
    }

    /// [`Self::create`] with an explicit flush policy.
    pub fn create_with(
        root: &Path,
        pid: u32,
        parent_pid: u32,
        schema: &Schema,
        policy: FlushPolicy,
    ) -> Result<Self> {
        fsutil::create_private_dir(root)?;
        let dir = root.join(layout::pid_dir_name(pid));
        fsutil::create_private_dir(&dir)?;
        fsutil::create_private_dir(&dir.join(BLOBS_DIR))?;
        fsutil::create_private_dir(&dir.join(CODE_OBJECTS_DIR))?;
        let events_path = dir.join(EVENTS_FILE);
        if std::fs::symlink_metadata(&events_path).is_ok() {
            return Err(Error::Io {
                path: events_path,
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "this folder already holds a capture",
                ),
            });
        }
        layout::write_active_marker(&dir, pid)?;
        let mut manifest = ProcessManifest::new(pid, parent_pid);
        manifest.api = Some(schema.api.clone());
        manifest.incomplete_reason =
            Some("capture in progress or the process did not exit cleanly".into());
        manifest::write_process_manifest(&dir, &manifest)?;
        let events = EventWriter::create(&events_path, schema, policy)?;
        Ok(ProcessWriter {
            root: root.to_path_buf(),
            objects: std::sync::Arc::new(ObjectStore::new(&dir)),
            dir,
            events,
            manifest,
        })
    }

    /// The `pid-<pid>/` folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The event writer.
    pub fn events(&mut self) -> &mut EventWriter {
        &mut self.events
    }

    /// The manifest that `finish` will write (metadata, unreplayable calls, ...).
    pub fn manifest_mut(&mut self) -> &mut ProcessManifest {
        &mut self.manifest
    }

    /// Store a host buffer.
    pub fn put_blob(&mut self, bytes: &[u8]) -> Result<ObjectId> {
        Ok(self.objects.put_blob(bytes)?.0)
    }

    /// The object store, for a thread that stores blobs beside the writer (its objects are
    /// counted in the manifest's `blob_count` like the writer's own).
    pub fn object_store(&self) -> std::sync::Arc<ObjectStore> {
        self.objects.clone()
    }

    /// Store a code object.
    pub fn put_code_object(&mut self, bytes: &[u8], kind: CodeKind) -> Result<ObjectId> {
        Ok(self.objects.put_code_object(bytes, kind)?.0)
    }

    /// Write the manifest as it stands (complete: false), e.g. after metadata was learnt.
    pub fn checkpoint_manifest(&mut self) -> Result<()> {
        self.events.flush(false)?;
        self.manifest.status.event_count = self.events.records();
        self.manifest.status.blob_count = self.objects.new_objects();
        manifest::write_process_manifest(&self.dir, &self.manifest)
    }

    /// Clean shutdown: trailer, manifest (complete unless marked incomplete), `active` removed,
    /// root index rebuilt. Returns the manifest written.
    pub fn finish(self) -> Result<ProcessManifest> {
        let ProcessWriter {
            root,
            dir,
            events,
            mut manifest,
            objects,
            ..
        } = self;
        let marks = events.incomplete_marks().to_vec();
        manifest.status.event_count = events.finish()?;
        manifest.status.blob_count = objects.new_objects();
        manifest.status.complete = marks.is_empty();
        manifest.incomplete_reason = (!marks.is_empty())
            .then(|| format!("writer marked it incomplete: {}", marks.join("; ")));
        manifest::write_process_manifest(&dir, &manifest)?;
        layout::remove_active_marker(&dir);
        manifest::rebuild_root_index(&root)?;
        Ok(manifest)
    }
}
