//! The seam between the generic engine and the GPU APIs: the [`Backend`] trait a backend
//! implements, the decoded [`Event`] it is handed and the [`Outcome`] it answers, and the
//! [`Family`] of APIs this build replays, which opens a backend and classifies calls for the
//! prescan ([`Prescan`]). The engine knows no call names: it asks [`Family::classify`].
//!
//! Calls come from the tables of `hrr-calls`: an event is resolved to its table operation
//! (`hrr_calls::cuda::Op`, `hrr_calls::hip::Op`) once per record type ([`Ops`]), the prescan
//! classification follows from the operation's `Kind` and record shape ([`prescan_of`]), and
//! handlers read the event into its shape ([`Event::read`]): no call or field name is spelled
//! here or in the backends.
//!
//! Where a call is replayed: `cuda/mod.rs` and `hip/mod.rs` each hold one dispatch function
//! (`replay`) matching the API's `Op` to handlers, falling back to the arms both share
//! (`shared::shared_calls!`); the handlers live in files by concern
//! (memory, copies, code, launches, streams, graphs). Helpers both backends use are in
//! [`shared`]; placement of allocations is `crate::replay::placement`.

/// The value of a `Result<T, Outcome>` whose `Err` is work the handler skips: the skip is
/// returned from the handler (`Ok(outcome)`), the value is kept.
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(skipped) => return Ok(skipped),
        }
    };
}

pub mod code_calls;
pub mod cuda;
pub mod hip;
pub mod memory_calls;
pub mod shared;
pub mod stream_calls;
pub mod timer;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Result;
use hrr_archive::schema::Value;
use hrr_archive::ObjectId;
use hrr_calls::shapes::{
    CtxCreate, DeviceGet, HostAlloc, HostAllocPlain, HostRegister, IpcMemHandle, LibraryLoad,
    MallocPitch, MemAllocPitch, PrimaryCtx, RegisterFatBinary,
};
use hrr_calls::wire::FieldType;
use hrr_calls::{Kind, Shape};

use super::host_ranges::HostRanges;
use super::options::Options;
use super::placement::{Placement, Tally};

pub use shared::CallFailed;

/// One decoded event handed to a backend.
pub struct Event<'a> {
    /// Sequence number.
    pub seq: u64,
    /// When it was recorded (ns since the epoch, the record header's).
    pub ts: u64,
    /// The OS thread id of the recording thread (the record header's; `--multi-thread` replays
    /// each thread's events on a thread of its own).
    pub thread: u64,
    /// Record type: the call's id in the archive's schema (the key of [`Ops`]).
    pub id: u16,
    /// Call name without ABI suffixes (`cuMemcpyHtoDAsync_v2_ptsz` → `cuMemcpyHtoDAsync`).
    pub name: &'a str,
    /// Per-thread default stream semantics (`_ptsz`/`_ptds`).
    pub per_thread: bool,
    /// Decoded fields (read them into the call's shape with [`Event::read`]).
    pub fields: Vec<(&'a str, Value)>,
    /// A launch's shape, read from `fields` by the thread that decodes events ahead (the engine),
    /// so the replaying thread takes it ([`Event::launch`]) instead of reading it again.
    pub launch: std::cell::RefCell<Option<hrr_calls::shapes::Launch>>,
}

impl<'a> Event<'a> {
    /// The event of a record (its header), its call's base name and stream semantics, its
    /// decoded fields and, when read ahead, its launch shape.
    pub fn of_record(
        header: &hrr_archive::framing::RecordHeader,
        (name, per_thread): (&'a str, bool),
        fields: Vec<(&'a str, Value)>,
        launch: Option<hrr_calls::shapes::Launch>,
    ) -> Self {
        Event {
            seq: header.seq,
            ts: header.timestamp_ns,
            thread: header.thread_id,
            id: header.kind,
            name,
            per_thread,
            fields,
            launch: launch.into(),
        }
    }

    /// The event read as a launch: the shape read ahead, else read now.
    pub fn launch(&self) -> Result<hrr_calls::shapes::Launch> {
        match self.launch.take() {
            Some(l) => Ok(l),
            None => self.read(),
        }
    }

    /// The event's fields read into record shape `S` (the `hrr_calls::wire` rules: a missing
    /// integer is an error naming the field, to which the engine adds the event and call;
    /// missing bytes, text, arrays and object ids read as empty).
    pub fn read<S: Shape>(&self) -> Result<S> {
        Ok(S::read(&self.fields)?)
    }
}

/// An API's table operation, as replay resolves and classifies it (implemented for
/// `hrr_calls::cuda::Op` and `hrr_calls::hip::Op`).
pub trait TableOp: Copy + 'static {
    /// Every exported name with its operation (the table's `EXPORTS`).
    const EXPORTS: &'static [(&'static str, Self)];
    /// What the call does.
    fn kind(self) -> Kind;
    /// The fields of its record shape (after `result`).
    fn fields(self) -> &'static [(&'static str, FieldType)];
    /// Recorded under capture's cross-thread ordering lock (creates, destroys, frees).
    fn ordered(self) -> bool;
}

