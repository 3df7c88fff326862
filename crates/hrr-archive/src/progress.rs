//! Progress reporting for long operations (pack, unpack, verify, scan, scrub). The library only
//! counts; a binary draws (e.g. with indicatif, hidden when stderr is not a terminal).

/// Receives progress of a long operation. Every method has a no-op default.
pub trait Progress: Sync {
    /// A new phase starts (`"hashing"`, `"packing"`, ...) over `total` bytes (0: unknown).
    fn start(&self, _phase: &str, _total: u64) {}
    /// `bytes` more bytes were processed in the current phase.
    fn advance(&self, _bytes: u64) {}
    /// The current phase ended.
    fn finish(&self) {}
}

/// Progress that goes nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}
