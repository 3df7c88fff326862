//! The one decoder of events.bin framing: a push parser ([`Framer`]) that takes the file's bytes
//! in chunks of any size and applies every rule of FORMAT.md §2 and §4 (file header, schema
//! record first, plausible lengths, torn tail, trailer, incomplete marks). `reader::EventReader`
//! drives it from a file; verify drives it from a file streaming out of a pack. What it found
//! about the end of the stream is a [`Recovery`]; a file it cannot read at all is [`Unreadable`].
//! Memory stays bounded: one record header, and one record's payload when it is kept.

use crate::framing::*;

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

/// Why a file cannot be read at all (nothing in it can be trusted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// Shorter than the 8-byte file header.
    TooShort {
        /// Its length.
        len: u64,
    },
    /// The magic is not [`MAGIC`].
    BadMagic {
        /// The magic found.
        found: u32,
    },
    /// Another format version.
    Version {
        /// The file's version.
        file: u16,
    },
    /// Self-describing, but the file ends (or is damaged) before its schema record ends.
    NoSchema,
    /// Self-describing, but the first record is not the schema record.
    NotSchema {
        /// The first record's type.
        kind: u16,
    },
}

/// What [`Framer::feed`] completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The file header (always first).
    FileHeader(FileHeader),
    /// The schema record of a self-describing file (its payload is the schema JSON).
    Schema(Record),
    /// A record after the schema and before the trailer: an event or a writer mark.
    Record(Record),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    FileHeader,
    Boundary,
    Header,
    Payload { left: u64, keep: bool },
    AfterTrailer,
    Stopped,
}

/// The events.bin decoder: feed it the file's bytes in order, in chunks of any size; it
/// completes one [`Frame`] at a time. With the file's length known up front ([`Self::new`] with
/// `Some`) it decides about a torn tail as soon as it reaches it, without the bytes; otherwise
/// [`Self::finish`] says where the file ended.
#[derive(Debug)]
pub struct Framer {
    len: Option<u64>,
    offset: u64,
    state: State,
    head: Vec<u8>,
    cur: RecordHeader,
    cur_start: u64,
    payload: Vec<u8>,
    keep_payloads: bool,
    expect_schema: bool,
    file_header: Option<FileHeader>,
    unreadable: Option<Unreadable>,
    recovery: Recovery,
    trailer_end: u64,
}

impl Framer {
    /// A decoder at the start of a file of `len` bytes (`None`: unknown until
    /// [`Self::finish`]). Without `keep_payloads`, payloads are passed over (delivered empty),
    /// except those of the reserved types the decoder reads itself (trailer, schema,
    /// incomplete mark).
    pub fn new(len: Option<u64>, keep_payloads: bool) -> Self {
        Framer {
            len,
            offset: 0,
            state: State::FileHeader,
            head: Vec::with_capacity(RECORD_HEADER_LEN),
            cur: RecordHeader::default(),
            cur_start: 0,
            payload: Vec::new(),
            keep_payloads,
            expect_schema: false,
            file_header: None,
            unreadable: None,
            recovery: Recovery {
                good_len: FILE_HEADER_LEN as u64,
                ..Default::default()
            },
            trailer_end: 0,
        }
    }

    /// The same decoder, passing payloads over from here on (see [`Self::new`]).
    pub fn without_payloads(mut self) -> Self {
        self.keep_payloads = false;
        self
    }

