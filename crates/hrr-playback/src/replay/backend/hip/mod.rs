//! The HIP backend: replays `hip` events against the HIP runtime loaded at run time (ROCm 5, 6
//! or 7 names, or `--runtime PATH`). The dispatch in [`Hip`]'s `replay` is the only place that
//! tells calls apart: it matches the table operation (`hrr_calls::hip::Op`, resolved once per
//! record type) of each event, falling back to the arms both backends share
//! (`shared::shared_calls!`); each arm calls a handler in the file of its concern, which reads
//! the event into the row's record shape (`hrr_calls::shapes`):
//!
//! | file | owns |
//! | --- | --- |
//! | `runtime.rs` | the entry-point table loaded with libloading, the `hip!` macro |
//! | `open.rs` | loading the runtime, device 0, VMM probing, preflight notes |
//! | `memory.rs` | allocations, host memory, the program's VMM calls, the `Vmm` and `DeviceMemory` (memset) implementations |
//! | `copies.rs` | memcpy, copies to and from symbols |
//! | `code.rs` | code objects: loading, module/function look-ups, globals and symbols |
//! | `launch.rs` | kernel launches (`<<<>>>` and module launches) |
//! | `streams.rs` | streams, events, waiting (watchdog) |
//! | `graphs.rs` | stream capture begun and ended again, graphs instantiated, launched, destroyed |
//!
//! Handles (streams, events, modules, functions, VMM handles) are remapped; code objects (fat
//! binaries registered by hipcc programs, module images) are loaded once with
//! `hipModuleLoadData` before the first call, and kernels bind by (code object, name):
//! `<<<>>>` launches through `hipModuleGetFunction` on their fat binary, module launches
//! through the recorded look-ups. Arguments are passed as the recorded buffer (`extra`).

mod code;
mod copies;
mod graphs;
mod launch;
mod memory;
mod open;
mod runtime;
mod streams;

use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::Result;
use hrr_archive::ObjectId;

use hrr_calls::hip::Op;

use super::shared::{shared_calls, Handles, Waiter};
use super::{memory_calls, stream_calls, Backend, Blobs, CodeObject, Event, Extent, Ops, Outcome};
use crate::replay::options::Options;
use crate::replay::placement::Placement;
use runtime::{HipApi, H};

/// Replays HIP runtime events.
pub struct Hip {
    api: HipApi,
    dev: c_int,
    device_name: String,
    arch: String,
    runtime_version: i32,
    mem: Placement,
    /// Code object → module and its image (kept alive for the runtime).
    module_of_code: HashMap<ObjectId, (H, Vec<u8>)>,
    /// (code object, kernel name) → function, for `<<<>>>` launches.
    functions: HashMap<(ObjectId, String), H>,
    handles: Handles,
    waiter: Waiter,
    /// `--timing`: GPU time of each launch.
    timer: crate::replay::backend::timer::Timer,
    /// Async D2H copies whose result comes in a later `hrrHipMemcpyResult` event: the bytes
    /// copied now, by the copy's sequence number.
    pending_d2h: HashMap<u64, Vec<u8>>,
    /// Table operations of the archive's record types.
    ops: Ops<Op>,
    /// Stream-ordered frees not released yet.
    deferred: memory_calls::Deferred,
    /// Graphs made by stream capture and their instantiations.
    graphs: graphs::Graphs,
}

/// The call a per-thread default stream form (`*_spt`, `-fgpu-default-stream=per-thread`)
/// stands for: it replays as that call (its null stream, the thread's own, as the null stream).
fn plain(op: Op) -> Op {
    match op {
        Op::MemcpySpt => Op::Memcpy,
        Op::MemcpyToSymbolSpt => Op::MemcpyToSymbol,
        Op::MemcpyFromSymbolSpt => Op::MemcpyFromSymbol,
        Op::Memcpy2DSpt => Op::Memcpy2D,
        Op::MemsetSpt => Op::Memset,
        Op::MemcpyAsyncSpt => Op::MemcpyAsync,
        Op::MemsetAsyncSpt => Op::MemsetAsync,
        Op::Memcpy2DAsyncSpt => Op::Memcpy2DAsync,
        Op::MemcpyFromSymbolAsyncSpt => Op::MemcpyFromSymbolAsync,
        Op::MemcpyToSymbolAsyncSpt => Op::MemcpyToSymbolAsync,
        Op::StreamQuerySpt => Op::StreamQuery,
        Op::StreamSynchronizeSpt => Op::StreamSynchronize,
        Op::StreamWaitEventSpt => Op::StreamWaitEvent,
        Op::EventRecordSpt => Op::EventRecord,
        Op::LaunchCooperativeKernelSpt => Op::LaunchCooperativeKernel,
        Op::LaunchKernelSpt => Op::LaunchKernel,
        Op::GraphLaunchSpt => Op::GraphLaunch,
        Op::StreamBeginCaptureSpt => Op::StreamBeginCapture,
        Op::StreamEndCaptureSpt => Op::StreamEndCapture,
        Op::LaunchHostFuncSpt => Op::LaunchHostFunc,
        other => other,
    }
}

impl Hip {
    /// An allocation, after the deferred frees of its range were released.
    fn alloc(&mut self, ev: &Event, extent: Extent) -> Result<Outcome> {
        let api = &self.api;
        memory_calls::alloc_after_frees(&mut self.mem, api, api, &mut self.deferred, ev, extent)
    }
}

impl Backend for Hip {
    fn device(&self) -> String {
        if self.arch.is_empty() {
            self.device_name.clone()
        } else {
            format!("{} ({})", self.device_name, self.arch)
        }
    }

    fn enter_thread(&mut self) -> Result<()> {
        Ok(runtime::hip!(self.api, hipSetDevice(self.dev))?)
    }

