//! The HIP backend: replays `hip` events against the HIP runtime loaded at run time (ROCm 5, 6
//! or 7 names, or `--runtime PATH`). [`classify`] and the dispatch in [`Hip`]'s `replay` are the
//! only places that match call names; each arm calls a handler in the file of its concern:
//!
//! | file | owns |
//! | --- | --- |
//! | `runtime.rs` | the entry-point table loaded with libloading, the `hip!` macro |
//! | `open.rs` | loading the runtime, device 0, VMM probing, preflight notes |
//! | `memory.rs` | allocations, host memory, the program's VMM calls, the `Vmm` trait for placement |
//! | `copies.rs` | memcpy, memset, copies to and from symbols |
//! | `code.rs` | code objects: loading, module/function look-ups, globals and symbols |
//! | `launch.rs` | kernel launches (`<<<>>>` and module launches) |
//! | `streams.rs` | streams, events, waiting (watchdog) |
//!
//! Handles (streams, events, modules, functions, VMM handles) are remapped; code objects (fat
//! binaries registered by hipcc programs, module images) are loaded once with
//! `hipModuleLoadData` before the first call, and kernels bind by (code object, name):
//! `<<<>>>` launches through `hipModuleGetFunction` on their fat binary, module launches
//! through the recorded look-ups. Arguments are passed as the recorded buffer (`extra`).

mod code;
mod copies;
mod launch;
mod memory;
mod open;
mod runtime;
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
use runtime::{HipApi, H};

/// What the prescan must know of HIP call `name`.
pub fn classify(name: &str) -> Option<Prescan> {
    match name {
        "hipMalloc" | "hipExtMallocWithFlags" | "hipMallocAsync" => {
            Some(Prescan::Alloc(Extent::Bytes))
        }
        "hipMallocPitch" => Some(Prescan::Alloc(Extent::Pitched)),
        "hipMemAddressReserve" => Some(Prescan::Alloc(Extent::Reservation)),
        "__hipRegisterFatBinary" => Some(Prescan::CodeLoad { as_library: false }),
        n if n.starts_with("hipModuleLoad") => Some(Prescan::CodeLoad { as_library: false }),
        _ => None,
    }
}

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
}

impl Backend for Hip {
    fn device(&self) -> String {
        if self.arch.is_empty() {
            self.device_name.clone()
        } else {
            format!("{} ({})", self.device_name, self.arch)
        }
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
        let filter = opts.kernel_filter.as_deref();
        match ev.name {
            "hipMalloc" | "hipExtMallocWithFlags" | "hipMallocAsync" => {
                memory_calls::alloc(&mut self.mem, &self.api, ev, Extent::Bytes)
            }
            "hipMallocPitch" => memory_calls::alloc(&mut self.mem, &self.api, ev, Extent::Pitched),
            "hipMallocManaged" => memory_calls::alloc_managed(&mut self.mem, &self.api, ev),
            "hipFree" | "hipFreeAsync" => memory_calls::free(&mut self.mem, &self.api, ev),
            "hipHostMalloc" => memory_calls::alloc_host(&mut self.mem, &self.api, ev),
            "hipHostRegister" => self.host_register(ev, blobs),
            "hipHostFree" | "hipHostUnregister" => self.host_free(ev),
            "hipMemAddressReserve" => {
                let anywhere = opts.no_placement;
                memory_calls::address_reserve(&mut self.mem, &self.api, ev, |recorded| {
                    if anywhere {
                        0
                    } else {
                        recorded
                    }
                })
            }
            "hipMemAddressFree" => memory_calls::address_free(&mut self.mem, &self.api, ev),
            "hipMemCreate" => self.vmm_create(ev),
            "hipMemRelease" => memory_calls::release(&mut self.mem, &self.api, ev),
            "hipMemMap" => memory_calls::map(&mut self.mem, &self.api, ev),
            "hipMemUnmap" => memory_calls::unmap(&mut self.mem, &self.api, ev),
            "hipMemSetAccess" => memory_calls::set_access(&mut self.mem, &self.api, ev),
            "hipMemcpyHtoD" | "hipMemcpyHtoDAsync" => self.copy_h2d(ev, blobs),
            "hipMemcpyDtoH" | "hipMemcpyDtoHAsync" => self.copy_d2h(ev),
            "hipMemcpyDtoD" | "hipMemcpyDtoDAsync" => self.copy_d2d(ev),
            "hipMemcpy" | "hipMemcpyAsync" | "hipMemcpyWithStream" => self.copy_any(ev, blobs),
            "hipMemset" | "hipMemsetAsync" | "hipMemsetD8" | "hipMemsetD8Async"
            | "hipMemsetD16" | "hipMemsetD16Async" | "hipMemsetD32" | "hipMemsetD32Async" => {
                memory_calls::memset(&self.mem, &self.api, ev, || self.stream(ev))
            }
            "hipMemcpyToSymbol" | "hipMemcpyToSymbolAsync" => self.copy_to_symbol(ev, blobs),
            "hipMemcpyFromSymbol" | "hipMemcpyFromSymbolAsync" => self.copy_from_symbol(ev),
            "hipGetSymbolAddress" => self.get_symbol_address(ev),
            "hipModuleGetGlobal" => self.module_get_global(ev),
            "hipModuleLoad" | "hipModuleLoadData" | "hipModuleLoadDataEx" => self.bind_loaded(ev),
            "hipModuleGetFunction" => self.module_get_function(ev),
            "hipLaunchKernel" | "hipLaunchCooperativeKernel" | "hipExtLaunchKernel" => {
                self.launch(ev, filter, false)
            }
            "hipModuleLaunchKernel" => self.launch(ev, filter, true),
            "hipStreamCreate" | "hipStreamCreateWithFlags" | "hipStreamCreateWithPriority" => {
                stream_calls::stream_create(&mut self.handles, &self.api, ev)
            }
            "hipStreamDestroy" => stream_calls::stream_destroy(&mut self.handles, &self.api, ev),
            "hipStreamSynchronize" => {
                let s = self.stream(ev)?;
                stream_calls::stream_synchronize(&mut self.waiter, &self.api, ev, s)
            }
            "hipDeviceSynchronize" => self.device_synchronize(),
            "hipStreamWaitEvent" => {
                let s = self.stream(ev)?;
                stream_calls::stream_wait_event(&self.handles, &self.api, ev, s)
            }
            "hipEventCreate" | "hipEventCreateWithFlags" => {
                stream_calls::event_create(&mut self.handles, &self.api, ev)
            }
            "hipEventRecord" => {
                stream_calls::event_record(&self.handles, &self.api, ev, || self.stream(ev))
            }
            "hipEventSynchronize" => stream_calls::event_synchronize(&self.handles, &self.api, ev),
            "hipEventDestroy" => stream_calls::event_destroy(&mut self.handles, &self.api, ev),
            "hipGraphLaunch" => Ok(Outcome::Skipped(
                "HIP graph launches are not replayed yet".into(),
            )),
            "hipLaunchHostFunc" => Ok(Outcome::Skipped(HOST_FUNC.into())),
            // Queries, device selection (device 0 is used), registrations (launches name their
            // code object), unloads (code stays loaded, shared by code object) and stream
            // capture bookkeeping change no device state replay depends on.
            _ => Ok(Outcome::Ignored),
        }
    }

    fn finish(&mut self) -> Result<()> {
        self.device_synchronize().map(|_| ())
    }

    fn placement(&self) -> Tally {
        self.mem.tally()
    }
}
