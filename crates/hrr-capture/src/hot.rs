//! The flags the hooks read on every call, kept in one cache line. A launch's hook reads
//! whether capture is on, this process's id, the generation of what it knows of kernels,
//! whether any stream is being captured, whether any host-visible memory is tracked and
//! whether the profile is on. As separate statics, in as many places as the linker put them,
//! each was a cache miss of its own once the driver's launch had run between two of the
//! program's launches (`scripts/bench-capture-instructions.sh launch_cold`): a hook's added time
//! on a GPU machine is mostly such misses. Written rarely (at start, a fork, a module load, a
//! capture's begin and end, a region tracked), so the line stays shared between the program's
//! threads.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

/// The hot flags; each field's owner documents it.
#[repr(C, align(64))]
pub struct Hot {
    /// Whether capture records (`recorder`).
    pub mode: AtomicU8,
    /// Whether the profile is on (`hook::profile`).
    pub profile: AtomicU8,
    /// This process's id (`recorder::current_pid`).
    pub pid: AtomicU32,
    /// The generation of what capture knows of function and kernel handles
    /// (`api::cuda::state::kernels_generation`).
    pub kernels_generation: AtomicU64,
    /// Streams in stream capture (`api::cuda::state`).
    pub capturing: AtomicUsize,
    /// Tracked regions of host-visible memory (`api::cuda::hostmem`).
    pub hostmem_regions: AtomicUsize,
}

/// The one instance.
pub static HOT: Hot = Hot {
    mode: AtomicU8::new(0),
    profile: AtomicU8::new(0),
    pid: AtomicU32::new(0),
    kernels_generation: AtomicU64::new(0),
    capturing: AtomicUsize::new(0),
    hostmem_regions: AtomicUsize::new(0),
};

// One line, as the module says: a field added past 64 bytes would split it.
const _: () = assert!(std::mem::size_of::<Hot>() == 64 && std::mem::align_of::<Hot>() == 64);