macro_rules! table_op {
    ($($api:ident),*) => {$(
        impl TableOp for hrr_calls::$api::Op {
            const EXPORTS: &'static [(&'static str, Self)] = hrr_calls::$api::EXPORTS;
            fn kind(self) -> Kind {
                hrr_calls::$api::Op::kind(self)
            }
            fn fields(self) -> &'static [(&'static str, FieldType)] {
                hrr_calls::$api::Op::fields(self)
            }
            fn ordered(self) -> bool {
                hrr_calls::$api::Op::ordered(self)
            }
        }
    )*};
}
table_op!(cuda, hip);

/// The table operation of a call, by its base name (ABI suffixes stripped, as [`Event::name`]):
/// the operation of an export with that base name, so ABI variants the table does not list
/// replay like their siblings. Where exports of different operations share a base name
/// (`cuCtxSynchronize`, `cuCtxSynchronize_v2`), the one whose shape has the event's fields
/// (`field_names`, `result` left out) wins. `None`: not a call of the table (ignored).
pub fn resolve<'n, O: TableOp>(
    name: &str,
    field_names: impl Iterator<Item = &'n str> + Clone,
) -> Option<O> {
    let mut candidates = O::EXPORTS
        .iter()
        .filter(|(n, _)| base_name(n).0 == name)
        .map(|&(_, op)| op);
    let first = candidates.clone().next()?;
    let same_fields = |op: O| {
        let recorded = field_names
            .clone()
            .filter(|n| *n != crate::replay::fields::RESULT);
        recorded.eq(op.fields().iter().map(|(n, _)| *n))
    };
    Some(candidates.find(|&op| same_fields(op)).unwrap_or(first))
}

/// What this build's table says of a recorded call of `family` named `name` (a base name)
/// with fields `field_names`: its kind and whether capture ordered it across threads (`None`:
/// not a call of the table).
pub fn table_facts<'n>(
    family: Family,
    name: &str,
    field_names: impl Iterator<Item = &'n str> + Clone,
) -> Option<(Kind, bool)> {
    fn facts<O: TableOp>(op: Option<O>) -> Option<(Kind, bool)> {
        op.map(|o| (o.kind(), o.ordered()))
    }
    match family {
        Family::Cuda => facts(resolve::<hrr_calls::cuda::Op>(name, field_names)),
        Family::Hip => facts(resolve::<hrr_calls::hip::Op>(name, field_names)),
    }
}

/// Events resolved to their table operation once per record type (the schema's call id), so
/// dispatch costs an index per event, never a name search.
pub struct Ops<O> {
    by_id: Vec<Option<Option<O>>>,
}

impl<O> Default for Ops<O> {
    fn default() -> Self {
        Ops { by_id: Vec::new() }
    }
}

impl<O: TableOp> Ops<O> {
    /// The table operation of `ev` (`None`: not a call of the table).
    pub fn of(&mut self, ev: &Event) -> Option<O> {
        let i = ev.id as usize;
        if let Some(Some(op)) = self.by_id.get(i) {
            return *op;
        }
        let op = resolve(ev.name, ev.fields.iter().map(|(n, _)| *n));
        if self.by_id.len() <= i {
            self.by_id.resize(i + 1, None);
        }
        self.by_id[i] = Some(op);
        op
    }
}

