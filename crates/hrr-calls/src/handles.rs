//! Maps keyed by driver handles (addresses the driver handed out, or recorded ones): capture
//! looks several up per launch and replay per event, so they hash with one multiply instead of
//! the default hasher's rounds.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// Hashes a handle: values are distinct addresses, so one multiply mixes them well enough.
#[derive(Default, Clone, Copy)]
pub struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

/// A map keyed by handles.
pub type HandleMap<V> = HashMap<u64, V, BuildHasherDefault<HandleHasher>>;

/// A set of handles.
pub type HandleSet = HashSet<u64, BuildHasherDefault<HandleHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_spread_over_buckets() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<HandleHasher>::default();
        // 4 KiB-aligned addresses, as drivers hand out: the low bits must still differ
        let low: HandleSet = (0..1024u64)
            .map(|i| b.hash_one(0x7f00_0000_0000 + i * 4096) & 1023)
            .collect();
        assert!(low.len() > 600, "{}", low.len());
    }
}
