//! D2H checks: what the GPU produces now against what the original run copied back. Exact by
//! default; with `--rtol/--atol` the bytes are compared as f32 values (NaN equals NaN). And,
//! for a recheck (`super::recheck`), a failed comparison told apart by a second replay's bytes
//! ([`Checks::settle`]). A result recorded as digests (`hrr_archive::digest`: results of
//! 16 MiB or more by default) is compared chunk by chunk (64 KiB), exactly: tolerances need
//! the recorded values, which such a recording does not hold.

use hrr_archive::digest::{ResultDigest, CHUNK};

/// Whether `got` is the recorded result `want` (its bytes, or its digests: [`ResultDigest`]),
/// exactly.
pub fn matches(got: &[u8], want: &[u8]) -> bool {
    got == want
        || ResultDigest::of_blob(want, got.len())
            .is_some_and(|d| d.differing_chunks(got).is_empty())
}

/// Tolerances; both zero means exact.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    /// Relative.
    pub rtol: f64,
    /// Absolute.
    pub atol: f64,
}

/// Running tally.
#[derive(Debug, Default)]
pub struct Checks {
    /// Identical bytes.
    pub exact: u64,
    /// Equal within tolerance.
    pub within_tol: u64,
    /// Different.
    pub fail: u64,
    /// No recorded result to compare with, or differences only inside ranges a scrub redacted.
    pub skipped: u64,
    /// Of `skipped`: results that differed only inside redacted ranges.
    pub redacted: u64,
    /// Failed at first, but every differing byte also differs between two replays: the
    /// program's own nondeterminism (not in `fail`).
    pub nondeterministic: u64,
    /// Of those compared, results the recording kept as digests (`hrr_archive::digest`).
    pub by_digest: u64,
    /// Of those compared, what allocations held when the program freed them (`hrrFreeCheck`).
    pub at_free: u64,
    /// The first mismatches, described.
    pub mismatches: Vec<String>,
}

impl Checks {
    /// Compare one copy whose recorded blob had `redacted` byte ranges overwritten by a scrub
    /// (sorted, merged). The bytes inside them were not recorded truthfully, so they are not
    /// held against the result: identical bytes are an exact pass as usual; a result that
    /// differs only inside the ranges is counted as skipped (not verified, not failed); a
    /// difference outside them is judged by [`Self::compare`] as usual.
    pub fn compare_redacted(
        &mut self,
        seq: u64,
        call: &str,
        got: &[u8],
        want: &[u8],
        redacted: &[std::ops::Range<u64>],
        tol: Tolerance,
    ) -> bool {
        if redacted.is_empty() || got == want || got.len() != want.len() {
            return self.compare(seq, call, got, Some(want), tol);
        }
        let masked = mask(got, want, redacted);
        if masked == want {
            self.skipped += 1;
            self.redacted += 1;
            false
        } else {
            self.compare(seq, call, &masked, Some(want), tol)
        }
    }