/// What replaying one event did.
pub enum Outcome {
    /// Reissued.
    Done,
    /// A kernel was launched.
    Launched,
    /// A run of this many launches was issued at its first event (launch batching,
    /// `crate::replay::batch`: the run's other events are not decoded).
    Launches(u64),
    /// A CUDA graph was launched.
    GraphLaunched,
    /// Filtered out by `--kernel-filter`.
    Filtered,
    /// Not reissued, with the reason.
    Skipped(String),
    /// Nothing to do for this call.
    Ignored,
    /// A device-to-host copy: the bytes read now, and the recorded result.
    D2h {
        /// Bytes the GPU produced now.
        got: Vec<u8>,
        /// The recorded blob.
        expected: Option<ObjectId>,
        /// The host address the recorded run copied it to (0: not known): results of one
        /// copy repeated (a loop's result read back each iteration) share it
        /// (`crate::replay::recheck`).
        site: u64,
    },
}

/// Reads a recorded blob (`None` id: nothing recorded).
/// The second argument is the size the event says the blob has (a copy's byte count), checked
/// before the bytes are used: a truncated or oversized blob is an error naming it.
pub type Blobs<'a> =
    dyn Fn(Option<ObjectId>, Option<u64>) -> Result<Option<super::blob_bytes::BlobBytes>> + 'a;

/// A code object the capture loaded, to load before the first call.
#[derive(Debug, Clone)]
pub struct CodeObject {
    /// Its id.
    pub id: ObjectId,
    /// Its file in the archive.
    pub path: PathBuf,
    /// Loaded as a library (`cuLibraryLoad*`) rather than a module.
    pub as_library: bool,
}

/// A wait a replay thread runs without holding the backend (see [`Backend::detached_wait`]).
pub struct DetachedWait(Box<dyn FnOnce() -> Result<()> + Send>);

impl DetachedWait {
    /// The wait `f`.
    pub fn new(f: impl FnOnce() -> Result<()> + Send + 'static) -> Self {
        DetachedWait(Box::new(f))
    }

    /// Wait.
    pub fn run(self) -> Result<()> {
        (self.0)()
    }
}

