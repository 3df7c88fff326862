//! The CUDA backend: replays `cuda-driver` events against the real driver (or `--runtime`).
//! The dispatch in [`Cuda`]'s `replay` is the only place that tells calls apart: it matches the
//! table operation (`hrr_calls::cuda::Op`, resolved once per record type) of each event, falling
//! back to the arms both backends share (`shared::shared_calls!`); each arm calls a handler in
//! the file of its concern, which reads the event into the row's record shape
//! (`hrr_calls::shapes`):
//!
//! | file | owns |
//! | --- | --- |
//! | `driver.rs` | the entry-point table loaded with libloading, the `cu!` macro |
//! | `open.rs` | loading the driver, the devices (`--device-map`) and their primary contexts, preflight checks, device look-ups |
//! | `devices.rs` | several devices: recorded ordinals to live devices, each recorded thread's current context followed |
//! | `memory.rs` | allocations, host memory, the program's VMM calls, the `Vmm` and `DeviceMemory` (memset) implementations |
//! | `copies.rs` | memcpy: 1D, 2D/3D (pitched), to, from and between arrays |
//! | `arrays.rs` | arrays, mipmapped arrays, texture and surface objects (values substituted in launch arguments) |
//! | `code.rs` | code objects: loading, module/library/kernel/function look-ups, globals, attributes |
//! | `launch.rs` | kernel launches |
//! | `batch.rs` | runs of launches prepared as graphs before the clock (launch batching) |
//! | `streams.rs` | streams, events, waiting (watchdog), stream-capture state |
//! | `graph_capture.rs` | stream captures begun, queried and ended again (the driver rebuilds their graphs) |
//! | `graphs.rs` | graphs rebuilt node by node, instantiated, updated and launched |
//! | `hostmem.rs` | host-visible memory (pinned, registered, managed) and the host's recorded writes and reads of it |
//! | `pools.rs` | stream-ordered memory pools |
//! | `extract.rs` | snapshot reads for `--extract`, replacement kernels for `--replace-kernel` |
//!
//! Handles (contexts, streams, events, modules, libraries, functions, kernels, VMM handles) are
//! remapped; code objects are loaded once, before the first call, and kernels are bound through
//! the recorded look-ups of that code object, so two kernels of one name in different code
//! objects stay apart.

mod arrays;
mod batch;
mod code;
mod copies;
mod devices;
mod driver;
mod extract;
mod graph_capture;
mod graphs;
mod hostmem;
mod ipc;
mod launch;
pub(super) mod memory;
mod noise;
mod open;
mod pools;
mod staging;
mod streams;
mod tensor_maps;

use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::{bail, Context, Result};
use hrr_archive::ObjectId;

use hrr_calls::cuda::Op;

use super::memory_calls::Deferred;
use super::shared::{shared_calls, Handles, Waiter};
use super::{memory_calls, stream_calls, Backend, Blobs, CodeObject, Event, Extent, Ops, Outcome};
use crate::replay::options::Options;
use crate::replay::placement::Placement;
use driver::{Api, H};
use graphs::NodeCall;
use streams::stream_of;