    /// Compare one copy; true when it failed.
    pub fn compare(
        &mut self,
        seq: u64,
        call: &str,
        got: &[u8],
        want: Option<&[u8]>,
        tol: Tolerance,
    ) -> bool {
        let Some(want) = want else {
            self.skipped += 1;
            return false;
        };
        if got == want {
            self.exact += 1;
            return false;
        }
        if got.len() == want.len()
            && (tol.rtol > 0.0 || tol.atol > 0.0)
            && got.len().is_multiple_of(4)
        {
            let close = got.chunks_exact(4).zip(want.chunks_exact(4)).all(|(a, b)| {
                let a = f32::from_le_bytes(a.try_into().expect("4")) as f64;
                let b = f32::from_le_bytes(b.try_into().expect("4")) as f64;
                (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol.atol + tol.rtol * b.abs()
            });
            if close {
                self.within_tol += 1;
                return false;
            }
        }
        self.fail += 1;
        if self.mismatches.len() < 10 {
            let first = got
                .iter()
                .zip(want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            let differing = got.iter().zip(want).filter(|(a, b)| a != b).count()
                + got.len().abs_diff(want.len());
            self.mismatches.push(format!(
                "event #{seq} {call}: {differing} of {} bytes differ, first at offset {first}",
                want.len()
            ));
        }
        true
    }

    /// Compare one copy with the digests recorded of its result; true when it failed. Exact:
    /// a tolerance needs the recorded values.
    pub fn compare_digest(
        &mut self,
        seq: u64,
        call: &str,
        got: &[u8],
        want: &ResultDigest,
    ) -> bool {
        self.by_digest += 1;
        let differing = want.differing_chunks(got);
        let Some(&first) = differing.first() else {
            self.exact += 1;
            return false;
        };
        self.fail += 1;
        if self.mismatches.len() < 10 {
            self.mismatches.push(format!(
                "event #{seq} {call}: {} of {} chunks of 64 KiB differ from the recorded \
                 digests, the first at offset {} (the recording kept digests of this \
                 {}-byte result, not its bytes)",
                differing.len(),
                want.chunks.len(),
                first * CHUNK,
                got.len()
            ));
        }
        true
    }

    /// A comparison that failed (`got` against `want`, `call` at event `seq`), judged again with
    /// a second replay's bytes `again`, in aligned 4-byte words (the size of the values most
    /// results hold: a value whose low byte differs between replays is nondeterministic as a
    /// whole, though its high bytes may happen to agree): when every word that differs from the
    /// recording also differs between the two replays, and the words stable across them match
    /// it (within `tol`), the failure is the program's own nondeterminism: it leaves `fail` (and
    /// the mismatch list) for `nondeterministic`, and the differing bytes are returned. `None`:
    /// a divergence, it stays a failure.
    pub fn settle(
        &mut self,
        (seq, call): (u64, &str),
        got: &[u8],
        again: &[u8],
        want: &[u8],
        tol: Tolerance,
    ) -> Option<Nondeterministic> {
        if let Some(d) = ResultDigest::of_blob(want, got.len()) {
            return self.settle_digest((seq, call), got, again, &d);
        }
        if got.len() != want.len() || again.len() != want.len() {
            return None;
        }
        if let Some(moved) = reordered(got, want).filter(|_| reordered(again, want).is_some()) {
            return Some(self.settled(seq, call, want.len(), moved, How::Reordered));
        }
        let unstable: Vec<usize> = (0..got.len()).filter(|&i| got[i] != again[i]).collect();
        let first = *unstable.first()?;
        let mut stable = got.to_vec();
        for &i in &unstable {
            let w = i / WORD * WORD;
            let end = (w + WORD).min(got.len());
            stable[w..end].copy_from_slice(&want[w..end]);
        }
        if Checks::default().compare(seq, call, &stable, Some(want), tol) {
            return None;
        }
        let differing = (unstable.len() as u64, first as u64);
        Some(self.settled(seq, call, want.len(), differing, How::Replays))
    }

    /// A failed comparison whose every differing aligned 4-byte word is among `unstable`: the
    /// words found nondeterministic in other results of the same copy (the same recorded
    /// destination and size, [`super::recheck`]), which this one happened to repeat in every
    /// replay. Judged like [`Self::settle`] otherwise; `None`: a word differs that no other
    /// result of the copy showed unstable.
    pub fn settle_like_copy(
        &mut self,
        at: (u64, &str),
        got: &[u8],
        want: &[u8],
        unstable: &std::collections::BTreeSet<usize>,
    ) -> Option<Nondeterministic> {
        self.settle_within(at, got, want, unstable, How::SameCopy)
    }

    /// A failed comparison whose every differing aligned 4-byte word (by offset) is among
    /// `unstable`, words shown to differ from one replay to another (`how` says where): the
    /// program's own nondeterminism, judged exactly (no tolerance); `None` otherwise.
    pub fn settle_within(
        &mut self,
        (seq, call): (u64, &str),
        got: &[u8],
        want: &[u8],
        unstable: &std::collections::BTreeSet<usize>,
        how: How,
    ) -> Option<Nondeterministic> {
        if got.len() != want.len() {
            return None;
        }
        let words = differing_words(got, want);
        if words.is_empty() || !words.iter().all(|w| unstable.contains(w)) {
            return None;
        }
        let d = differences(got, want)?;
        Some(self.settled(seq, call, want.len(), d, how))
    }

    /// [`Self::settle`] for a result recorded as digests: nondeterministic when every chunk
    /// that differs from the recording holds bytes that differ between the two replays (the
    /// bytes of such a chunk that are stable across them cannot be held against the
    /// recording, which kept no bytes).
    fn settle_digest(
        &mut self,
        (seq, call): (u64, &str),
        got: &[u8],
        again: &[u8],
        want: &ResultDigest,
    ) -> Option<Nondeterministic> {
        if again.len() != got.len() {
            return None;
        }
        let unstable_in = |c: usize| {
            let r = c * CHUNK..((c + 1) * CHUNK).min(got.len());
            got[r.clone()] != again[r]
        };
        let differing = want.differing_chunks(got);
        if differing.is_empty() || !differing.iter().all(|&c| unstable_in(c)) {
            return None;
        }
        let d = differences(got, again)?;
        Some(self.settled(seq, call, got.len(), d, How::Replays))
    }

    /// A failed check judged nondeterministic: out of `fail` and the mismatch list.
    fn settled(
        &mut self,
        seq: u64,
        call: &str,
        bytes: usize,
        (differing, first_offset): (u64, u64),
        how: How,
    ) -> Nondeterministic {
        self.fail -= 1;
        self.nondeterministic += 1;
        let prefix = format!("event #{seq} {call}: ");
        if let Some(i) = self.mismatches.iter().position(|m| m.starts_with(&prefix)) {
            self.mismatches.remove(i);
        }
        Nondeterministic {
            seq,
            call: call.to_string(),
            bytes: bytes as u64,
            differing,
            first_offset,
            how,
        }
    }
}

/// The offsets of the aligned 4-byte words in which `a` and `b` differ.
pub fn differing_words(a: &[u8], b: &[u8]) -> Vec<usize> {
    a.chunks(WORD)
        .zip(b.chunks(WORD))
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, _)| i * WORD)
        .collect()
}