    fn runtime(&self) -> String {
        self.api.path.clone()
    }

    fn preflight(&self, meta: Option<&serde_json::Value>) -> Result<()> {
        self.check_archive(meta);
        Ok(())
    }

    fn preload(&mut self, code: &[CodeObject]) -> Result<()> {
        for c in code {
            self.load_code(c)?;
        }
        Ok(())
    }

    fn replay(&mut self, ev: &Event, blobs: &Blobs, opts: &Options) -> Result<Outcome> {
        let Some(op) = self.ops.of(ev).map(plain) else {
            return Ok(Outcome::Ignored); // not a call of the table
        };
        let filter = opts.kernel_filter.as_deref();
        match op {
            Op::Malloc | Op::ExtMallocWithFlags | Op::MallocAsync | Op::MallocFromPoolAsync => {
                self.alloc(ev, Extent::Bytes)
            }
            Op::MallocPitch => self.alloc(ev, Extent::Pitched),
            Op::MallocManaged => memory_calls::alloc_managed(&mut self.mem, &self.api, ev),
            Op::Free => memory_calls::free(&mut self.mem, &self.api, ev),
            Op::FreeAsync => {
                let (handles, api, graphs) = (&self.handles, &self.api, &self.graphs);
                memory_calls::free_async(&mut self.mem, api, api, &mut self.deferred, ev, |s| {
                    let st = handles.get(s)?;
                    Ok((st, graphs.capturing(st)))
                })
            }
            Op::HostMalloc => memory_calls::alloc_host(&mut self.mem, &self.api, ev, true),
            Op::HostRegister => self.host_register(ev, blobs),
            Op::HostFree | Op::HostUnregister => self.host_free(ev),
            Op::MemAddressReserve => {
                let anywhere = opts.no_placement;
                memory_calls::address_reserve(&mut self.mem, &self.api, ev, |recorded| {
                    if anywhere {
                        0
                    } else {
                        recorded
                    }
                })
            }
            Op::Memcpy | Op::MemcpyWithStream => self.copy_any(ev, blobs, false),
            Op::MemcpyAsync => self.copy_any(ev, blobs, true),
            Op::Memset
            | Op::MemsetAsync
            | Op::MemsetD8
            | Op::MemsetD8Async
            | Op::MemsetD16
            | Op::MemsetD16Async
            | Op::MemsetD32
            | Op::MemsetD32Async => {
                memory_calls::memset(&self.mem, &self.api, ev, |s| self.handles.get(s))
            }
            Op::Memset2D | Op::Memset2DAsync => self.memset_2d(ev),
            Op::MemcpyToSymbol | Op::MemcpyToSymbolAsync => self.copy_to_symbol(ev, blobs),
            Op::Memcpy2D | Op::Memcpy2DAsync | Op::Memcpy3D | Op::Memcpy3DAsync => {
                self.copy_pitched(ev, blobs)
            }
            Op::MemcpyFromSymbol | Op::MemcpyFromSymbolAsync => self.copy_from_symbol(ev),
            Op::GetSymbolAddress => self.get_symbol_address(ev),
            Op::ModuleGetGlobal => self.module_get_global(ev),
            Op::ModuleLoad | Op::ModuleLoadData | Op::ModuleLoadDataEx => self.bind_loaded(ev),
            Op::ModuleGetFunction => self.module_get_function(ev),
            Op::LaunchKernel | Op::LaunchCooperativeKernel | Op::ExtLaunchKernel => {
                self.launch(ev, filter, false)
            }
            Op::ModuleLaunchKernel | Op::ExtModuleLaunchKernel | Op::HccModuleLaunchKernel => {
                self.launch(ev, filter, true)
            }
            Op::StreamCreate | Op::StreamCreateWithFlags => {
                stream_calls::stream_create(&mut self.handles, &self.api, ev, false)
            }
            Op::StreamSynchronize => {
                let handles = &self.handles;
                stream_calls::stream_synchronize(&mut self.waiter, &self.api, ev, |s| {
                    handles.get(s)
                })
            }
            Op::DeviceSynchronize => self.device_synchronize(),
            Op::StreamWaitEvent | Op::EventRecord => {
                let wait = op == Op::StreamWaitEvent;
                stream_calls::event_on_stream(&self.handles, &self.api, ev, wait, |s| {
                    self.handles.get(s)
                })
            }
            Op::EventCreate | Op::EventCreateWithFlags => {
                stream_calls::event_create(&mut self.handles, &self.api, ev)
            }
            Op::StreamBeginCapture => self.begin_capture(ev),
            Op::StreamEndCapture => self.end_capture(ev),
            Op::GraphInstantiate | Op::GraphInstantiateWithFlags => self.graph_instantiate(ev),
            Op::GraphLaunch => self.graph_launch(ev),
            Op::GraphDestroy => self.graph_destroy(ev, false),
            Op::GraphExecDestroy => self.graph_destroy(ev, true),
            // The calls both backends replay alike (VMM, 1D copies, some stream and event
            // calls); of the rest, queries, device selection (device 0 is used), registrations
            // (launches name their code object), unloads (code stays loaded, shared by code
            // object) and stream capture bookkeeping change no device state replay depends on.
            _ => shared_calls!(self, op, ev, blobs),
        }
    }

    fn finish(&mut self) -> Result<()> {
        self.device_synchronize()?;
        self.timer.resolve(&self.api)?;
        self.deferred.release_all(&mut self.mem, &self.api)
    }

    fn timings(&self) -> Vec<crate::replay::timing::KernelTiming> {
        self.timer.sums().by_total()
    }

    fn memory(&self) -> &Placement {
        &self.mem
    }

    fn read_device(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        self.read_recorded(addr, len)
    }
}