/// A GPU API backend.
pub trait Backend {
    /// Device description for the summary.
    fn device(&self) -> String;
    /// Runtime library path for the summary.
    fn runtime(&self) -> String;
    /// Refuse archives from another architecture or a newer driver.
    fn preflight(&self, metadata: Option<&serde_json::Value>) -> Result<()>;
    /// Load code objects before the first call.
    fn preload(&mut self, code: &[CodeObject]) -> Result<()>;
    /// Make this backend's device and context current on the calling thread (each replay
    /// thread of `--multi-thread` calls it before its first event).
    fn enter_thread(&mut self) -> Result<()>;
    /// Reissue one event.
    fn replay(&mut self, ev: &Event, blobs: &Blobs, opts: &Options) -> Result<Outcome>;
    /// `--multi-thread`: a stream or event synchronisation waited for outside the shared
    /// backend, so that the other replay threads go on meanwhile ([`DetachedWait`]); `None`:
    /// replayed in place by [`Backend::replay`] (other calls, or a watchdog is set).
    fn detached_wait(&mut self, _ev: &Event) -> Option<Result<DetachedWait>> {
        None
    }
    /// Wait for all work.
    fn finish(&mut self) -> Result<()>;
    /// Where the recorded allocations live now (the backend's placement of them).
    fn memory(&self) -> &Placement;
    /// How recorded allocations landed.
    fn placement(&self) -> Tally {
        self.memory().tally()
    }
    /// Read `len` bytes at recorded device address `addr` (translated when it moved), waiting
    /// until they are read (the snapshots of `crate::replay::extract`).
    fn read_device(&mut self, addr: u64, len: usize) -> Result<Vec<u8>>;
    /// Recorded device allocations alive now: `(recorded start, length)`.
    fn live_ranges(&self) -> Vec<(u64, u64)> {
        self.memory().live()
    }
    /// Launch kernel `name` (mangled, as recorded) from code `image` instead of the recorded
    /// one (`--replace-kernel`, `crate::replay::replace`); answers the replacement's parameter
    /// layout `(offset, size)` when the driver tells it.
    fn replace_kernel(&mut self, name: &str, _image: &[u8]) -> Result<Option<Vec<(u64, u64)>>> {
        anyhow::bail!("--replace-kernel {name}: not available for this API yet (CUDA only)")
    }
    /// Replaced kernels (mangled names) and how many launches used the replacement.
    fn replaced_launches(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// `--perturb`: what perturbed this replay (noise kernels launched, or why none could be);
    /// `None` without `--perturb` or where the backend has none (HIP for now).
    fn perturbation(&self) -> Option<String> {
        None
    }
    /// `--timing`: GPU time of the launches, by kernel, largest total first (empty where the
    /// backend does not time launches; both CUDA's and HIP's do, through `timer::Timer`).
    fn timings(&self) -> Vec<crate::replay::timing::KernelTiming> {
        Vec::new()
    }
    /// A D2H result the engine has compared, handed back so the next large result reuses its
    /// memory (no fresh pages to fault in).
    fn recycle(&mut self, _buf: Vec<u8>) {}
    /// Prepare runs of launches to issue as graphs (`crate::replay::batch`), before the clock
    /// starts; a run that cannot be prepared is issued launch by launch. Default: none is (HIP
    /// for now).
    fn prepare_runs(&mut self, _runs: Vec<crate::replay::batch::LaunchRun>) {}
    /// The recorded allocations at `addrs` are exported to other processes (IPC): allocate
    /// them so that they can be (the CUDA backend: plainly, not placed at their address).
    fn exported(&mut self, _addrs: &[u64]) {}
    /// The contexts the capture opened (recorded value, recorded device), known before the
    /// first event: a context may be made current before the call that opened it was
    /// recorded.
    fn contexts(&mut self, _opened: &[(u64, i32)]) -> Result<()> {
        Ok(())
    }
    /// Does the backend upload from sources mapped before the clock (`blob_bytes::Preloaded`)?
    /// Where it does not (HIP for now), none are mapped.
    fn uses_preloaded_sources(&self) -> bool {
        false
    }
    /// Page-lock large H2D sources mapped before the clock, so their uploads go to the device
    /// without a staging copy; `false` when none could be (they are then not kept). They stay
    /// mapped until replay ends.
    fn pin_sources(&mut self, _sources: &[&[u8]]) -> bool {
        false
    }
    /// The runs prepared (first and last event, ascending): their events after the first are
    /// not decoded, the first issues them all.
    fn prepared_runs(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// What launch batching did (`None`: nothing was batched).
    fn batching(&self) -> Option<crate::replay::batch::Batching> {
        None
    }
}

/// Which device range a successful allocation call took (read by `fields::extent` and
/// `memory_calls::alloc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// `dptr`, `bytesize` of the byte allocation shapes (`MemAlloc`, `MemAllocAsync`,
    /// `MemAllocFromPool`, `MemAllocFlags`), read through `shapes::MemAlloc`.
    Bytes,
    /// `dptr`, `pitch` × `height` of the pitched shapes (`MemAllocPitch`, `MallocPitch`), read
    /// through `shapes::MallocPitch`.
    Pitched,
    /// A VMM reservation: `ptr`, `size` of `shapes::AddressReserve`, read through
    /// `shapes::Range`.
    Reservation,
}

/// What the prescan must know of a call before the driver loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prescan {
    /// It allocated or reserved device addresses: reserved again before anything else.
    Alloc(Extent),
    /// It loaded (or registered) a code object: loaded once, before the first call.
    CodeLoad {
        /// Loaded as a library.
        as_library: bool,
    },
    /// It looked a device up by ordinal: the ordinals a capture used choose the device replay
    /// opens (`crate::replay::devices`).
    DeviceLookup,
    /// It opened a context on a device (`PrimaryCtx` or `CtxCreate` shape): the devices a
    /// capture opened contexts on are the ones replay opens (look-ups alone open none).
    ContextOpen,
    /// The source of an earlier async H2D copy, recorded after it: the copy's event takes it
    /// (`CopySource` shape).
    LateSource,
    /// It exported device memory to other processes (`IpcMemHandle` shape).
    IpcExport,
    /// It made host memory visible to the device at a host address (pinned or registered:
    /// `HostAlloc`, `HostAllocPlain`, `HostRegister` shapes): the address is kept free for it
    /// before anything else takes it.
    HostRange,
}

/// The API families this build replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// CUDA driver API.
    Cuda,
    /// HIP runtime.
    Hip,
}

impl Family {
    /// The family of a schema's API name, if this build replays it.
    pub fn of(api: &str) -> Option<Family> {
        match api {
            "cuda-driver" => Some(Family::Cuda),
            "hip" => Some(Family::Hip),
            _ => None,
        }
    }

