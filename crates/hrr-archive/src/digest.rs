//! Result digests: a large D2H result recorded as a 128-bit digest of each 64 KiB chunk
//! instead of its bytes (FORMAT.md §"Result digests").
//!
//! A program that copies back tens of megabytes per iteration (simpleStreams' non-streamed
//! loop: 64 MiB a repetition, 100 repetitions in 130 ms) produces results faster than any disk
//! takes them; storing them whole made such a loop twenty times slower under capture. Replay
//! only needs to know whether its result equals the recorded one, and where it differs: a
//! digest per chunk says that, in 16 bytes per 64 KiB.
//!
//! The digest is built to be computed where the bytes are: by capture on the GPU (a kernel
//! reading the copy's device source, one thread block per chunk, `crates/hrr-capture/gpu/`)
//! or on the host ([`digests`]), by replay on the host. Each aligned 8-byte little-endian word
//! `w` at word index `j` of its chunk (a last partial word padded with zeros) contributes
//! `mix(w ^ j·K)` to one 64-bit sum and `mix(w ^ j·K ^ S)` to another (wrapping addition, so
//! the order in which threads add does not matter); the chunk's digest is
//! `mix(sum₁ ^ len) ‖ mix(sum₂ + len·K)`, `len` its length in bytes, `mix` the SplitMix64
//! finaliser (a bijection: any single changed word changes both sums). A check, not a
//! cryptographic commitment: it tells a wrong result from the recorded one, not a forged one.
//!
//! The stored object (a blob, named by its content hash like any other) is
//! `HRRD2HD1` ‖ u64 LE result length ‖ u32 LE chunk size (65,536) ‖ u32 LE 0 ‖ one 16-byte
//! digest per chunk (the last chunk may be short). A reader takes a blob as a digest only
//! where the result's length differs from the blob's and [`ResultDigest::parse`] accepts it:
//! a whole result always has the result's length.

/// Bytes each digest covers (the last chunk of a result may be shorter).
pub const CHUNK: usize = 64 << 10;
/// The object's first bytes.
const MAGIC: &[u8; 8] = b"HRRD2HD1";
/// Magic, length, chunk size, reserved.
const HEADER: usize = 24;
/// The word index multiplier (the golden ratio's 64-bit fraction).
pub const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// What the second sum's words are xored with.
pub const S: u64 = 0xD6E8_FEB8_6659_FD93;
/// Results this long or longer are digested unless capture is told otherwise
/// (`HRR_CAPTURE_DIGEST_MIN`).
pub const DEFAULT_MIN: u64 = 16 << 20;
/// Below this, [`digests`] runs on the calling thread only.
const PARALLEL_MIN: usize = 4 << 20;

/// The SplitMix64 finaliser.
#[inline(always)]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The digest of one chunk (at most [`CHUNK`] bytes) from its two sums.
#[inline]
pub fn finish(sum1: u64, sum2: u64, len: u64) -> [u8; 16] {
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&mix(sum1 ^ len).to_le_bytes());
    d[8..].copy_from_slice(&mix(sum2.wrapping_add(len.wrapping_mul(K))).to_le_bytes());
    d
}

/// The digest of one chunk (at most [`CHUNK`] bytes).
pub fn chunk_digest(chunk: &[u8]) -> [u8; 16] {
    let (mut a, mut b) = (0u64, 0u64);
    let mut add = |j: u64, w: u64| {
        let x = w ^ j.wrapping_mul(K);
        a = a.wrapping_add(mix(x));
        b = b.wrapping_add(mix(x ^ S));
    };
    let mut words = chunk.chunks_exact(8);
    let mut j = 0u64;
    for w in &mut words {
        add(j, u64::from_le_bytes(w.try_into().expect("8 bytes")));
        j += 1;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        add(j, u64::from_le_bytes(w));
    }
    finish(a, b, chunk.len() as u64)
}

/// The digest of each [`CHUNK`] of `bytes`, on up to [`crate::cores`] threads for a large one.
pub fn digests(bytes: &[u8]) -> Vec<[u8; 16]> {
    let threads = if bytes.len() < PARALLEL_MIN {
        1
    } else {
        crate::cores()
    };
    crate::map_chunks(bytes, CHUNK, threads, chunk_digest)
}

/// A result recorded as digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDigest {
    /// The result's length in bytes.
    pub len: u64,
    /// One digest per [`CHUNK`].
    pub chunks: Vec<[u8; 16]>,
}

