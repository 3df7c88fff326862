//! events.bin framing: the 8-byte file header, the 32-byte record header, the reserved record
//! types and the 44-byte clean-shutdown trailer. All little endian, packed. See FORMAT.md §2.

/// `u32` magic at offset 0 of events.bin ("EHRR" on disk).
pub const MAGIC: u32 = 0x5252_4845;
/// The events.bin format version this library reads and writes.
pub const FORMAT_VERSION: u16 = 1;
/// File-header flag: the first record is a schema record (type [`TYPE_SCHEMA`]).
pub const FLAG_SELF_DESCRIBING: u16 = 0x8000;
/// Size of the file header.
pub const FILE_HEADER_LEN: usize = 8;
/// Size of a record header.
pub const RECORD_HEADER_LEN: usize = 32;
/// Size of the trailer record.
pub const TRAILER_LEN: usize = 44;
/// `u32` at offset 40 of the trailer ("HEOF").
pub const TRAILER_MAGIC: u32 = 0x464F_4548;
/// Largest record the reader accepts (header included); longer lengths are implausible.
pub const MAX_RECORD_LEN: u32 = 64 << 20;

/// Record type of the clean-shutdown trailer.
pub const TYPE_TRAILER: u16 = 0xFFFF;
/// Record type of the schema record (JSON payload).
pub const TYPE_SCHEMA: u16 = 0xFFFE;
/// Record type reserved for region events written by outside tooling.
pub const TYPE_REGION: u16 = 0xFFFD;
/// Record type of the writer's "incomplete" mark (UTF-8 reason payload).
pub const TYPE_INCOMPLETE: u16 = 0xFFFC;
/// Record types at or above this value are reserved for the format itself.
pub const FIRST_RESERVED_TYPE: u16 = 0xFFF0;

/// The 8-byte file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Must equal [`MAGIC`].
    pub magic: u32,
    /// Format version.
    pub version: u16,
    /// `FLAG_*` bits.
    pub flags: u16,
}

impl FileHeader {
    /// The header this library writes.
    pub fn current() -> Self {
        FileHeader {
            magic: MAGIC,
            version: FORMAT_VERSION,
            flags: FLAG_SELF_DESCRIBING,
        }
    }

    /// Encode to bytes.
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..4].copy_from_slice(&self.magic.to_le_bytes());
        b[4..6].copy_from_slice(&self.version.to_le_bytes());
        b[6..8].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// Decode from bytes.
    pub fn decode(b: &[u8; FILE_HEADER_LEN]) -> Self {
        FileHeader {
            magic: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            version: u16::from_le_bytes([b[4], b[5]]),
            flags: u16::from_le_bytes([b[6], b[7]]),
        }
    }
}

/// The 32-byte header in front of every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordHeader {
    /// Call id (from the schema) or one of the reserved `TYPE_*` values.
    pub kind: u16,
    /// Global sequence number, strictly increasing in file order.
    pub seq: u64,
    /// Nanoseconds since the Unix epoch when the call returned.
    pub timestamp_ns: u64,
    /// OS thread id of the caller.
    pub thread_id: u64,
    /// Length of the whole record, header included.
    pub total_len: u32,
}

impl RecordHeader {
    /// Encode to bytes (inlined: every recorded call's).
    #[inline]
    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut b = [0u8; RECORD_HEADER_LEN];
        b[0..2].copy_from_slice(&self.kind.to_le_bytes());
        b[2..10].copy_from_slice(&self.seq.to_le_bytes());
        b[10..18].copy_from_slice(&self.timestamp_ns.to_le_bytes());
        b[18..26].copy_from_slice(&self.thread_id.to_le_bytes());
        b[26..30].copy_from_slice(&self.total_len.to_le_bytes());
        b
    }

    /// Decode from bytes.
    pub fn decode(b: &[u8; RECORD_HEADER_LEN]) -> Self {
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(a)
        };
        RecordHeader {
            kind: u16::from_le_bytes([b[0], b[1]]),
            seq: u64_at(2),
            timestamp_ns: u64_at(10),
            thread_id: u64_at(18),
            total_len: u32::from_le_bytes([b[26], b[27], b[28], b[29]]),
        }
    }

    /// Payload length (total minus header); zero for malformed lengths.
    pub fn payload_len(&self) -> usize {
        (self.total_len as usize).saturating_sub(RECORD_HEADER_LEN)
    }
}

/// Encode a writer mark (a [`TYPE_INCOMPLETE`] record: the capture is incomplete, `reason`
/// says why) with sequence number `seq`.
pub fn encode_mark(seq: u64, timestamp_ns: u64, reason: &str) -> Vec<u8> {
    let header = RecordHeader {
        kind: TYPE_INCOMPLETE,
        seq,
        timestamp_ns,
        thread_id: 0,
        total_len: (RECORD_HEADER_LEN + reason.len()) as u32,
    };
    let mut b = header.encode().to_vec();
    b.extend_from_slice(reason.as_bytes());
    b
}

/// Encode the trailer record for `total_events` events; `seq` is one past the last event.
pub fn encode_trailer(seq: u64, timestamp_ns: u64, total_events: u64) -> [u8; TRAILER_LEN] {
    let header = RecordHeader {
        kind: TYPE_TRAILER,
        seq,
        timestamp_ns,
        thread_id: 0,
        total_len: TRAILER_LEN as u32,
    };
    let mut b = [0u8; TRAILER_LEN];
    b[..RECORD_HEADER_LEN].copy_from_slice(&header.encode());
    b[32..40].copy_from_slice(&total_events.to_le_bytes());
    b[40..44].copy_from_slice(&TRAILER_MAGIC.to_le_bytes());
    b
}

/// If `header` + `payload` form a valid trailer, the event count it claims.
pub fn trailer_total(header: &RecordHeader, payload: &[u8]) -> Option<u64> {
    if header.kind != TYPE_TRAILER
        || header.total_len as usize != TRAILER_LEN
        || payload.len() != 12
    {
        return None;
    }
    let magic = u32::from_le_bytes([payload[8], payload[9], payload[10], payload[11]]);
    if magic != TRAILER_MAGIC {
        return None;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&payload[..8]);
    Some(u64::from_le_bytes(a))
}

/// How a record type the schema does not name is shown: `region-event`, `reserved-0x....` for
/// the format's other reserved types, `type-0x....` for an unknown call id.
pub fn type_name(kind: u16) -> String {
    if kind == TYPE_REGION {
        "region-event".into()
    } else if kind >= FIRST_RESERVED_TYPE {
        format!("reserved-0x{kind:04x}")
    } else {
        format!("type-0x{kind:04x}")
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_trailer_is_44_bytes() {
        let h = RecordHeader {
            kind: 7,
            seq: 1 << 40,
            timestamp_ns: 3,
            thread_id: 99,
            total_len: 77,
        };
        assert_eq!(RecordHeader::decode(&h.encode()), h);
        let f = FileHeader::current();
        assert_eq!(FileHeader::decode(&f.encode()), f);
        assert_eq!(&f.encode()[..4], b"EHRR");
        let t = encode_trailer(5, 0, 4);
        let th = RecordHeader::decode(t[..32].try_into().unwrap());
        assert_eq!(trailer_total(&th, &t[32..]), Some(4));
        assert_eq!(&t[40..44], b"HEOF");
    }
}