    /// Consume bytes from the front of `data`; returns how many were used and the frame that
    /// completed, if one did (call again with the rest). Returns `(0, None)` once
    /// [`Self::is_done`], or when it needs more bytes and `data` is empty.
    pub fn feed(&mut self, data: &[u8]) -> (usize, Option<Frame>) {
        let mut used = 0usize;
        loop {
            let rest = &data[used..];
            match self.state {
                State::Stopped | State::AfterTrailer => {
                    // Unknown length: count what follows, to say how much was lost or ignored.
                    if self.len.is_none() {
                        self.offset += rest.len() as u64;
                        used = data.len();
                    }
                    return (used, None);
                }
                State::FileHeader => {
                    if let Some(len) = self.len.filter(|&l| l < FILE_HEADER_LEN as u64) {
                        self.set_unreadable(Unreadable::TooShort { len });
                        continue;
                    }
                    let Some(head) = self.take_head(rest, &mut used) else {
                        return (used, None);
                    };
                    let h = FileHeader::decode(&head);
                    if h.magic != MAGIC {
                        self.set_unreadable(Unreadable::BadMagic { found: h.magic });
                        continue;
                    }
                    if h.version != FORMAT_VERSION {
                        self.set_unreadable(Unreadable::Version { file: h.version });
                        continue;
                    }
                    self.file_header = Some(h);
                    self.expect_schema = h.flags & FLAG_SELF_DESCRIBING != 0;
                    self.state = State::Boundary;
                    return (used, Some(Frame::FileHeader(h)));
                }
                State::Boundary => {
                    if let Some(len) = self.len {
                        let left = len - self.offset;
                        if left == 0 {
                            self.end();
                            continue;
                        }
                        if left < RECORD_HEADER_LEN as u64 {
                            self.stop(Dropped::TornHeader { have: left }, self.offset);
                            continue;
                        }
                    }
                    if rest.is_empty() {
                        return (used, None);
                    }
                    self.cur_start = self.offset;
                    self.state = State::Header;
                }
                State::Header => {
                    let Some(head) = self.take_head(rest, &mut used) else {
                        return (used, None);
                    };
                    let h = RecordHeader::decode(&head);
                    if h.total_len < RECORD_HEADER_LEN as u32 || h.total_len > MAX_RECORD_LEN {
                        let len = h.total_len;
                        self.stop(Dropped::ImplausibleLength { len }, self.cur_start);
                        continue;
                    }
                    if let Some(len) = self.len {
                        let left = len - self.cur_start;
                        if h.total_len as u64 > left {
                            let expected = h.total_len;
                            self.stop(
                                Dropped::TornPayload {
                                    expected,
                                    have: left,
                                },
                                self.cur_start,
                            );
                            continue;
                        }
                    }
                    let keep = self.keep_payloads
                        || matches!(h.kind, TYPE_TRAILER | TYPE_INCOMPLETE | TYPE_SCHEMA);
                    self.cur = h;
                    self.payload = Vec::with_capacity(if keep { h.payload_len() } else { 0 });
                    self.state = State::Payload {
                        left: h.payload_len() as u64,
                        keep,
                    };
                }
                State::Payload { left, keep } => {
                    if left > 0 {
                        let n = (left.min(rest.len() as u64)) as usize;
                        if keep {
                            self.payload.extend_from_slice(&rest[..n]);
                        }
                        used += n;
                        self.offset += n as u64;
                        self.state = State::Payload {
                            left: left - n as u64,
                            keep,
                        };
                        if left > n as u64 {
                            return (used, None);
                        }
                    }
                    self.state = State::Boundary;
                    let rec = Record {
                        header: self.cur,
                        payload: std::mem::take(&mut self.payload),
                    };
                    if let Some(frame) = self.complete_record(rec) {
                        return (used, Some(frame));
                    }
                }
            }
        }
    }

    /// How many payload bytes the decoder is about to pass over unread (a payload it does not
    /// keep): a reader of a file may skip them with [`Self::skip`] instead of feeding them.
    pub fn skippable(&self) -> u64 {
        match self.state {
            State::Payload { left, keep: false } => left,
            _ => 0,
        }
    }

    /// Pass over `n` bytes (at most [`Self::skippable`]) without feeding them.
    pub fn skip(&mut self, n: u64) {
        if let State::Payload { left, keep: false } = self.state {
            let n = n.min(left);
            self.offset += n;
            self.state = State::Payload {
                left: left - n,
                keep: false,
            };
        }
    }

    /// The file ended here (after every byte was fed): settle a torn tail.
    pub fn finish(&mut self) {
        match self.state {
            State::FileHeader => {
                self.set_unreadable(Unreadable::TooShort { len: self.offset });
            }
            State::Boundary => self.end(),
            State::Header => {
                let have = self.offset - self.cur_start;
                self.stop(Dropped::TornHeader { have }, self.cur_start);
            }
            State::Payload { .. } => {
                let (expected, have) = (self.cur.total_len, self.offset - self.cur_start);
                self.stop(Dropped::TornPayload { expected, have }, self.cur_start);
            }
            // With the length known, the tail was measured when the stream stopped.
            State::AfterTrailer if self.len.is_none() => {
                self.recovery.bytes_after_trailer = self.offset - self.trailer_end;
            }
            State::Stopped if self.len.is_none() => {
                if let Some(at) = self.recovery.dropped_at {
                    self.recovery.dropped_bytes = self.offset - at;
                }
            }
            State::AfterTrailer | State::Stopped => {}
        }
    }