/// When `got` holds exactly the aligned 4-byte words of `want` in another order (results whose
/// order scheduling sets: slots taken with an atomic counter, a work queue drained by whichever
/// thread comes first): the bytes that differ, and the first of them. `None` when the words
/// differ as a multiset, or nothing differs.
pub fn reordered(got: &[u8], want: &[u8]) -> Option<(u64, u64)> {
    if got.len() != want.len() || !got.len().is_multiple_of(WORD) || got == want {
        return None;
    }
    let words = |b: &[u8]| {
        let mut w: Vec<u32> = b
            .chunks_exact(WORD)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect();
        w.sort_unstable();
        w
    };
    if words(got) != words(want) {
        return None;
    }
    differences(got, want)
}

/// How many bytes of `a` and `b` (of one length) differ, and the first of them; `None` when
/// none does.
fn differences(a: &[u8], b: &[u8]) -> Option<(u64, u64)> {
    let first = a.iter().zip(b).position(|(x, y)| x != y)?;
    let differing = a.iter().zip(b).filter(|(x, y)| x != y).count();
    Some((differing as u64, first as u64))
}

/// The unit in which [`Checks::settle`] judges bytes that differ between replays.
const WORD: usize = 4;

/// A D2H result part of which differs from one replay to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nondeterministic {
    /// Its event.
    pub seq: u64,
    /// Its call.
    pub call: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Bytes that differed between the two replays.
    pub differing: u64,
    /// The first of them.
    pub first_offset: u64,
    /// How it was told apart.
    pub how: How,
}

/// How a failed D2H result was told to be the program's own nondeterminism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Its differing bytes differed between two replays too.
    Replays,
    /// Every replay held the recorded 4-byte values in another order: an order set by
    /// scheduling (`differing`, `first_offset`: bytes differing from the recording).
    Reordered,
    /// Stable across the replays, but every differing word is one that differed between
    /// replays in other results of the same copy (the same recorded destination and size).
    SameCopy,
}

impl How {
    /// Its name in `--json`.
    pub fn key(self) -> &'static str {
        match self {
            How::Replays => "replays",
            How::Reordered => "reordered",
            How::SameCopy => "same_copy",
        }
    }
}

