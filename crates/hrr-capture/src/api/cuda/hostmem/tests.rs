//! Tests of the tracker of host-visible memory (its run finding and argument matching).

use super::*;

#[test]
fn argument_words_are_matched_to_the_regions_they_point_into() {
    let bounds = Bounds {
        regions: vec![(0x1000, 0x2000), (0x5000, 0x6000)],
        end: 0x6000,
    };
    let words = |ws: &[u64]| ws.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let args = words(&[0x0fff, 0x1000, 0x3000, 0x5fff, 0x6000, 0x1fff]);
    assert_eq!(regions_pointed_into(&bounds, &args), vec![0x1000, 0x5000]);
    // below the lowest base, above the highest end, in the gap: none
    let outside = words(&[0, 0xfff, 0x2000, 0x4fff, 0x6000, u64::MAX]);
    assert!(regions_pointed_into(&bounds, &outside).is_empty());
    // a trailing partial word is not a word
    let mut partial = words(&[0x10]);
    partial.extend_from_slice(&0x1800u64.to_le_bytes()[..4]);
    assert!(regions_pointed_into(&bounds, &partial).is_empty());
    let none = Bounds {
        regions: Vec::new(),
        end: 0,
    };
    assert!(regions_pointed_into(&none, &args).is_empty());
}

#[test]
fn only_changed_chunks_are_stored_again() {
    let mut bytes = vec![0u8; 5 * CHUNK + 10];
    let mut known = vec![None; bytes.len().div_ceil(CHUNK)];
    // Never seen: all of it, as one run.
    assert_eq!(
        changed_runs(&mut known, &bytes, 0..0),
        vec![(0, bytes.len())]
    );
    // Unchanged: nothing.
    assert!(changed_runs(&mut known, &bytes, 0..0).is_empty());
    // Chunks 1 and 2 and the short last one changed: two runs.
    bytes[CHUNK + 3] = 1;
    bytes[2 * CHUNK] = 1;
    bytes[5 * CHUNK + 9] = 1;
    assert_eq!(
        changed_runs(&mut known, &bytes, 0..0),
        vec![(CHUNK, 2 * CHUNK), (5 * CHUNK, 10)]
    );
    assert!(changed_runs(&mut known, &bytes, 0..0).is_empty());
}

#[test]
fn large_regions_hashed_on_several_threads_find_the_same_runs() {
    const LARGE: usize = 4 << 20; // fingerprinted on several threads
    let mut bytes = vec![3u8; LARGE * 2 + 12_345];
    let serial =
        |b: &[u8]| -> Vec<Fingerprint> { b.chunks(CHUNK).map(crate::fingerprint::of).collect() };
    assert_eq!(chunk_fingerprints(&bytes), serial(&bytes));
    let mut known = vec![None; bytes.len().div_ceil(CHUNK)];
    assert_eq!(
        changed_runs(&mut known, &bytes, 0..0).len(),
        bytes.len().div_ceil(CHUNK * MAX_RUN)
    );
    for at in [0, CHUNK * 37 + 5, LARGE + 1, bytes.len() - 1] {
        bytes[at] ^= 0x5a;
    }
    let runs = changed_runs(&mut known, &bytes, 0..0);
    let last = (bytes.len() - 1) / CHUNK * CHUNK;
    assert_eq!(
        runs,
        vec![
            (0, CHUNK),
            (CHUNK * 37, CHUNK),
            (LARGE, CHUNK),
            (last, bytes.len() - last)
        ]
    );
    assert_eq!(chunk_fingerprints(&bytes), serial(&bytes));
}

#[test]
fn skipped_chunks_are_taken_as_unchanged_and_split_runs() {
    let mut bytes = vec![0u8; 6 * CHUNK];
    let mut known = vec![None; 6];
    changed_runs(&mut known, &bytes, 0..0);
    bytes.iter_mut().for_each(|b| *b = 9);
    // chunks 2 and 3 known from a result already: the rest is two runs, those two kept
    // as they were
    let before = known.clone();
    assert_eq!(
        changed_runs(&mut known, &bytes, 2..4),
        vec![(0, 2 * CHUNK), (4 * CHUNK, 2 * CHUNK)]
    );
    assert_eq!(known[2..4], before[2..4]);
    // a range past the end is clipped
    assert_eq!(
        changed_runs(&mut [None; 6], &bytes, 5..99),
        vec![(0, 5 * CHUNK)]
    );
}

#[test]
fn long_runs_are_split() {
    let bytes = vec![7u8; (MAX_RUN + 1) * CHUNK];
    let mut known = vec![None; MAX_RUN + 1];
    assert_eq!(
        changed_runs(&mut known, &bytes, 0..0),
        vec![(0, MAX_RUN * CHUNK), (MAX_RUN * CHUNK, CHUNK)]
    );
}