    /// No more frames will come (the end, the trailer, damage, or an unreadable file).
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Stopped | State::AfterTrailer)
    }

    /// Why the file cannot be read at all, if it cannot.
    pub fn unreadable(&self) -> Option<&Unreadable> {
        self.unreadable.as_ref()
    }

    /// The file header, once read.
    pub fn file_header(&self) -> Option<FileHeader> {
        self.file_header
    }

    /// What was found about the stream so far (final once done).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Bytes consumed (fed or skipped) so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Gather an `N`-byte header from the front of `rest` behind what earlier calls gathered,
    /// adding the bytes taken to `used`: the whole header once all of it is there (gathering
    /// starts afresh), else `None` (`rest` ran out: feed more).
    fn take_head<const N: usize>(&mut self, rest: &[u8], used: &mut usize) -> Option<[u8; N]> {
        let n = (N - self.head.len()).min(rest.len());
        self.head.extend_from_slice(&rest[..n]);
        self.offset += n as u64;
        *used += n;
        let whole: [u8; N] = self.head[..].try_into().ok()?;
        self.head.clear();
        Some(whole)
    }

    /// The file cannot be read at all, for `why`: nothing more is read.
    fn set_unreadable(&mut self, why: Unreadable) {
        self.unreadable = Some(why);
        self.state = State::Stopped;
    }

    fn end(&mut self) {
        if self.expect_schema {
            self.unreadable = Some(Unreadable::NoSchema);
        }
        self.state = State::Stopped;
    }

    fn stop(&mut self, why: Dropped, at: u64) {
        if self.expect_schema {
            self.unreadable = Some(Unreadable::NoSchema);
        }
        self.recovery.dropped = Some(why);
        self.recovery.dropped_at = Some(at);
        self.recovery.dropped_bytes = self.len.unwrap_or(self.offset).saturating_sub(at);
        self.state = State::Stopped;
    }

    fn complete_record(&mut self, rec: Record) -> Option<Frame> {
        if self.expect_schema {
            self.expect_schema = false;
            if rec.header.kind != TYPE_SCHEMA {
                self.set_unreadable(Unreadable::NotSchema {
                    kind: rec.header.kind,
                });
                return None;
            }
            self.recovery.good_len = self.offset;
            return Some(Frame::Schema(rec));
        }
        if let Some(total) = trailer_total(&rec.header, &rec.payload) {
            self.recovery.trailer_total = Some(total);
            self.trailer_end = self.offset;
            self.recovery.bytes_after_trailer = self.len.map_or(0, |l| l - self.offset);
            self.state = State::AfterTrailer;
            return None;
        }
        self.recovery.records += 1;
        self.recovery.last_seq = Some(rec.header.seq);
        self.recovery.good_len = self.offset;
        if rec.header.kind == TYPE_INCOMPLETE {
            self.recovery
                .incomplete_marks
                .push(String::from_utf8_lossy(&rec.payload).into_owned());
        }
        Some(Frame::Record(rec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(records: &[(u16, &[u8])], trailer: bool) -> Vec<u8> {
        let mut v = FileHeader::current().encode().to_vec();
        for (seq, (kind, payload)) in records.iter().enumerate() {
            let h = RecordHeader {
                kind: *kind,
                seq: seq as u64,
                total_len: (RECORD_HEADER_LEN + payload.len()) as u32,
                ..Default::default()
            };
            v.extend_from_slice(&h.encode());
            v.extend_from_slice(payload);
        }
        if trailer {
            v.extend_from_slice(&encode_trailer(
                records.len() as u64,
                0,
                records.len() as u64 - 1,
            ));
        }
        v
    }

    fn run(bytes: &[u8], len: Option<u64>, chunk: usize) -> (Framer, Vec<Frame>) {
        let mut f = Framer::new(len, true);
        let mut frames = Vec::new();
        for mut piece in bytes.chunks(chunk) {
            loop {
                let (n, frame) = f.feed(piece);
                piece = &piece[n..];
                match frame {
                    Some(fr) => frames.push(fr),
                    None if piece.is_empty() || n == 0 => break,
                    None => {}
                }
            }
        }
        while let (_, Some(fr)) = f.feed(&[]) {
            frames.push(fr);
        }
        f.finish();
        (f, frames)
    }

    #[test]
    fn known_and_unknown_lengths_agree_whatever_the_chunks() {
        let good = file(
            &[
                (TYPE_SCHEMA, b"{}"),
                (1, b"abc"),
                (TYPE_INCOMPLETE, b"lost"),
            ],
            true,
        );
        for cut in [0, 3, 8, 20, 42, 50, good.len() - 5, good.len()] {
            let bytes = &good[..cut];
            let (a, fa) = run(bytes, Some(bytes.len() as u64), 1 << 20);
            for chunk in [1, 7, 33] {
                let (b, fb) = run(bytes, None, chunk);
                assert_eq!(a.recovery(), b.recovery(), "cut {cut} chunk {chunk}");
                assert_eq!(a.unreadable(), b.unreadable(), "cut {cut} chunk {chunk}");
                assert_eq!(fa, fb);
            }
        }
        let (f, frames) = run(&good, Some(good.len() as u64), 5);
        assert!(f.recovery().complete() || !f.recovery().incomplete_marks.is_empty());
        assert_eq!(f.recovery().records, 2);
        assert_eq!(frames.len(), 4);
        let (f, _) = run(&good[..3], None, 1);
        assert_eq!(f.unreadable(), Some(&Unreadable::TooShort { len: 3 }));
    }
}
