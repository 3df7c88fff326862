//! Arbitrary bytes as a manifest and an events.bin, through the reader, the summary, manifest
//! parsing, the root index and repair (`hrr_archive::fuzz::fuzz_one`). No panic, no broken
//! invariant, no unbounded allocation.
//!
//! ```text
//! cargo fuzz run reader            # from the repository root (needs cargo-fuzz + nightly)
//! ```
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    hrr_archive::fuzz::fuzz_one(data);
});