    /// Whether an entry point capture passed through without recording it (no table row; the
    /// manifest's `passthrough_calls`) may write device memory by its name: a copy, a memset,
    /// a launch or a stream memory write that replay cannot reissue, so results it wrote may
    /// differ. Queries and calls that change no data are not named.
    pub fn passed_through_writes(self, name: &str) -> bool {
        let prefixes: &[&str] = match self {
            Family::Cuda => &[
                "cuMemcpy",
                "cuMemset",
                "cuLaunch",
                "cuGraphLaunch",
                "cuStreamWriteValue",
                "cuStreamBatchMemOp",
            ],
            Family::Hip => &[
                "hipMemcpy",
                "hipMemset",
                "hipLaunch",
                "hipModuleLaunch",
                "hipExtLaunch",
                "hipGraphLaunch",
                "hipStreamWriteValue",
            ],
        };
        prefixes.iter().any(|p| name.starts_with(p))
    }

    /// What the prescan must know of call `name` (base name, ABI suffixes stripped): from the
    /// table's operations of that name ([`prescan_of`]), listed once per family.
    pub fn classify(self, name: &str) -> Option<Prescan> {
        static CUDA: OnceLock<Vec<(&str, Prescan)>> = OnceLock::new();
        static HIP: OnceLock<Vec<(&str, Prescan)>> = OnceLock::new();
        let calls = match self {
            Family::Cuda => CUDA.get_or_init(prescan_calls::<hrr_calls::cuda::Op>),
            Family::Hip => HIP.get_or_init(prescan_calls::<hrr_calls::hip::Op>),
        };
        calls.iter().find(|(n, _)| *n == name).map(|&(_, p)| p)
    }

    /// The spans device memory will be reserved in for the recorded device `ranges`, known
    /// before the driver loads (CUDA: 32 MiB chunks; HIP, which holds no host ranges: the
    /// ranges themselves): host blocks meeting them are not held ([`HostRanges::reserve`]).
    pub fn device_spans(self, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let unit = match self {
            Family::Cuda => cuda::memory::RESERVE_CHUNK,
            Family::Hip => 1,
        };
        crate::replay::placement::spans_in_units(unit, ranges)
    }

    /// Load the runtime and open the device to replay on (CUDA: the one the capture's device
    /// ordinals `devices` map to, `crate::replay::devices`; HIP: device 0); `ranges` are the
    /// recorded device address ranges, reserved before anything else, around the `host`
    /// ranges held for host memory (CUDA; HIP lets them go).
    pub fn open(
        self,
        opts: &Options,
        ranges: &[(u64, u64)],
        devices: &[i32],
        host: HostRanges,
    ) -> Result<Box<dyn Backend>> {
        Ok(match self {
            Family::Cuda => Box::new(cuda::Cuda::open(opts, ranges, devices, host)?),
            Family::Hip => {
                drop(host);
                Box::new(hip::Hip::open(opts, ranges)?)
            }
        })
    }
}

/// What the prescan must know of a table operation, from its kind and record shape: an
/// allocation ([`Kind::Alloc`]) takes the range of its shape (pitched for `MemAllocPitch` and
/// `MallocPitch`, else bytes), a reservation ([`Kind::Reserve`]) its range, a load
/// ([`Kind::Load`]) loads its code (as a library for the `LibraryLoad` shape), and so does a
/// fat-binary registration (HIP's `RegisterFatBinary` shape); a query of the `DeviceGet` shape
/// looks a device up by ordinal.
pub fn prescan_of<O: TableOp>(op: O) -> Option<Prescan> {
    let shape = op.fields();
    let is = |fields: &[(&str, FieldType)]| shape == fields;
    match op.kind() {
        Kind::Alloc if is(MemAllocPitch::FIELDS) || is(MallocPitch::FIELDS) => {
            Some(Prescan::Alloc(Extent::Pitched))
        }
        Kind::Alloc => Some(Prescan::Alloc(Extent::Bytes)),
        Kind::Reserve => Some(Prescan::Alloc(Extent::Reservation)),
        Kind::Load => Some(Prescan::CodeLoad {
            as_library: is(LibraryLoad::FIELDS),
        }),
        Kind::Register if is(RegisterFatBinary::FIELDS) => {
            Some(Prescan::CodeLoad { as_library: false })
        }
        Kind::Query if is(DeviceGet::FIELDS) => Some(Prescan::DeviceLookup),
        Kind::Context if is(PrimaryCtx::FIELDS) || is(CtxCreate::FIELDS) => {
            Some(Prescan::ContextOpen)
        }
        Kind::H2dSource => Some(Prescan::LateSource),
        Kind::Ipc if is(IpcMemHandle::FIELDS) => Some(Prescan::IpcExport),
        Kind::HostMem
            if is(HostAlloc::FIELDS) || is(HostAllocPlain::FIELDS) || is(HostRegister::FIELDS) =>
        {
            Some(Prescan::HostRange)
        }
        _ => None,
    }
}