/// `got` with the bytes inside `ranges` (sorted, merged) taken from `want`.
pub fn mask(got: &[u8], want: &[u8], ranges: &[std::ops::Range<u64>]) -> Vec<u8> {
    let mut masked = got.to_vec();
    let n = want.len().min(got.len());
    for r in ranges {
        let s = (r.start as usize).min(n);
        let e = (r.end as usize).min(n);
        masked[s..e].copy_from_slice(&want[s..e]);
    }
    masked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No tolerance: only identical bytes pass.
    const EXACT: Tolerance = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };

    /// Fresh checks whose exact comparison of `got` with `want` (event `seq`) failed, then
    /// settled against a second replay's `again`: the checks and what settling found.
    fn failed_then_settled(
        seq: u64,
        got: &[u8],
        again: &[u8],
        want: &[u8],
    ) -> (Checks, Option<Nondeterministic>) {
        let mut c = Checks::default();
        assert!(c.compare(seq, "d2h", got, Some(want), EXACT));
        let n = c.settle((seq, "d2h"), got, again, want, EXACT);
        (c, n)
    }

    #[test]
    fn exact_tolerance_and_failure() {
        let mut c = Checks::default();
        c.compare(1, "x", b"abcd", Some(b"abcd"), EXACT);
        let a = 1.0f32.to_le_bytes();
        let b = 1.0001f32.to_le_bytes();
        c.compare(2, "x", &a, Some(&b), EXACT);
        c.compare(
            3,
            "x",
            &a,
            Some(&b),
            Tolerance {
                rtol: 1e-3,
                atol: 0.0,
            },
        );
        c.compare(4, "x", &a, None, EXACT);
        assert_eq!((c.exact, c.within_tol, c.fail, c.skipped), (1, 1, 1, 1));
        assert!(c.mismatches[0].contains("event #2"), "{:?}", c.mismatches);
    }

    #[test]
    fn a_failure_is_settled_by_a_second_replay() {
        let want = [1u8, 2, 3, 4, 5, 6, 7, 8];
        // Bytes 4.. differ from the recording and between the replays: nondeterminism.
        let got = [1u8, 2, 3, 4, 9, 9, 9, 9];
        let (c, n) = failed_then_settled(7, &got, &[1, 2, 3, 4, 8, 8, 8, 8], &want);
        let n = n.expect("nondeterministic");
        assert_eq!((n.bytes, n.differing, n.first_offset), (8, 4, 4));
        assert_eq!((c.fail, c.nondeterministic), (0, 1));
        assert!(c.mismatches.is_empty(), "{:?}", c.mismatches);
        // A byte stable across the replays but not the recording's: a divergence.
        let got = [0u8, 2, 3, 4, 9, 9, 9, 9];
        let (_, n) = failed_then_settled(7, &got, &[0, 2, 3, 4, 8, 8, 8, 8], &want);
        assert!(n.is_none());
        // A value's high bytes equal in both replays, its low byte not: the value (an aligned
        // 4-byte word) is nondeterministic as a whole.
        let got = [1u8, 2, 3, 4, 9, 9, 7, 7];
        let (_, n) = failed_then_settled(7, &got, &[1, 2, 3, 4, 8, 9, 7, 7], &want);
        let n = n.expect("nondeterministic");
        assert_eq!((n.differing, n.first_offset), (1, 4));
        // Both replays alike: a divergence too.
        let got = [0u8, 2, 3, 4, 9, 9, 9, 9];
        let (mut c, n) = failed_then_settled(7, &got, &got, &want);
        assert!(n.is_none());
        assert_eq!((c.fail, c.nondeterministic, c.mismatches.len()), (1, 0, 1));
        // A second result of another size proves nothing.
        assert!(c.settle((7, "d2h"), &got, &[0; 4], &want, EXACT).is_none());
    }

    #[test]
    fn results_in_another_order_are_told_from_other_values() {
        let words = |v: &[i32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let want = words(&[-1, 7, -1, 3, 5, -1]);
        let got = words(&[3, 5, -1, -1, -1, 7]);
        assert_eq!(reordered(&got, &want), Some((17, 0)));
        // Stable across replays, yet the same values: settled as reordered.
        let (c, n) = failed_then_settled(9, &got, &got, &want);
        let n = n.expect("reordered");
        assert_eq!(n.how, How::Reordered);
        assert_eq!(
            (n.bytes, n.differing, c.fail, c.nondeterministic),
            (24, 17, 0, 1)
        );
        // One value changed: not a reordering, and a stable divergence stays a failure.
        let other = words(&[3, 5, -1, -1, -1, 8]);
        assert_eq!(reordered(&other, &want), None);
        assert!(failed_then_settled(9, &other, &other, &want).1.is_none());
        // Sizes that are not whole words, and identical bytes, are no reordering.
        assert_eq!(reordered(b"abc", b"bca"), None);
        assert_eq!(reordered(&want, &want), None);
    }

    #[test]
    fn a_stable_difference_is_settled_by_other_results_of_the_same_copy() {
        let want = 1.0f64.to_le_bytes();
        let got = (1.0f64 + f64::EPSILON).to_le_bytes(); // the low word differs
        let mut c = Checks::default();
        assert!(c.compare(5, "d2h", &got, Some(&want), EXACT));
        let high_only: std::collections::BTreeSet<usize> = [4].into();
        assert!(c
            .settle_like_copy((5, "d2h"), &got, &want, &high_only)
            .is_none());
        let low: std::collections::BTreeSet<usize> = [0].into();
        let n = c
            .settle_like_copy((5, "d2h"), &got, &want, &low)
            .expect("like the copy");
        assert_eq!((n.how, n.differing, n.first_offset), (How::SameCopy, 1, 0));
        assert_eq!((c.fail, c.nondeterministic), (0, 1));
        assert_eq!(
            differing_words(&[1, 2, 3, 4, 5, 6], &[1, 2, 3, 4, 5, 7]),
            vec![4]
        );
    }

    #[test]
    fn a_result_recorded_as_digests_is_compared_and_settled_by_chunk() {
        let want: Vec<u8> = (0..3 * CHUNK + 8).map(|i| (i % 251) as u8).collect();
        let digest = ResultDigest::of(&want);
        let stored = digest.encode();
        assert!(matches(&want, &stored) && !matches(&want[1..], &stored));
        let mut c = Checks::default();
        assert!(!c.compare_digest(1, "d2h", &want, &digest));
        let mut got = want.clone();
        got[CHUNK + 3] ^= 1;
        got[3 * CHUNK + 1] ^= 1;
        assert!(!matches(&got, &stored));
        assert!(c.compare_digest(2, "d2h", &got, &digest));
        assert_eq!((c.exact, c.fail), (1, 1));
        assert!(
            c.mismatches[0].contains("2 of 4 chunks of 64 KiB differ")
                && c.mismatches[0].contains(&format!("offset {CHUNK}")),
            "{:?}",
            c.mismatches
        );
        // Both differing chunks differ between the replays too: nondeterministic.
        let mut again = got.clone();
        again[CHUNK + 5] ^= 2;
        again[3 * CHUNK + 1] ^= 4;
        let n = c
            .settle((2, "d2h"), &got, &again, &stored, EXACT)
            .expect("settled");
        assert_eq!(
            (n.how, n.bytes, n.differing),
            (How::Replays, want.len() as u64, 2)
        );
        assert_eq!((c.fail, c.nondeterministic), (0, 1));
        // One of them stable across the replays: a divergence.
        let mut c = Checks::default();
        assert!(c.compare_digest(3, "d2h", &got, &digest));
        let mut again = got.clone();
        again[CHUNK + 5] ^= 2;
        assert!(c.settle((3, "d2h"), &got, &again, &stored, EXACT).is_none());
        assert_eq!(c.fail, 1);
    }

    #[test]
    fn redacted_ranges_are_skipped_not_failed() {
        let mut c = Checks::default();
        let ranges = vec![4..8u64, 20..22];
        // The recorded blob was scrubbed at 4..8; the GPU reproduces the original bytes.
        c.compare_redacted(1, "x", b"key=abcd;", b"key=XXXX;", &ranges, EXACT);
        assert_eq!((c.exact, c.fail, c.skipped, c.redacted), (0, 0, 1, 1));
        // Identical bytes stay an exact pass.
        c.compare_redacted(2, "x", b"key=XXXX;", b"key=XXXX;", &ranges, EXACT);
        assert_eq!(c.exact, 1);
        // A difference outside the ranges still fails.
        c.compare_redacted(3, "x", b"kez=abcd;", b"key=XXXX;", &ranges, EXACT);
        assert_eq!(c.fail, 1);
        assert!(c.mismatches[0].contains("event #3"), "{:?}", c.mismatches);
    }
}
