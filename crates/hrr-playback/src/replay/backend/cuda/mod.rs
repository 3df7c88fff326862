//! The CUDA backend: replays `cuda-driver` events against the real driver (or `--runtime`).
//! [`classify`] and the dispatch in [`Cuda`]'s `replay` are the only places that match call
//! names; each arm calls a handler in the file of its concern:
//!
//! | file | owns |
//! | --- | --- |
//! | `driver.rs` | the entry-point table loaded with libloading, the `cu!` macro |
//! | `open.rs` | loading the driver, device 0 and its primary context, preflight checks |
//! | `memory.rs` | allocations, host memory, the program's VMM calls, the `Vmm` trait for placement |
//! | `copies.rs` | memcpy and memset |
//! | `code.rs` | code objects: loading, module/library/kernel/function look-ups, globals, attributes |
//! | `launch.rs` | kernel launches |
//! | `streams.rs` | streams, events, waiting (watchdog), stream-capture state |
//! | `graphs.rs` | graphs rebuilt from recorded stream captures |
//!
//! Handles (contexts, streams, events, modules, libraries, functions, kernels, VMM handles) are
//! remapped; code objects are loaded once, before the first call, and kernels are bound through
//! the recorded look-ups of that code object, so two kernels of one name in different code
//! objects stay apart.

mod code;
mod copies;
mod driver;
mod graphs;
mod launch;
mod memory;
mod open;
mod streams;

use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::Result;
use hrr_archive::ObjectId;

use super::shared::{Handles, Waiter, HOST_FUNC};
use super::{
    memory_calls, stream_calls, Backend, Blobs, CodeObject, Event, Extent, Outcome, Prescan,
};
use crate::replay::options::Options;
use crate::replay::placement::{Placement, Tally};
use driver::{Api, H};

/// What the prescan must know of CUDA call `name`.
pub fn classify(name: &str) -> Option<Prescan> {
    match name {
        "cuMemAlloc" | "cuMemAllocAsync" | "cuMemAllocFromPoolAsync" => {
            Some(Prescan::Alloc(Extent::Bytes))
        }
        "cuMemAllocPitch" => Some(Prescan::Alloc(Extent::Pitched)),
        "cuMemAddressReserve" => Some(Prescan::Alloc(Extent::Reservation)),
        n if n.starts_with("cuLibraryLoad") => Some(Prescan::CodeLoad { as_library: true }),
        n if n.starts_with("cuModuleLoad") => Some(Prescan::CodeLoad { as_library: false }),
        _ => None,
    }
}

/// Replays CUDA driver events.
pub struct Cuda {
    api: Api,
    dev: c_int,
    device_name: String,
    cc: (i32, i32),
    mem: Placement,
    module_of_code: HashMap<ObjectId, H>,
    library_of_code: HashMap<ObjectId, H>,
    handles: Handles,
    /// Graphs rebuilt from recorded stream captures, by recorded handle (kept apart from
    /// `handles` so an explicitly built graph never matches a stale handle of another kind).
    graphs: HashMap<u64, H>,
    /// Their instantiations, by recorded handle.
    execs: HashMap<u64, H>,
    waiter: Waiter,
    /// Host buffers read or written by copies captured into graphs: the graph reads (or
    /// writes) them at every launch, so they live until replay ends.
    graph_host: Vec<Vec<u8>>,
}

