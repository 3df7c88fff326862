//! The verdict of a replay: one word a person and a script can act on, its exit code, and what
//! it rests on. The codes are documented in `--help` and the README:
//!
//! | verdict | exit | meaning |
//! | --- | --- | --- |
//! | `PASS` | 0 | every D2H comparison passed (the line says so when there was nothing to compare, when work was skipped or cannot be reproduced, and when results differed only in bytes that differ between two replays: the program's own nondeterminism, `super::recheck`) |
//! | `REPRODUCED` | 0 | the recorded run failed, and replay fails the same way at the same event |
//! | `MISMATCH` | 1 | a D2H result differs from the recording in bytes stable across two replays (or, with `--strict`, in any) |
//! | `NOT REPRODUCED` | 1 | the recorded run failed, replay did not fail that way |
//! | `FAULT` | 3 | the GPU raised an error the recording did not (illegal address, misaligned access, …) |
//! | `HANG` | 4 | a wait did not finish within `--sync-watchdog-ms` |
//! | `ERROR` | 5 | replay itself could not reissue a call |

use crate::replay::backend::shared::{CallFailed, Hung};

/// A failure the recorded run itself hit, a call whose recorded status is a GPU fault: the
/// summary's JSON type (`recorded_failure`; docs/json.md), used as it is.
pub use hrr_cli::json::RecordedFailureJson as RecordedFailure;

/// Driver and runtime status codes that are the GPU failing while running work (the same
/// numbers in CUDA and HIP): an illegal or misaligned address, a device-side assert, a bad
/// instruction or stack, a failed or timed-out launch.
pub const GPU_FAULTS: [i32; 9] = [700, 702, 710, 714, 715, 716, 717, 718, 719];

/// Is `code` the GPU failing while running work?
pub fn is_gpu_fault(code: i32) -> bool {
    GPU_FAULTS.contains(&code)
}

/// What a replay concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verdict {
    /// Every comparison passed.
    #[default]
    Pass,
    /// Failed as recorded.
    Reproduced,
    /// A D2H result differs.
    Mismatch,
    /// The recorded failure did not happen.
    NotReproduced,
    /// The GPU raised an error.
    Fault,
    /// A wait did not finish in time.
    Hang,
    /// Replay could not reissue a call.
    Error,
}

impl Verdict {
    /// The word printed.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Reproduced => "REPRODUCED",
            Verdict::Mismatch => "MISMATCH",
            Verdict::NotReproduced => "NOT REPRODUCED",
            Verdict::Fault => "FAULT",
            Verdict::Hang => "HANG",
            Verdict::Error => "ERROR",
        }
    }

    /// The exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass | Verdict::Reproduced => 0,
            Verdict::Mismatch | Verdict::NotReproduced => 1,
            Verdict::Fault => 3,
            Verdict::Hang => 4,
            Verdict::Error => 5,
        }
    }
}

/// How an error that stopped the replay is classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The GPU failed: the driver's status code and its name.
    Fault {
        /// Status code.
        code: i32,
        /// Its name (`CUDA_ERROR_ILLEGAL_ADDRESS`).
        name: String,
    },
    /// The watchdog gave up.
    Hang,
    /// Anything else.
    Error,
}

/// Classify the error that stopped a replay by what is in its chain.
pub fn classify(err: &anyhow::Error) -> Stop {
    if err.chain().any(|e| e.downcast_ref::<Hung>().is_some()) {
        return Stop::Hang;
    }
    match err.chain().find_map(|e| e.downcast_ref::<CallFailed>()) {
        Some(c) if is_gpu_fault(c.code) => Stop::Fault {
            code: c.code,
            name: c.name.clone(),
        },
        _ => Stop::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_their_chain() {
        let fault = anyhow::Error::new(CallFailed {
            call: "cuCtxSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        })
        .context("final synchronisation");
        assert_eq!(
            classify(&fault),
            Stop::Fault {
                code: 700,
                name: "CUDA_ERROR_ILLEGAL_ADDRESS".into()
            }
        );
        let hang = anyhow::Error::new(Hung { ms: 3000 }).context("kernel `spin`");
        assert_eq!(classify(&hang), Stop::Hang);
        let other = anyhow::Error::new(CallFailed {
            call: "cuMemAlloc_v2",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
        });
        assert_eq!(classify(&other), Stop::Error);
        assert_eq!(Verdict::Hang.exit_code(), 4);
        assert_eq!(Verdict::Reproduced.exit_code(), 0);
    }
}