/// Replays CUDA driver events.
pub struct Cuda {
    api: Api,
    /// The current device (of `opened`): where memory is placed and pools are looked up.
    dev: c_int,
    /// The recorded device ordinals and the live ones replay opened for them.
    chosen: crate::replay::devices::Choice,
    /// The current device's primary context (the first device's is made current on every
    /// replay thread).
    primary: H,
    /// The live devices opened, the first current at start (`devices.rs`).
    opened: Vec<devices::Opened>,
    /// Index in `opened` of the current device.
    current: usize,
    /// With several devices: each recorded thread's stack of current contexts (live).
    contexts: HashMap<u64, Vec<H>>,
    /// Code objects loaded as modules again in the context of another device than the first:
    /// (code object, index in `opened`) → module.
    modules_elsewhere: HashMap<(ObjectId, usize), H>,
    /// Where each code object's file is (a module is loaded again per device).
    code_paths: HashMap<ObjectId, std::path::PathBuf>,
    device_name: String,
    cc: (i32, i32),
    mem: Placement,
    module_of_code: HashMap<ObjectId, H>,
    library_of_code: HashMap<ObjectId, H>,
    handles: Handles,
    /// Graphs rebuilt from recorded stream captures or `cuGraphCreate`, by recorded handle (kept apart from
    /// `handles` so an explicitly built graph never matches a stale handle of another kind).
    graphs: HashMap<u64, H>,
    /// Their instantiations, by recorded handle.
    execs: HashMap<u64, H>,
    /// Nodes and host buffers of graphs built node by node.
    node_graphs: graphs::NodeGraphs,
    waiter: Waiter,
    /// Host buffers read or written by copies captured into graphs: the graph reads (or
    /// writes) them at every launch, so they live until replay ends.
    graph_host: Vec<Vec<u8>>,
    /// Texture and surface object values: recorded value to live value.
    objects: arrays::Objects,
    /// Async D2H copies whose result comes in a later `hrrMemcpyResult` event: by the copy's
    /// sequence number, the buffer it is copying into and its stream (`None` once waited for:
    /// its stream was destroyed before the result event, `copies::settle_pending_on`).
    pending_d2h: HashMap<u64, (Vec<u8>, Option<H>)>,
    /// A large D2H buffer the engine handed back, for the next large result.
    spare_d2h: Vec<u8>,
    /// The argument pointers of the launch being issued (kept: no allocation per launch).
    arg_ptrs: Vec<*mut std::ffi::c_void>,
    /// Pinned buffers large uploads are staged through (`staging.rs`).
    ring: staging::Ring,
    /// Table operations of the archive's record types.
    ops: Ops<Op>,
    /// `--timing`: GPU time of each launch.
    timer: crate::replay::backend::timer::Timer,
    /// Host-visible memory re-created for the program.
    host: hostmem::HostRegions,
    /// Host addresses held for the recorded host memory (`crate::replay::host_ranges`).
    host_held: crate::replay::host_ranges::HostRanges,
    /// Host memory backed inside device reservations works here (`None`: not tried yet; the
    /// first one is checked by a round trip, and a failure turns the way off).
    host_in_reservation: Option<bool>,
    /// Stream-ordered frees not released yet.
    deferred: Deferred,
    /// `--perturb`: the noise kernel launched before each launch, or why it could not be
    /// loaded.
    noise: Option<std::result::Result<noise::Noise, String>>,
    /// `--fill-fresh` (a recheck's replays): the byte each new device allocation is filled with.
    fill_fresh: Option<u8>,
    /// Stream captures begun and not ended yet (while none is, no stream is capturing).
    captures: u32,
    /// Graph memory: recorded addresses of allocations made inside stream captures.
    graph_mem: std::collections::HashSet<u64>,
    /// `--replace-kernel`: recorded (mangled) kernel name → replacement function, launches.
    replaced: HashMap<String, (H, u64)>,
    /// Runs of launches prepared as graphs (`batch.rs`).
    batches: batch::Batches,
    /// Preloaded sources page-locked in place: (address, length), ascending (`staging.rs`).
    pinned_sources: Vec<(u64, u64)>,
}

impl Cuda {
    /// An allocation, after the deferred frees of its range were released.
    fn alloc(&mut self, ev: &Event, extent: Extent) -> Result<Outcome> {
        let api = &self.api;
        let done = memory_calls::alloc_after_frees(
            &mut self.mem,
            api,
            api,
            &mut self.deferred,
            ev,
            extent,
        )?;
        if let (Some(byte), 0) = (self.fill_fresh, self.captures) {
            // a recheck's replay: what no recorded work writes differs from replay to replay
            let (addr, size) = memory_calls::allocated(ev, extent)?;
            let live = self.mem.translate(addr);
            let null = std::ptr::null_mut();
            driver::cu!(self.api, cuMemsetD8Async(live, byte, size as usize, null))?;
            self.wait(
                null,
                &format!("filling allocation 0x{addr:x} (event #{})", ev.seq),
            )?;
        }
        Ok(done)
    }

    /// A stream-ordered allocation (`(dptr, stream)` as recorded). One made inside a stream
    /// capture is graph memory: the driver gave the graph an address its launches use, and
    /// replay places memory there for every launch, kept until replay ends (frees of it,
    /// inside the capture or after, are ignored).
    fn alloc_ordered(
        &mut self,
        ev: &Event,
        (dptr, stream): (u64, u64),
        per_thread: bool,
    ) -> Result<Outcome> {
        let st = stream_of(&self.handles, per_thread, stream)?;
        if self.capturing(st) {
            if self.graph_mem.contains(&dptr) {
                return Ok(Outcome::Done); // the same graph memory again (a later capture)
            }
            self.graph_mem.insert(dptr);
        }
        self.alloc(ev, Extent::Bytes)
    }

