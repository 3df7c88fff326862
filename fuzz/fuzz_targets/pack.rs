//! `cargo fuzz run pack`: the pack reader (list, verify, unpack) on arbitrary tar streams.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hrr_archive::fuzz::fuzz_pack_one(data);
});
