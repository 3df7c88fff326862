//! Replay of one process capture on the GPU. Where things live:
//!
//! | module | owns |
//! | --- | --- |
//! | [`engine`] | the generic loop: prescan, events in order into the backend, D2H checks, exit code |
//! | `batch` | launch batching: runs of plain launches the prescan finds, issued as graphs prepared before the clock |
//! | `threads` | `--multi-thread`: one replay thread per captured thread, ordered across threads only at barriers |
//! | [`options`] | [`Options`], the replay options as a plain struct (the CLI converts into it) |
//! | [`devices`] | `--device-map`, and which live device a capture on one device replays on (refusals of several devices, missing devices) |
//! | [`report`] | the summary: one struct, a human and a JSON renderer |
//! | `check` | D2H comparisons (exact, tolerance, redacted ranges) |
//! | [`verdict`] | PASS, REPRODUCED, MISMATCH, NOT REPRODUCED, FAULT, HANG, ERROR and their exit codes |
//! | [`extract`] | `--extract`: one launch or a range of events cut out into a small archive that replays alone |
//! | `replace` | `--replace-kernel`: launches of a kernel sent to a replacement loaded from a file |
//! | `recheck` | a second replay on failed D2H checks: the program's own nondeterminism told apart from divergence |
//! | `fault` | where a fault happened (kernel, arguments, allocations), localisation by a rerun |
//! | `fields` | the status check and the prescan's reads (handlers read fields into their `hrr_calls` shape) |
//! | [`peers`] | `--all`: the replay processes of one archive's processes, re-pairing IPC handles and keeping the recorded order across processes |
//! | `fd_pass` | `--all`: file descriptors (shareable handles) handed from one replay process to another over a Unix socket |
//! | `placement` | recorded allocations back at their addresses, generic over a `Vmm` trait |
//! | `backend` | the `Backend` trait, the API families, helpers both backends share |
//! | `backend/cuda`, `backend/hip` | where each call is replayed: the dispatch in their `mod.rs` |

mod backend;
mod batch;
mod blob_bytes;
mod check;
pub mod devices;
pub mod engine;
pub mod extract;
mod fault;
mod fd_pass;
mod fields;
mod host_ranges;
pub mod options;
pub mod pairing;
pub mod peers;
mod placement;
mod prescan;
mod recheck;
mod replace;
pub mod report;
mod threads;
pub mod timing;
pub mod verdict;

pub use engine::run;
pub use options::Options;

/// Whether entry point `name`, which capture of an `api` archive passed through unrecorded,
/// writes device memory by its name (replay names such calls as not reproducible).
pub fn passed_through_writes(api: &str, name: &str) -> bool {
    backend::Family::of(api).is_some_and(|f| f.passed_through_writes(name))
}