    /// `cuMemFree`: managed memory goes back to the driver; device allocations to placement
    /// (graph memory stays, see [`Cuda::alloc_ordered`]). Deferred stream-ordered frees that
    /// completed are released too.
    fn free(&mut self, ev: &Event) -> Result<Outcome> {
        let dptr = ev.read::<hrr_calls::shapes::DevicePtr>()?.dptr;
        if self.graph_mem.contains(&dptr) {
            return Ok(Outcome::Done);
        }
        let api = &self.api;
        self.deferred.reap(&mut self.mem, api, api, None, false)?;
        if self.is_managed(dptr) {
            return self.host_release_managed(dptr);
        }
        memory_calls::free(&mut self.mem, &self.api, ev)
    }

    /// `hrrFreeCheck`: what a device allocation held when the program freed it (recorded in a
    /// process that copied no result back), read once all work is done and compared like a
    /// D2H result. The length must lie within an allocation alive now (an archive's count is
    /// never trusted to size a buffer by itself).
    fn free_check(&mut self, ev: &Event) -> Result<Outcome> {
        let s: hrr_calls::shapes::FreeCheck = ev.read()?;
        if !self.mem.holds(s.dptr, s.bytes) {
            bail!(
                "event #{}: the freed memory 0x{:x} (+{} bytes) is not memory alive here",
                ev.seq,
                s.dptr,
                s.bytes
            );
        }
        let got = self
            .read_recorded(s.dptr, s.bytes as usize)
            .with_context(|| format!("event #{}: what the program freed", ev.seq))?;
        Ok(Outcome::D2h {
            got,
            expected: s.d2h_blob,
            site: s.dptr,
        })
    }
}

impl Backend for Cuda {
    fn device(&self) -> String {
        let d = format!("{} (sm_{}{})", self.device_name, self.cc.0, self.cc.1);
        format!("{d}{}", self.chosen.note())
    }

    fn enter_thread(&mut self) -> Result<()> {
        let first = self.opened[0].primary;
        driver::cu!(self.api, cuCtxSetCurrent(first))?;
        devices::note_current(first);
        Ok(())
    }

    fn runtime(&self) -> String {
        self.api.path.clone()
    }

    fn preflight(&self, meta: Option<&serde_json::Value>) -> Result<()> {
        self.check_archive(meta)
    }

    fn preload(&mut self, code: &[CodeObject]) -> Result<()> {
        for c in code {
            self.load_code(c.id, &c.path, c.as_library)?;
            self.code_paths.insert(c.id, c.path.clone());
        }
        Ok(())
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        self.keep_d2h_buffer(buf);
    }

    fn prepare_runs(&mut self, runs: Vec<crate::replay::batch::LaunchRun>) {
        // runs are prepared in the first device's context: not on several devices
        if !self.several_devices() {
            self.prepare_batches(runs);
        }
    }

    fn exported(&mut self, addrs: &[u64]) {
        self.mem.allocate_plainly(addrs);
    }

    fn contexts(&mut self, opened: &[(u64, i32)]) -> Result<()> {
        // replay opens a primary context per device (contexts created with cuCtxCreate are
        // replayed as the primary context of their device too)
        for &(rec, device) in opened {
            let primary = self.primary_of(device);
            self.handles.insert(rec, primary);
        }
        Ok(())
    }

    fn uses_preloaded_sources(&self) -> bool {
        true
    }

    fn pin_sources(&mut self, sources: &[&[u8]]) -> bool {
        Cuda::pin_sources(self, sources)
    }

    fn prepared_runs(&self) -> Vec<(u64, u64)> {
        self.batches.spans()
    }

    fn batching(&self) -> Option<crate::replay::batch::Batching> {
        self.batches.summary()
    }