impl Backend for Cuda {
    fn device(&self) -> String {
        format!("{} (sm_{}{})", self.device_name, self.cc.0, self.cc.1)
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
        }
        Ok(())
    }

    fn replay(&mut self, ev: &Event, blobs: &Blobs, opts: &Options) -> Result<Outcome> {
        let filter = opts.kernel_filter.as_deref();
        match ev.name {
            "cuDevicePrimaryCtxRetain" | "cuCtxCreate" => self.retain_context(ev),
            "cuMemAlloc" | "cuMemAllocAsync" | "cuMemAllocFromPoolAsync" => {
                memory_calls::alloc(&mut self.mem, &self.api, ev, Extent::Bytes)
            }
            "cuMemAllocPitch" => memory_calls::alloc(&mut self.mem, &self.api, ev, Extent::Pitched),
            "cuMemAllocManaged" => memory_calls::alloc_managed(&mut self.mem, &self.api, ev),
            "cuMemFree" | "cuMemFreeAsync" => memory_calls::free(&mut self.mem, &self.api, ev),
            "cuMemHostAlloc" | "cuMemAllocHost" => {
                memory_calls::alloc_host(&mut self.mem, &self.api, ev)
            }
            "cuMemAddressReserve" => {
                memory_calls::address_reserve(&mut self.mem, &self.api, ev, |_| 0)
            }
            "cuMemAddressFree" => memory_calls::address_free(&mut self.mem, &self.api, ev),
            "cuMemCreate" => self.vmm_create(ev),
            "cuMemRelease" => memory_calls::release(&mut self.mem, &self.api, ev),
            "cuMemMap" => memory_calls::map(&mut self.mem, &self.api, ev),
            "cuMemUnmap" => memory_calls::unmap(&mut self.mem, &self.api, ev),
            "cuMemSetAccess" => memory_calls::set_access(&mut self.mem, &self.api, ev),
            "cuMemcpyHtoD" | "cuMemcpyHtoDAsync" => self.copy_h2d(ev, blobs),
            "cuMemcpyDtoH" | "cuMemcpyDtoHAsync" => self.copy_d2h(ev),
            "cuMemcpyDtoD" | "cuMemcpyDtoDAsync" => self.copy_d2d(ev),
            "cuMemcpy" | "cuMemcpyAsync" => self.copy_any(ev, blobs),
            "cuMemsetD8" | "cuMemsetD16" | "cuMemsetD32" | "cuMemsetD8Async"
            | "cuMemsetD16Async" | "cuMemsetD32Async" => {
                memory_calls::memset(&self.mem, &self.api, ev, || self.stream(ev))
            }
            "cuModuleLoad"
            | "cuModuleLoadData"
            | "cuModuleLoadDataEx"
            | "cuModuleLoadFatBinary" => self.bind_loaded(ev, false),
            "cuLibraryLoadData" | "cuLibraryLoadFromFile" => self.bind_loaded(ev, true),
            "cuModuleGetFunction" => self.module_get_function(ev),
            "cuLibraryGetKernel" => self.library_get_kernel(ev),
            "cuLibraryGetModule" => self.library_get_module(ev),
            "cuKernelGetFunction" => self.kernel_get_function(ev),
            "cuModuleGetGlobal" => self.get_global(ev, false),
            "cuLibraryGetGlobal" => self.get_global(ev, true),
            "cuFuncSetAttribute" => self.func_set_attribute(ev),
            "cuKernelSetAttribute" => self.kernel_set_attribute(ev),
            "cuFuncSetCacheConfig" => self.func_set_cache_config(ev),
            "cuLaunchKernel" | "cuLaunchCooperativeKernel" => self.launch(ev, filter, false),
            "cuLaunchKernelEx" => self.launch(ev, filter, true),
            "cuStreamCreate" | "cuStreamCreateWithPriority" => {
                stream_calls::stream_create(&mut self.handles, &self.api, ev)
            }
            "cuStreamDestroy" => stream_calls::stream_destroy(&mut self.handles, &self.api, ev),
            "cuStreamSynchronize" => {
                let s = self.stream(ev)?;
                stream_calls::stream_synchronize(&mut self.waiter, &self.api, ev, s)
            }
            "cuCtxSynchronize" => self.ctx_synchronize(),
            "cuStreamWaitEvent" => {
                let s = self.stream(ev)?;
                stream_calls::stream_wait_event(&self.handles, &self.api, ev, s)
            }
            "cuEventCreate" => stream_calls::event_create(&mut self.handles, &self.api, ev),
            "cuEventRecord" | "cuEventRecordWithFlags" => {
                stream_calls::event_record(&self.handles, &self.api, ev, || self.stream(ev))
            }
            "cuEventSynchronize" => stream_calls::event_synchronize(&self.handles, &self.api, ev),
            "cuEventDestroy" => stream_calls::event_destroy(&mut self.handles, &self.api, ev),
            "cuStreamBeginCapture" => self.begin_capture(ev),
            "cuStreamEndCapture" => self.end_capture(ev),
            "cuGraphInstantiate"
            | "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams" => self.graph_instantiate(ev),
            "cuGraphLaunch" => self.graph_launch(ev),
            "cuGraphDestroy" => self.graph_destroy(ev),
            "cuGraphExecDestroy" => self.graph_exec_destroy(ev),
            "cuLaunchHostFunc" => Ok(Outcome::Skipped(HOST_FUNC.into())),
            // Queries, context selection, unloads (code stays loaded, shared by code object),
            // registrations and graph construction change no device state replay depends on.
            _ => Ok(Outcome::Ignored),
        }
    }

    fn finish(&mut self) -> Result<()> {
        // Under the watchdog, first wait for the legacy default stream (which waits for every
        // blocking stream) the way the watchdog can give up on; then for the whole context.
        if self.waiter.after_launch() {
            self.wait(std::ptr::null_mut(), "the final synchronisation")?;
        }
        self.ctx_synchronize().map(|_| ())
    }

    fn placement(&self) -> Tally {
        self.mem.tally()
    }
}
