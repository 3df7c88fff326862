//! Cheap fingerprints of host memory (XXH3-128), for telling bytes capture saw before from new
//! ones without the cost of their BLAKE3 content address:
//!
//! - [`chunks`]: one fingerprint per fixed-size chunk of a region, on several threads for large
//!   regions (the tracker of host-visible memory, `api/cuda/hostmem.rs`, finds what changed);
//! - [`blob_id`]: the content address (`ObjectId`, BLAKE3) of a host buffer about to be stored,
//!   skipping the BLAKE3 when the same address and length held the same bytes the last time
//!   (a loop uploading one buffer, or downloading the same result into one buffer, again and
//!   again: simpleMultiCopy's serialized loop). A buffer refilled with new data each time is
//!   told apart by a sample of 64 KiB of it, and pays BLAKE3 and that sample.
//!
//! A fingerprint is a change detector: two different contents taken for the same would need a
//! 128-bit XXH3 collision (programs do not craft their data against capture). What is stored is
//! still addressed and verified by BLAKE3.

use std::collections::HashMap;
use std::sync::Mutex;

use hrr_archive::ObjectId;

/// A fingerprint of some bytes.
pub type Fingerprint = u128;

/// Buffers this large or larger are fingerprinted on several threads.
const PARALLEL_MIN: usize = 4 << 20;
/// Threads a fingerprint uses at most.
const THREADS: usize = 16;
/// Buffers smaller than this go straight to BLAKE3 ([`blob_id`]): hashing them is cheap, and
/// remembering them would not be.
const SEEN_MIN: usize = 256 << 10;
/// Addresses [`blob_id`] remembers; past it the memory starts over.
const SEEN_MAX: usize = 4096;

/// The fingerprint of `bytes` on the calling thread.
pub fn of(bytes: &[u8]) -> Fingerprint {
    twox_hash::XxHash3_128::oneshot(bytes)
}

/// The fingerprint of each `chunk`-sized piece of `bytes` (the last may be shorter), on
/// several threads when `bytes` is large.
pub fn chunks(bytes: &[u8], chunk: usize) -> Vec<Fingerprint> {
    let threads = if bytes.len() < PARALLEL_MIN {
        1
    } else {
        hrr_archive::cores().min(THREADS)
    };
    hrr_archive::map_chunks(bytes, chunk, threads, of)
}

/// The pieces [`whole`] fingerprints a large buffer in: the tracker of host-visible memory's
/// chunk, so that it can take them over ([`recent_pieces`]).
pub const PIECE: usize = 64 << 10;