    fn replay(&mut self, ev: &Event, blobs: &Blobs, opts: &Options) -> Result<Outcome> {
        let Some(op) = self.ops.of(ev) else {
            return Ok(Outcome::Ignored); // not a call of the table
        };
        let filter = opts.kernel_filter.as_deref();
        let per_thread = ev.per_thread;
        if self.opened.len() > 1 {
            self.follow_context(ev)?;
        }
        match op {
            Op::DeviceGet => self.device_get(ev),
            Op::DevicePrimaryCtxRetain => self.retain_context(ev, false),
            Op::CtxCreate => self.retain_context(ev, true),
            Op::CtxSetCurrent | Op::CtxPushCurrent | Op::CtxPopCurrent => {
                self.select_context(ev, op)
            }
            Op::MemAlloc => self.alloc(ev, Extent::Bytes),
            Op::MemAllocAsync => {
                let s: hrr_calls::shapes::MemAllocAsync = ev.read()?;
                self.alloc_ordered(ev, (s.dptr, s.stream), per_thread)
            }
            Op::MemAllocFromPoolAsync => {
                let s: hrr_calls::shapes::MemAllocFromPool = ev.read()?;
                self.alloc_ordered(ev, (s.dptr, s.stream), per_thread)
            }
            Op::MemAllocPitch => self.alloc(ev, Extent::Pitched),
            Op::MemAllocManaged => self.alloc_managed(ev),
            Op::MemFree => self.free(ev),
            Op::MemFreeAsync
                if self
                    .graph_mem
                    .contains(&ev.read::<hrr_calls::shapes::MemFreeAsync>()?.dptr) =>
            {
                Ok(Outcome::Done) // graph memory stays
            }
            Op::MemFreeAsync => {
                let (handles, api, captures) = (&self.handles, &self.api, self.captures);
                memory_calls::free_async(&mut self.mem, api, api, &mut self.deferred, ev, |s| {
                    let st = stream_of(handles, per_thread, s)?;
                    Ok((st, captures > 0 && api.is_capturing(st)))
                })
            }
            Op::MemHostAlloc => self.host_alloc(ev, true),
            Op::MemAllocHost => self.host_alloc(ev, false),
            Op::MemHostRegister => self.host_register(ev, blobs),
            Op::MemFreeHost | Op::MemHostUnregister => self.host_release(ev),
            Op::MemHostGetDevicePointer => self.host_device_pointer(ev),
            Op::HostMemWrite => self.host_write(ev, blobs),
            Op::HostMemCheck => self.host_check(ev),
            Op::FreeCheck => self.free_check(ev),
            Op::MemPoolCreate => self.pool_create(ev),
            Op::MemPoolDestroy => self.pool_destroy(ev),
            Op::MemPoolSetAttribute => self.pool_set_attribute(ev),
            Op::MemPoolTrimTo => self.pool_trim(ev),
            Op::MemPoolSetAccess => self.pool_set_access(ev),
            Op::DeviceGetDefaultMemPool => self.device_pool(ev, true),
            Op::DeviceGetMemPool => self.device_pool(ev, false),
            Op::DeviceSetMemPool => self.device_set_pool(ev),
            Op::MemAddressReserve => {
                memory_calls::address_reserve(&mut self.mem, &self.api, ev, |_| 0)
            }
            Op::MemcpyPeer => self.copy_peer(ev, false),
            Op::MemcpyPeerAsync => self.copy_peer(ev, true),
            Op::CtxEnablePeerAccess => self.peer_access(ev, true),
            Op::IpcGetMemHandle => self.ipc_get_mem_handle(ev),
            Op::IpcOpenMemHandle => self.ipc_open_mem_handle(ev),
            Op::IpcCloseMemHandle => self.ipc_close_mem_handle(ev),
            Op::IpcGetEventHandle => self.ipc_get_event_handle(ev),
            Op::IpcOpenEventHandle => self.ipc_open_event_handle(ev),
            Op::MemExportToShareableHandle => self.mem_export_shareable(ev),
            Op::MemImportFromShareableHandle => self.mem_import_shareable(ev),
            Op::CtxDisablePeerAccess => self.peer_access(ev, false),
            Op::Memcpy => self.copy_any(ev, blobs, false),
            Op::MemcpyAsync => self.copy_any(ev, blobs, true),
            Op::Memcpy2D
            | Op::Memcpy2DUnaligned
            | Op::Memcpy2DAsync
            | Op::Memcpy3D
            | Op::Memcpy3DAsync
            | Op::MemcpyHtoA
            | Op::MemcpyHtoAAsync
            | Op::MemcpyAtoH
            | Op::MemcpyAtoHAsync
            | Op::MemcpyAtoD
            | Op::MemcpyDtoA
            | Op::MemcpyAtoA => self.copy_pitched(ev, blobs, op),
            Op::ArrayCreate | Op::Array3DCreate | Op::MipmappedArrayCreate => {
                self.array_create(ev, op)
            }
            Op::MipmappedArrayGetLevel => self.mipmap_level(ev),
            Op::ArrayDestroy | Op::MipmappedArrayDestroy => self.array_destroy(ev, op),
            Op::TexObjectCreate | Op::SurfObjectCreate => self.object_create(ev, op),
            Op::TexObjectDestroy | Op::SurfObjectDestroy => self.object_destroy(ev, op),
            Op::TensorMapEncodeTiled | Op::TensorMapEncodeIm2col => self.tensor_map_encode(ev),
            Op::TensorMapReplaceAddress => self.tensor_map_replace(ev),
            Op::MemsetD8
            | Op::MemsetD16
            | Op::MemsetD32
            | Op::MemsetD8Async
            | Op::MemsetD16Async
            | Op::MemsetD32Async => memory_calls::memset(&self.mem, &self.api, ev, |s| {
                stream_of(&self.handles, per_thread, s)
            }),
            Op::MemsetD2D8
            | Op::MemsetD2D16
            | Op::MemsetD2D32
            | Op::MemsetD2D8Async
            | Op::MemsetD2D16Async
            | Op::MemsetD2D32Async => self.memset_2d(ev),
            Op::ModuleLoad
            | Op::ModuleLoadData
            | Op::ModuleLoadDataEx
            | Op::ModuleLoadFatBinary => self.bind_loaded(ev, false),
            Op::LibraryLoadData | Op::LibraryLoadFromFile => self.bind_loaded(ev, true),
            Op::ModuleUnload => self.unbind(ev.read::<hrr_calls::shapes::Module>()?.module),
            Op::LibraryUnload => self.unbind(ev.read::<hrr_calls::shapes::Library>()?.library),
            Op::ModuleGetFunction => self.module_get_function(ev),
            Op::LibraryGetKernel => self.library_get_kernel(ev),
            Op::LibraryGetModule => self.library_get_module(ev),
            Op::KernelGetFunction => self.kernel_get_function(ev),
            Op::FuncGetModule => self.func_get_module(ev),
            Op::ModuleEnumerateFunctions => self.enumerated(ev, false),
            Op::LibraryEnumerateKernels => self.enumerated(ev, true),
            Op::ModuleGetGlobal => self.get_global(ev, false),
            Op::LibraryGetGlobal => self.get_global(ev, true),
            Op::FuncSetAttribute => self.func_set_attribute(ev),
            Op::KernelSetAttribute => self.kernel_set_attribute(ev),
            Op::FuncSetCacheConfig => self.func_set_cache_config(ev),
            Op::StreamAddCallback => Ok(Outcome::Skipped(
                crate::replay::backend::shared::HOST_FUNC.into(),
            )),
            Op::StreamDestroy => {
                self.settle_pending_on(ev)?;
                stream_calls::stream_destroy(&mut self.handles, &self.api, ev)
            }
            Op::CtxSetLimit => self.ctx_set_limit(ev),
            Op::CtxSetCacheConfig => self.ctx_set_cache_config(ev),
            Op::LaunchKernel | Op::LaunchCooperativeKernel => self.launch(ev, filter, false),
            Op::LaunchKernelEx => self.launch(ev, filter, true),
            Op::StreamCreate => {
                stream_calls::stream_create(&mut self.handles, &self.api, ev, false)
            }
            Op::StreamSynchronize => {
                let handles = &self.handles;
                stream_calls::stream_synchronize(&mut self.waiter, &self.api, ev, |s| {
                    stream_of(handles, per_thread, s)
                })
            }
            // `cuCtxSynchronize` and `cuCtxSynchronize_v2` (of a named context) alike.
            Op::CtxSynchronize | Op::CtxSynchronizeCtx => self.ctx_synchronize(),
            Op::StreamWaitEvent | Op::EventRecord | Op::EventRecordWithFlags => {
                let wait = op == Op::StreamWaitEvent;
                stream_calls::event_on_stream(&self.handles, &self.api, ev, wait, |s| {
                    stream_of(&self.handles, per_thread, s)
                })
            }
            Op::StreamWriteValue32
            | Op::StreamWriteValue64
            | Op::StreamWaitValue32
            | Op::StreamWaitValue64 => self.stream_value(ev, op),
            Op::EventCreate => stream_calls::event_create(&mut self.handles, &self.api, ev),
            Op::StreamBeginCapture => self.begin_capture(ev),
            Op::StreamBeginCaptureToGraph => self.begin_capture_to_graph(ev),
            // its bytes went into its copy's event when it was decoded (engine::decode_ahead)
            Op::MemcpySource => Ok(Outcome::Done),
            Op::StreamGetCaptureInfo | Op::StreamGetCaptureInfoV2 => self.capture_info(ev),
            Op::StreamUpdateCaptureDependencies | Op::StreamUpdateCaptureDependenciesV2 => {
                self.update_capture_dependencies(ev)
            }
            Op::StreamEndCapture => self.end_capture(ev),
            Op::GraphInstantiate
            | Op::GraphInstantiateWithFlags
            | Op::GraphInstantiateWithParams => self.graph_instantiate(ev),
            Op::GraphLaunch => self.graph_launch(ev),
            Op::GraphDestroy => self.graph_destroy(ev),
            Op::GraphExecDestroy => self.graph_exec_destroy(ev),
            Op::GraphCreate => self.graph_create(ev),
            Op::GraphAddKernelNode
            | Op::GraphAddMemcpyNode
            | Op::GraphAddMemsetNode
            | Op::GraphAddHostNode
            | Op::GraphAddEmptyNode
            | Op::GraphAddEventRecordNode
            | Op::GraphAddEventWaitNode
            | Op::GraphAddChildGraphNode
            | Op::GraphAddNode
            | Op::GraphAddNodeV2
            | Op::GraphAddMemAllocNode
            | Op::GraphAddMemFreeNode => self.graph_node(ev, NodeCall::Add, filter),
            Op::GraphKernelNodeSetParams
            | Op::GraphMemcpyNodeSetParams
            | Op::GraphMemsetNodeSetParams
            | Op::GraphHostNodeSetParams => self.graph_node(ev, NodeCall::Set, filter),
            Op::GraphExecKernelNodeSetParams
            | Op::GraphExecMemcpyNodeSetParams
            | Op::GraphExecMemsetNodeSetParams
            | Op::GraphExecHostNodeSetParams
            | Op::GraphExecChildGraphNodeSetParams => {
                self.graph_node(ev, NodeCall::ExecSet, filter)
            }
            Op::GraphAddDependencies | Op::GraphAddDependenciesV2 => {
                self.graph_add_dependencies(ev)
            }
            Op::GraphExecUpdate => self.graph_exec_update(ev),
            Op::GraphUpload => self.graph_upload(ev),
            Op::GraphClone => self.graph_clone(ev),
            Op::GraphDestroyNode => self.graph_destroy_node(ev),
            Op::GraphConditionalHandleCreate => self.conditional_handle(ev),
            Op::GraphHostSource => self.graph_host_source(ev, blobs),
            Op::GraphHostResult => self.graph_host_result(ev),
            // The calls both backends replay alike (VMM, 1D copies, some stream and event
            // calls); of the rest, queries, context selection, unloads (code stays loaded,
            // shared by code object), host memory registration and graph construction change no
            // device state replay depends on.
            _ => shared_calls!(self, op, ev, blobs),
        }
    }