impl ResultDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> ResultDigest {
        ResultDigest {
            len: bytes.len() as u64,
            chunks: digests(bytes),
        }
    }

    /// The length of the stored form of a result of `len` bytes' digests.
    pub fn stored_len(len: usize) -> usize {
        HEADER + 16 * len.div_ceil(CHUNK)
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER + 16 * self.chunks.len());
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&self.len.to_le_bytes());
        v.extend_from_slice(&(CHUNK as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        for d in &self.chunks {
            v.extend_from_slice(d);
        }
        v
    }

    /// The digest a stored object holds; `None` when it is not one (wrong magic or chunk
    /// size, a chunk count that does not fit the length, trailing or missing bytes).
    pub fn parse(b: &[u8]) -> Option<ResultDigest> {
        if b.len() < HEADER || &b[..8] != MAGIC {
            return None;
        }
        let len = u64::from_le_bytes(b[8..16].try_into().ok()?);
        let chunk = u32::from_le_bytes(b[16..20].try_into().ok()?);
        let reserved = u32::from_le_bytes(b[20..24].try_into().ok()?);
        let n = usize::try_from(len.div_ceil(CHUNK as u64)).ok()?;
        if chunk as usize != CHUNK || reserved != 0 || b.len() - HEADER != n.checked_mul(16)? {
            return None;
        }
        let chunks = b[HEADER..]
            .chunks_exact(16)
            .map(|c| c.try_into().expect("16 bytes"))
            .collect();
        Some(ResultDigest { len, chunks })
    }

    /// Whether `blob` is this result's digest rather than its bytes: a result of `result_len`
    /// bytes recorded as digests (a whole result has that length itself).
    pub fn of_blob(blob: &[u8], result_len: usize) -> Option<ResultDigest> {
        if blob.len() == result_len {
            return None;
        }
        Self::parse(blob).filter(|d| d.len == result_len as u64)
    }

    /// How `got` compares: the chunks whose digest differs from the recorded one.
    pub fn differing_chunks(&self, got: &[u8]) -> Vec<usize> {
        digests(got)
            .iter()
            .zip(&self.chunks)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn every_changed_byte_changes_its_chunk_digest_only() {
        let bytes = pattern(3 * CHUNK + 1000);
        let d = ResultDigest::of(&bytes);
        assert_eq!(d.chunks.len(), 4);
        assert!(d.differing_chunks(&bytes).is_empty());
        for at in [0, 5, CHUNK - 1, CHUNK, 2 * CHUNK + 17, 3 * CHUNK + 999] {
            let mut b = bytes.clone();
            b[at] ^= 1;
            assert_eq!(d.differing_chunks(&b), vec![at / CHUNK], "byte {at}");
        }
        // Two words swapped: a digest that only summed the words would miss it.
        let mut b = bytes.clone();
        b.copy_within(8..16, 0);
        b[8..16].copy_from_slice(&bytes[0..8]);
        assert_eq!(d.differing_chunks(&b), vec![0]);
    }

    #[test]
    fn zeros_of_other_lengths_differ_and_a_partial_word_counts() {
        assert_ne!(chunk_digest(&[0; 8]), chunk_digest(&[0; 16]));
        assert_ne!(chunk_digest(&[0; 3]), chunk_digest(&[0; 4]));
        assert_ne!(chunk_digest(&[1, 2, 3]), chunk_digest(&[1, 2, 4]));
    }

    #[test]
    fn parallel_and_serial_digests_agree() {
        let bytes = pattern(PARALLEL_MIN + 3 * CHUNK + 5);
        let serial: Vec<[u8; 16]> = bytes.chunks(CHUNK).map(chunk_digest).collect();
        assert_eq!(digests(&bytes), serial);
    }

    #[test]
    fn the_stored_form_round_trips_and_refuses_what_is_not_one() {
        let bytes = pattern(CHUNK + 1);
        let d = ResultDigest::of(&bytes);
        let enc = d.encode();
        assert_eq!(enc.len(), HEADER + 32);
        assert_eq!(ResultDigest::stored_len(bytes.len()), enc.len());
        assert_eq!(ResultDigest::parse(&enc), Some(d.clone()));
        assert_eq!(ResultDigest::of_blob(&enc, bytes.len()), Some(d));
        // A blob the result's length is the result itself, whatever its first bytes.
        assert_eq!(ResultDigest::of_blob(&enc, enc.len()), None);
        // Another result length, a cut, a byte more, a wrong chunk size: not a digest.
        assert_eq!(ResultDigest::of_blob(&enc, bytes.len() + 1), None);
        assert_eq!(ResultDigest::parse(&enc[..enc.len() - 1]), None);
        assert_eq!(ResultDigest::parse(&[enc.clone(), vec![0]].concat()), None);
        let mut bad = enc.clone();
        bad[16] = 1;
        assert_eq!(ResultDigest::parse(&bad), None);
        // A hostile length does not allocate.
        let mut huge = enc;
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(ResultDigest::parse(&huge), None);
    }

    /// The values the GPU kernel must reproduce (`crates/hrr-capture/gpu/digest.cu`), worked
    /// out independently (Python, from the definition in the module docs): a change to the
    /// function changes these, and the kernel must change with it.
    #[test]
    fn known_values() {
        let words: Vec<u8> = (0u64..8192).flat_map(|i| (i * 3).to_le_bytes()).collect();
        let d = chunk_digest(&words);
        let half = |i: usize| u64::from_le_bytes(d[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(
            (half(0), half(1)),
            (0xf0b5_2e9d_b5ae_04d2, 0x4536_d1dc_1031_1c8e)
        );
        assert_eq!(chunk_digest(&[])[..8], mix(0).to_le_bytes());
    }
}