/// The base names of a table's calls the prescan must know, with what it must know.
fn prescan_calls<O: TableOp>() -> Vec<(&'static str, Prescan)> {
    let mut calls: Vec<(&str, Prescan)> = Vec::new();
    for &(export, op) in O::EXPORTS {
        let name = base_name(export).0;
        if calls.iter().all(|(n, _)| *n != name) {
            if let Some(p) = prescan_of(op) {
                calls.push((name, p));
            }
        }
    }
    calls
}

/// Strip `_ptsz`/`_ptds` and `_vN` suffixes; also says whether the call used per-thread
/// default stream semantics.
pub fn base_name(name: &str) -> (&str, bool) {
    let (name, per_thread) = match name
        .strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
    {
        Some(n) => (n, true),
        None => (name, false),
    };
    let base = match name.rfind("_v") {
        Some(i) if name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < name.len() => {
            &name[..i]
        }
        _ => name,
    };
    (base, per_thread)
}

/// Read a code object file of the archive.
pub fn read_code(path: &Path) -> Result<Vec<u8>> {
    use anyhow::Context;
    std::fs::read(path).with_context(|| format!("cannot read code object {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_classify_their_allocations_and_code_loads() {
        assert_eq!(Family::of("cuda-driver"), Some(Family::Cuda));
        assert_eq!(Family::of("hip"), Some(Family::Hip));
        assert_eq!(Family::of("opencl"), None);
        let cuda: &[(&str, Option<Prescan>)] = &[
            ("cuMemAllocPitch", Some(Prescan::Alloc(Extent::Pitched))),
            (
                "cuLibraryLoadData",
                Some(Prescan::CodeLoad { as_library: true }),
            ),
            ("hipMalloc", None),
            ("cuDeviceGet", Some(Prescan::DeviceLookup)),
            ("cuDevicePrimaryCtxRetain", Some(Prescan::ContextOpen)),
            ("cuCtxCreate", Some(Prescan::ContextOpen)),
            ("cuDeviceGetCount", None),
        ];
        let hip: &[(&str, Option<Prescan>)] = &[
            (
                "hipMemAddressReserve",
                Some(Prescan::Alloc(Extent::Reservation)),
            ),
            (
                "__hipRegisterFatBinary",
                Some(Prescan::CodeLoad { as_library: false }),
            ),
            ("hipLaunchKernel", None),
            ("hipDeviceGet", Some(Prescan::DeviceLookup)),
        ];
        for (family, cases) in [(Family::Cuda, cuda), (Family::Hip, hip)] {
            for &(call, expected) in cases {
                assert_eq!(family.classify(call), expected, "{family:?} {call}");
            }
        }
    }

    /// The names of a shape's fields.
    fn names(fields: &[(&str, FieldType)]) -> Vec<String> {
        fields.iter().map(|(n, _)| n.to_string()).collect()
    }

    /// Every export classifies as its base name does (the prescan knows base names only), the
    /// shape an extent is read through has its fields in every allocation it reads, and
    /// `PrimaryCtx` (which CUDA replay reads every context open through) its fields in every
    /// context open.
    fn classification_is_consistent<O: TableOp + std::fmt::Debug>(family: Family) {
        use hrr_calls::shapes::{MemAlloc, Range};
        for &(export, op) in O::EXPORTS {
            assert_eq!(
                family.classify(base_name(export).0),
                prescan_of(op),
                "{export}"
            );
            let view = match prescan_of(op) {
                Some(Prescan::Alloc(Extent::Bytes)) => MemAlloc::FIELDS,
                Some(Prescan::Alloc(Extent::Pitched)) => MallocPitch::FIELDS,
                Some(Prescan::Alloc(Extent::Reservation)) => Range::FIELDS,
                Some(Prescan::ContextOpen) => PrimaryCtx::FIELDS,
                _ => continue,
            };
            let have = names(op.fields());
            assert!(
                names(view).iter().all(|n| have.contains(n)),
                "{op:?}: {have:?}"
            );
        }
    }

    #[test]
    fn classification_follows_kind_and_shape() {
        classification_is_consistent::<hrr_calls::cuda::Op>(Family::Cuda);
        classification_is_consistent::<hrr_calls::hip::Op>(Family::Hip);
        let cuda = Family::Cuda;
        assert_eq!(
            cuda.classify("cuMemAllocFromPoolAsync"),
            Some(Prescan::Alloc(Extent::Bytes))
        );
        assert_eq!(cuda.classify("cuMemAllocManaged"), None);
        assert_eq!(
            cuda.classify("cuModuleLoadFatBinary"),
            Some(Prescan::CodeLoad { as_library: false })
        );
        assert_eq!(
            Family::Hip.classify("hipExtMallocWithFlags"),
            Some(Prescan::Alloc(Extent::Bytes))
        );
        assert_eq!(
            Family::Hip.classify("hipMallocPitch"),
            Some(Prescan::Alloc(Extent::Pitched))
        );
        assert_eq!(Family::Hip.classify("__hipRegisterFunction"), None);
    }

    #[test]
    fn events_resolve_to_their_table_operation() {
        use hrr_calls::cuda::Op;
        let r = |name: &str, fields: &[&str]| resolve::<Op>(name, fields.iter().copied());
        assert_eq!(r("cuMemcpyHtoDAsync", &[]), Some(Op::MemcpyHtoDAsync));
        // Two operations of one base name: the fields decide.
        assert_eq!(r("cuCtxSynchronize", &["result"]), Some(Op::CtxSynchronize));
        assert_eq!(
            r("cuCtxSynchronize", &["result", "ctx"]),
            Some(Op::CtxSynchronizeCtx)
        );
        // An ABI variant the table does not list replays like its siblings.
        assert_eq!(
            r(base_name("cuMemsetD16_v2_ptds").0, &[]),
            Some(Op::MemsetD16)
        );
        assert_eq!(r("cuNotACall", &[]), None);
        assert_eq!(
            resolve::<hrr_calls::hip::Op>("hipMalloc", std::iter::empty()),
            Some(hrr_calls::hip::Op::Malloc)
        );

        let mut ops = Ops::<Op>::default();
        let ev = |id, name| Event {
            seq: 1,
            ts: 0,
            thread: 0,
            id,
            name,
            per_thread: false,
            fields: Vec::new(),
            launch: Default::default(),
        };
        assert_eq!(ops.of(&ev(7, "cuMemAlloc")), Some(Op::MemAlloc));
        assert_eq!(ops.of(&ev(3, "hipMalloc")), None);
        // Cached by record type.
        assert_eq!(ops.of(&ev(7, "anything")), Some(Op::MemAlloc));
        assert_eq!(ops.of(&ev(3, "cuMemAlloc")), None);
    }

    #[test]
    fn a_missing_integer_names_its_field() {
        use hrr_calls::shapes::MemAlloc;
        let ev = Event {
            seq: 1,
            ts: 0,
            thread: 0,
            id: 1,
            name: "cuMemAlloc",
            per_thread: false,
            fields: vec![("dptr", Value::Ptr(0x10))],
            launch: Default::default(),
        };
        let e = ev.read::<MemAlloc>().unwrap_err();
        assert_eq!(format!("{e:#}"), "field `bytesize` missing");
    }

    #[test]
    fn abi_suffixes_are_stripped() {
        assert_eq!(
            base_name("cuMemcpyHtoDAsync_v2_ptsz"),
            ("cuMemcpyHtoDAsync", true)
        );
        assert_eq!(base_name("cuMemAlloc_v2"), ("cuMemAlloc", false));
        assert_eq!(base_name("cuLaunchKernel"), ("cuLaunchKernel", false));
        assert_eq!(base_name("cuMemcpy_ptds"), ("cuMemcpy", true));
    }
}