    fn detached_wait(&mut self, ev: &Event) -> Option<Result<super::DetachedWait>> {
        if self.opened.len() > 1 {
            if let Err(e) = self.follow_context(ev) {
                return Some(Err(e));
            }
        }
        self.detached(ev)
    }

    fn finish(&mut self) -> Result<()> {
        // Under the watchdog, first wait for the legacy default stream (which waits for every
        // blocking stream) the way the watchdog can give up on; then for the whole context.
        if self.waiter.after_launch() {
            self.wait(std::ptr::null_mut(), "the final synchronisation")?;
        }
        self.synchronize_all()?;
        self.drop_batches()?;
        self.free_ring()?;
        self.unpin_sources()?;
        self.timer.resolve(&self.api)?;
        self.deferred.release_all(&mut self.mem, &self.api)
    }

    fn timings(&self) -> Vec<crate::replay::timing::KernelTiming> {
        self.timer.sums().by_total()
    }

    fn perturbation(&self) -> Option<String> {
        Some(match self.noise.as_ref()? {
            Ok(n) => format!("{} noise kernel launches", n.launched),
            Err(why) => format!("none: the noise kernel could not be loaded: {why}"),
        })
    }

    fn memory(&self) -> &Placement {
        &self.mem
    }

    fn read_device(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.read_recorded(addr, len)
    }

    fn replace_kernel(&mut self, name: &str, image: &[u8]) -> Result<Option<Vec<(u64, u64)>>> {
        self.load_replacement(name, image)
    }

    fn replaced_launches(&self) -> Vec<(String, u64)> {
        let mut v: Vec<_> = self
            .replaced
            .iter()
            .map(|(k, &(_, n))| (k.clone(), n))
            .collect();
        v.sort();
        v
    }
}