thread_local! {
    /// The last large buffer [`whole`] fingerprinted on this thread: its address, length and
    /// pieces' fingerprints.
    static RECENT: std::cell::RefCell<Option<(usize, usize, Vec<Fingerprint>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The fingerprint of all of `bytes`: of their [`PIECE`]s' fingerprints when large (on several
/// threads), with their length. The pieces' fingerprints are kept for [`recent_pieces`].
pub fn whole(bytes: &[u8]) -> Fingerprint {
    if bytes.len() < PARALLEL_MIN {
        return of(bytes);
    }
    let parts = chunks(bytes, PIECE);
    let mut all = Vec::with_capacity(parts.len() * 16 + 8);
    for p in &parts {
        all.extend_from_slice(&p.to_le_bytes());
    }
    all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    RECENT.with(|r| *r.borrow_mut() = Some((bytes.as_ptr() as usize, bytes.len(), parts)));
    of(&all)
}

/// The fingerprints of the `count` [`PIECE`]s from address `at` on, when the last large buffer
/// [`whole`] fingerprinted on this thread holds them whole at a piece boundary of its own;
/// taken once (the caller, reading the same bytes right after, need not read them again: an
/// async D2H result stored, then made known to the tracker of host-visible memory).
pub fn recent_pieces(at: usize, count: usize) -> Option<Vec<Fingerprint>> {
    let (base, len, parts) = RECENT.with(|r| r.borrow_mut().take())?;
    let off = at.checked_sub(base)?;
    let first = off / PIECE;
    let whole_pieces = len / PIECE;
    (off % PIECE == 0 && first + count <= whole_pieces)
        .then(|| parts[first..first + count].to_vec())
}

/// The fingerprints of the [`PIECE`]s from address `at` on, taken elsewhere (a GPU computed
/// them from the bytes a copy just wrote there), for [`recent_pieces`] to hand over as
/// [`whole`]'s own.
pub fn remember_pieces(at: usize, parts: Vec<Fingerprint>) {
    RECENT.with(|r| *r.borrow_mut() = Some((at, parts.len() * PIECE, parts)));
}

/// Forget what [`whole`] or [`remember_pieces`] left for [`recent_pieces`] on this thread:
/// every buffer stored ([`blob_id`], a result recorded as digests) starts so, so that the
/// pieces handed over are never an earlier buffer's.
pub fn forget_recent() {
    RECENT.with(|r| *r.borrow_mut() = None);
}

/// Pieces of a buffer its [`sample`] reads, and their size.
const SAMPLE_PIECES: usize = 16;
const SAMPLE_PIECE: usize = 4 << 10;

/// A quick look at `bytes`: the fingerprint of [`SAMPLE_PIECES`] pieces spread evenly over them
/// and their length. Different samples mean different bytes; equal ones prove nothing.
fn sample(bytes: &[u8]) -> Fingerprint {
    let step = bytes.len() / SAMPLE_PIECES;
    let mut h = twox_hash::XxHash3_128::new();
    for i in 0..SAMPLE_PIECES {
        let at = i * step;
        h.write(&bytes[at..(at + SAMPLE_PIECE).min(bytes.len())]);
    }
    h.write(&(bytes.len() as u64).to_le_bytes());
    h.finish_128()
}

/// What [`blob_id`] remembers of an address and length: the last bytes stored from there.
#[derive(Clone, Copy)]
struct Seen {
    sample: Fingerprint,
    /// Their [`whole`] fingerprint (`None`: not taken, as the bytes had just changed).
    whole: Option<Fingerprint>,
    id: ObjectId,
}

static SEEN: Mutex<Option<HashMap<(usize, usize), Seen>>> = Mutex::new(None);

fn seen<R>(f: impl FnOnce(&mut HashMap<(usize, usize), Seen>) -> R) -> R {
    let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// The content address of `bytes` (their BLAKE3 [`ObjectId`]), taken from the last store of
/// the same address and length when the bytes there are the same: their [`sample`] first (a
/// buffer refilled with new data differs there, and goes straight to BLAKE3), then their
/// [`whole`] fingerprint. The first store of an address, and the first after its bytes
/// changed, take BLAKE3 only; the next takes BLAKE3 and the whole fingerprint; later ones
/// of the same bytes, the fingerprints only.
pub fn blob_id(bytes: &[u8]) -> ObjectId {
    blob_id_with(bytes, |b| {
        crate::hook::profile::BLOB_HASHES.time(|| ObjectId::of(b))
    })
}

/// [`blob_id`] with `hash` as the content address (tests count its calls).
fn blob_id_with(bytes: &[u8], hash: impl Fn(&[u8]) -> ObjectId) -> ObjectId {
    forget_recent(); // (only these bytes' pieces may be handed over next)
    if bytes.len() < SEEN_MIN {
        return hash(bytes);
    }
    let key = (bytes.as_ptr() as usize, bytes.len());
    let sample = sample(bytes);
    let last = seen(|m| m.get(&key).copied()).filter(|s| s.sample == sample);
    let whole = last.map(|_| crate::hook::profile::BLOB_FINGERPRINTS.time(|| whole(bytes)));
    if let Some(s) = last.filter(|s| s.whole.is_some() && s.whole == whole) {
        return s.id;
    }
    let next = Seen {
        sample,
        whole,
        id: hash(bytes),
    };
    seen(|m| {
        if m.len() >= SEEN_MAX && !m.contains_key(&key) {
            m.clear();
        }
        m.insert(key, next);
    });
    next.id
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A program forks after capture hashed on the pool of `hrr_archive::map_chunks`: the
    /// child's copy of the pool has no threads, and its fingerprints are taken without it.
    #[test]
    fn a_fork_child_fingerprints_without_its_parents_pool() {
        let bytes: Vec<u8> = (0..PARALLEL_MIN * 2).map(|i| (i % 253) as u8).collect();
        let serial: Vec<Fingerprint> = bytes.chunks(PIECE).map(of).collect();
        // the pool starts here (where there are cores)
        assert_eq!(chunks(&bytes, PIECE), serial);
        // SAFETY: the child only hashes and exits (a child that hangs dies of SIGALRM).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                libc::alarm(20);
                libc::_exit(i32::from(chunks(&bytes, PIECE) != serial));
            }
        }
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
    }

    #[test]
    fn chunk_fingerprints_on_several_threads_are_those_of_one() {
        let bytes: Vec<u8> = (0..PARALLEL_MIN * 2 + 12_345)
            .map(|i| (i * 7) as u8)
            .collect();
        let serial: Vec<Fingerprint> = bytes.chunks(64 << 10).map(of).collect();
        assert_eq!(chunks(&bytes, 64 << 10), serial);
        assert_ne!(whole(&bytes), whole(&bytes[1..]));
    }

    #[test]
    fn the_pieces_of_the_last_whole_fingerprint_are_handed_over_once() {
        let bytes: Vec<u8> = (0..PARALLEL_MIN + PIECE / 2)
            .map(|i| (i * 13) as u8)
            .collect();
        let at = bytes.as_ptr() as usize;
        let pieces = |from: usize, n: usize| -> Vec<Fingerprint> {
            bytes[from * PIECE..(from + n) * PIECE]
                .chunks(PIECE)
                .map(of)
                .collect()
        };
        whole(&bytes);
        assert_eq!(recent_pieces(at + 2 * PIECE, 3), Some(pieces(2, 3)));
        // taken once
        assert_eq!(recent_pieces(at + 2 * PIECE, 3), None);
        // not at a piece boundary, past the whole pieces, before the buffer: read again
        let n = bytes.len() / PIECE;
        whole(&bytes);
        assert_eq!(recent_pieces(at + 1, 1), None);
        whole(&bytes);
        assert_eq!(recent_pieces(at + PIECE, n), None);
        whole(&bytes);
        assert_eq!(recent_pieces(at - PIECE, 1), None);
        whole(&bytes);
        assert_eq!(recent_pieces(at, n), Some(pieces(0, n)));
    }

    /// Stores of one buffer: (its first byte, whether BLAKE3 ran), in order.
    fn stores(buf: &mut [u8], firsts: &[u8]) -> Vec<bool> {
        firsts
            .iter()
            .map(|&b| {
                buf[0] = b;
                let hashed = Cell::new(false);
                let id = blob_id_with(buf, |x| {
                    hashed.set(true);
                    ObjectId::of(x)
                });
                assert_eq!(id, ObjectId::of(buf), "a wrong id for content {b}");
                hashed.get()
            })
            .collect()
    }

    #[test]
    fn the_same_bytes_again_skip_blake3_and_changed_ones_never_do() {
        let mut buf = vec![5u8; SEEN_MIN];
        // first: BLAKE3; second: BLAKE3 and its fingerprint; then hits
        assert_eq!(stores(&mut buf, &[1, 1, 1, 1]), [true, true, false, false]);
        // changed bytes are never taken for the last ones: BLAKE3 only, then BLAKE3 and the
        // whole fingerprint, then hits again
        assert_eq!(stores(&mut buf, &[2, 2, 2, 2]), [true, true, false, false]);
    }

    #[test]
    fn a_change_outside_the_sample_is_still_seen() {
        let mut buf = vec![4u8; SEEN_MIN * 3];
        let key = (buf.as_ptr() as usize, buf.len());
        assert_eq!(stores(&mut buf, &[1, 1, 1]), [true, true, false]);
        // a byte no sample piece covers: the samples agree, the whole fingerprints do not
        let at = SEEN_MIN * 3 / SAMPLE_PIECES + SAMPLE_PIECE + 1;
        let s = sample(&buf);
        buf[at] ^= 1;
        assert_eq!(sample(&buf), s);
        let hashed = Cell::new(false);
        blob_id_with(&buf, |x| {
            hashed.set(true);
            ObjectId::of(x)
        });
        assert!(
            hashed.get(),
            "a changed byte outside the sample was taken for the old bytes"
        );
        assert_eq!(seen(|m| m[&key].id), ObjectId::of(&buf));
    }

    #[test]
    fn small_buffers_are_not_remembered() {
        let buf = vec![1u8; SEEN_MIN - 1];
        blob_id(&buf);
        assert!(seen(
            |m| !m.contains_key(&(buf.as_ptr() as usize, buf.len()))
        ));
    }
}
