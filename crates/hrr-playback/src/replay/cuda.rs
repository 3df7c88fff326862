//! The CUDA backend: replays `cuda-driver` events against the real driver. Handles (contexts,
//! streams, events, modules, libraries, functions, kernels, VMM handles) are remapped; code
//! objects are loaded once, before the first call, and kernels are bound through the recorded
//! look-ups of that code object, so two kernels of one name in different code objects stay apart.
//!
//! CUDA graphs built by stream capture are rebuilt the same way: capture begins on the mapped
//! stream, the recorded operations are reissued on it (so the driver captures them into a new
//! graph), the graph and its instantiations are mapped like any other handle, and every
//! `cuGraphLaunch` runs the rebuilt graph. Graphs built node by node (`cuGraphAdd*Node`, not
//! recorded) are skipped with a reason.

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CString};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::ObjectId;

use super::driver::{cu, Api, LaunchConfig, H};
use super::fields::{bytes, object, text, u, u64s};
use super::memory::{rw_access, Memory};
use super::{Backend, Event, Outcome};
use crate::cli::ReplayOptions;

/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
const CU_STREAM_CAPTURE_MODE_RELAXED: c_int = 2;

/// Why a D2H copy issued inside a stream capture is not checked.
const CAPTURED_D2H: &str =
    "D2H copy inside stream capture: it runs with the graph, its result was not recorded";

/// Replays CUDA driver events.
pub struct Cuda {
    api: Api,
    dev: c_int,
    device_name: String,
    cc: (i32, i32),
    mem: Memory,
    module_of_code: HashMap<ObjectId, H>,
    library_of_code: HashMap<ObjectId, H>,
    handles: HashMap<u64, H>,
    /// Graphs rebuilt from recorded stream captures, by recorded handle (kept apart from
    /// `handles` so an explicitly built graph never matches a stale handle of another kind).
    graphs: HashMap<u64, H>,
    /// Their instantiations, by recorded handle.
    execs: HashMap<u64, H>,
    vmm: HashMap<u64, u64>,
    watchdog: Option<H>,
    /// Host buffers read or written by copies captured into graphs: the graph reads (or
    /// writes) them at every launch, so they live until replay ends.
    graph_host: Vec<Vec<u8>>,
    sync_after_launch: bool,
    watchdog_ms: u64,
}

impl Cuda {
    /// Load the driver, initialise it and make device 0's primary context current.
    /// `ranges` are the recorded device address ranges, reserved before anything else.
    pub fn open(opts: &ReplayOptions, ranges: &[(u64, u64)]) -> Result<Self> {
        let api = Api::load(opts.runtime.as_deref())?;
        cu!(api, cuInit(0))?;
        let mut dev: c_int = 0;
        cu!(api, cuDeviceGet(&mut dev, 0))?;
        let mut ctx: H = std::ptr::null_mut();
        cu!(api, cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        cu!(api, cuCtxSetCurrent(ctx))?;
        let mut name = [0 as std::ffi::c_char; 256];
        cu!(api, cuDeviceGetName(name.as_mut_ptr(), 255, dev))?;
        // SAFETY: NUL-terminated by the driver within 255 bytes.
        let device_name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let (mut major, mut minor) = (0, 0);
        cu!(api, cuDeviceGetAttribute(&mut major, 75, dev))?;
        cu!(api, cuDeviceGetAttribute(&mut minor, 76, dev))?;
        let prop = super::memory::device_prop(dev);
        let mut gran = 0usize;
        if cu!(
            api,
            cuMemGetAllocationGranularity(&mut gran, prop.as_ptr(), 0)
        )
        .is_err()
            || gran == 0
        {
            gran = 2 << 20;
        }
        let mut handles = HashMap::new();
        handles.insert(0u64, std::ptr::null_mut());
        let mut cuda = Cuda {
            mem: Memory::new(!opts.no_placement, dev, gran as u64),
            api,
            dev,
            device_name,
            cc: (major, minor),
            module_of_code: HashMap::new(),
            library_of_code: HashMap::new(),
            handles,
            graphs: HashMap::new(),
            execs: HashMap::new(),
            vmm: HashMap::new(),
            watchdog: None,
            graph_host: Vec::new(),
            sync_after_launch: opts.sync_after_launch,
            watchdog_ms: opts.sync_watchdog_ms,
        };
        cuda.mem.prereserve(&cuda.api, ranges)?;
        Ok(cuda)
    }

    fn handle(&self, recorded: u64) -> Result<H> {
        if recorded <= 2 {
            return Ok(recorded as H); // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
        }
        self.handles
            .get(&recorded)
            .copied()
            .ok_or_else(|| anyhow!("handle 0x{recorded:x} was never created in this archive"))
    }

    fn stream(&self, ev: &Event, name: &str) -> Result<H> {
        let s = u(&ev.fields, name).unwrap_or(0);
        if s == 0 && ev.per_thread {
            return Ok(2 as H);
        }
        self.handle(s)
    }

    fn load_code(&mut self, id: ObjectId, path: &Path, as_library: bool) -> Result<H> {
        let cache = if as_library {
            &self.library_of_code
        } else {
            &self.module_of_code
        };
        if let Some(h) = cache.get(&id) {
            return Ok(*h);
        }
        let image = std::fs::read(path)
            .with_context(|| format!("cannot read code object {}", path.display()))?;
        let mut h: H = std::ptr::null_mut();
        if as_library {
            let n = std::ptr::null_mut();
            cu!(
                self.api,
                cuLibraryLoadData(
                    &mut h,
                    image.as_ptr() as *const c_void,
                    n,
                    std::ptr::null_mut(),
                    0,
                    n,
                    std::ptr::null_mut(),
                    0
                )
            )
            .with_context(|| format!("loading code object {id}"))?;
            self.library_of_code.insert(id, h);
        } else {
            cu!(
                self.api,
                cuModuleLoadData(&mut h, image.as_ptr() as *const c_void)
            )
            .with_context(|| format!("loading code object {id}"))?;
            self.module_of_code.insert(id, h);
        }
        Ok(h)
    }

    /// Is `stream` capturing into a graph now? (Work issued there is recorded, not run: it must
    /// not be waited for, and host buffers it names must outlive the graph.)
    fn capturing(&self, stream: H) -> bool {
        let Some(f) = self.api.cuStreamIsCapturing else {
            return false;
        };
        let mut status: c_int = 0;
        // SAFETY: out-pointer to a local.
        unsafe { f(stream, &mut status) == 0 && status != 0 }
    }

    fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        if self.watchdog_ms == 0 {
            return cu!(self.api, cuStreamSynchronize(stream)).map_err(|e| anyhow!("{what}: {e}"));
        }
        if self.watchdog.is_none() {
            let mut e: H = std::ptr::null_mut();
            cu!(self.api, cuEventCreate(&mut e, 2))?; // CU_EVENT_DISABLE_TIMING
            self.watchdog = Some(e);
        }
        let e = self.watchdog.expect("created");
        cu!(self.api, cuEventRecord(e, stream))?;
        let start = std::time::Instant::now();
        loop {
            match cu!(self.api, cuEventQuery(e)) {
                Ok(()) => return Ok(()),
                Err(err) if err.code == 600 => {} // CUDA_ERROR_NOT_READY
                Err(err) => bail!("{what}: {err}"),
            }
            if start.elapsed().as_millis() as u64 > self.watchdog_ms {
                bail!("{what}: still running after {} ms (--sync-watchdog-ms); the GPU is hung or the kernel is very slow", self.watchdog_ms);
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    fn launch(&mut self, ev: &Event, filter: Option<&str>) -> Result<Outcome> {
        let f = &ev.fields;
        let kernel = text(f, "kernel");
        if u(f, "args_known").unwrap_or(1) == 0 {
            return Ok(Outcome::Skipped(format!(
                "argument layout of `{kernel}` unknown"
            )));
        }
        if filter.is_some_and(|p| !kernel.contains(p)) {
            return Ok(Outcome::Filtered);
        }
        let func = self.handle(u(f, "function")?)?;
        let stream = self.stream(ev, "stream")?;
        let mut args = bytes(f, "args").to_vec();
        if self.mem.any_moved() {
            let offs = u64s(f, "arg_offsets");
            let sizes = u64s(f, "arg_sizes");
            for (o, s) in offs.iter().zip(&sizes) {
                let o = *o as usize;
                if *s == 8 && o + 8 <= args.len() {
                    let v = u64::from_le_bytes(args[o..o + 8].try_into().expect("8 bytes"));
                    args[o..o + 8].copy_from_slice(&self.mem.translate(v).to_le_bytes());
                }
            }
        }
        let g = |n| u(f, n).map(|v| v as u32);
        let (grid, block) = (
            [g("grid_x")?, g("grid_y")?, g("grid_z")?],
            [g("block_x")?, g("block_y")?, g("block_z")?],
        );
        let shmem = g("shared_mem")?;
        let mut size = args.len();
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            args.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            &mut size as *mut usize as *mut c_void,
            std::ptr::null_mut(),
        ];
        let attrs = bytes(f, "attrs");
        let result = if u(f, "cooperative").unwrap_or(0) != 0 {
            let offs = u64s(f, "arg_offsets");
            let mut ptrs: Vec<*mut c_void> = offs
                .iter()
                .map(|&o| unsafe { args.as_mut_ptr().add(o as usize) } as *mut c_void)
                .collect();
            cu!(
                self.api,
                cuLaunchCooperativeKernel(
                    func,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    shmem,
                    stream,
                    ptrs.as_mut_ptr()
                )
            )
        } else if !attrs.is_empty() || ev.name == "cuLaunchKernelEx" {
            let cfg = LaunchConfig {
                grid,
                block,
                shared_mem: shmem,
                stream,
                attrs: attrs.as_ptr(),
                num_attrs: (attrs.len() / 72) as u32,
            };
            cu!(
                self.api,
                cuLaunchKernelEx(&cfg, func, std::ptr::null_mut(), extra.as_mut_ptr())
            )
        } else {
            cu!(
                self.api,
                cuLaunchKernel(
                    func,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    shmem,
                    stream,
                    std::ptr::null_mut(),
                    extra.as_mut_ptr()
                )
            )
        };
        result.map_err(|e| anyhow!("launching kernel `{kernel}`: {e}"))?;
        if self.capturing(stream) {
            return Ok(Outcome::Done); // captured into a graph: runs when the graph is launched
        }
        if self.sync_after_launch || self.watchdog_ms > 0 {
            self.wait(stream, &format!("kernel `{kernel}` (event #{})", ev.seq))?;
        }
        Ok(Outcome::Launched)
    }

    fn map_out(&mut self, recorded: u64, now: H) {
        self.handles.insert(recorded, now);
    }
}

impl Backend for Cuda {
    fn device(&self) -> String {
        format!("{} (sm_{}{})", self.device_name, self.cc.0, self.cc.1)
    }

    fn runtime(&self) -> String {
        self.api.path.clone()
    }

    fn preflight(&self, meta: Option<&serde_json::Value>) -> Result<()> {
        let Some(meta) = meta else { return Ok(()) };
        if let Some(cc) = meta["devices"][0]["compute_capability"].as_str() {
            let here = format!("{}.{}", self.cc.0, self.cc.1);
            if cc != here {
                let name = meta["devices"][0]["name"]
                    .as_str()
                    .unwrap_or("unknown device");
                bail!("[HRR] Architecture mismatch: the archive was captured on compute capability {cc} ({name}); this device is {here} ({}). Replay on a GPU of the same architecture.", self.device_name);
            }
        }
        if let Some(recorded) = meta["driver_version"].as_i64() {
            let mut v = 0;
            cu!(self.api, cuDriverGetVersion(&mut v))?;
            if recorded > v as i64 {
                bail!("[HRR] Driver too old: the archive was captured with CUDA driver {recorded}; this driver is {v}. Replay with a driver at least as new.");
            }
        }
        Ok(())
    }

    fn preload(&mut self, code: &[(ObjectId, std::path::PathBuf, bool)]) -> Result<()> {
        for (id, path, lib) in code {
            self.load_code(*id, path, *lib)?;
        }
        Ok(())
    }

    fn replay(
        &mut self,
        ev: &Event,
        blobs: &dyn Fn(Option<ObjectId>) -> Result<Option<Vec<u8>>>,
        opts: &ReplayOptions,
    ) -> Result<Outcome> {
        let f = &ev.fields;
        let api = &self.api;
        Ok(match ev.name {
            "cuDevicePrimaryCtxRetain" | "cuCtxCreate" => {
                let mut ctx: H = std::ptr::null_mut();
                cu!(api, cuDevicePrimaryCtxRetain(&mut ctx, self.dev))?;
                self.map_out(u(f, "ctx")?, ctx);
                Outcome::Done
            }
            "cuMemAlloc" | "cuMemAllocAsync" | "cuMemAllocFromPoolAsync" => {
                self.mem
                    .alloc(&self.api, u(f, "dptr")?, u(f, "bytesize")?)?;
                Outcome::Done
            }
            "cuMemAllocPitch" => {
                self.mem
                    .alloc(&self.api, u(f, "dptr")?, u(f, "pitch")? * u(f, "height")?)?;
                Outcome::Done
            }
            "cuMemAllocManaged" => {
                let mut p = 0u64;
                let size = u(f, "bytesize")?;
                cu!(
                    api,
                    cuMemAllocManaged(&mut p, size as usize, u(f, "flags")? as u32)
                )?;
                self.mem.note_moved(u(f, "dptr")?, size, p);
                Outcome::Done
            }
            "cuMemFree" | "cuMemFreeAsync" => {
                self.mem.free(&self.api, u(f, "dptr")?)?;
                Outcome::Done
            }
            "cuMemHostAlloc" | "cuMemAllocHost" => {
                let mut p: *mut c_void = std::ptr::null_mut();
                let size = u(f, "bytesize")?;
                cu!(
                    api,
                    cuMemHostAlloc(&mut p, size as usize, u(f, "flags").unwrap_or(0) as u32)
                )?;
                self.mem.note_moved(u(f, "host_ptr")?, size, p as u64);
                Outcome::Done
            }
            "cuMemAddressReserve" => {
                let (rec, size) = (u(f, "ptr")?, u(f, "size")?);
                if !opts.no_placement && self.mem.reserve_covering(&self.api, rec, size)? {
                    return Ok(Outcome::Done); // placed: inside a reservation of ours
                }
                let mut got = 0u64;
                cu!(
                    self.api,
                    cuMemAddressReserve(&mut got, size as usize, u(f, "alignment")? as usize, 0, 0)
                )?;
                self.mem.note_moved(rec, size, got);
                Outcome::Done
            }
            "cuMemAddressFree" => {
                let (rec, size) = (u(f, "ptr")?, u(f, "size")?);
                if !self.mem.covered(rec, size) {
                    cu!(
                        api,
                        cuMemAddressFree(self.mem.translate(rec), size as usize)
                    )?;
                    self.mem.forget(rec);
                }
                Outcome::Done
            }
            "cuMemCreate" => {
                let mut prop = bytes(f, "prop").to_vec();
                if prop.len() >= 16 {
                    prop[12..16].copy_from_slice(&self.dev.to_le_bytes());
                }
                let mut h = 0u64;
                cu!(
                    api,
                    cuMemCreate(
                        &mut h,
                        u(f, "size")? as usize,
                        prop.as_ptr(),
                        u(f, "flags")?
                    )
                )?;
                self.vmm.insert(u(f, "handle")?, h);
                Outcome::Done
            }
            "cuMemRelease" => {
                if let Some(h) = self.vmm.remove(&u(f, "handle")?) {
                    cu!(api, cuMemRelease(h))?;
                }
                Outcome::Done
            }
            "cuMemMap" => {
                let h = *self
                    .vmm
                    .get(&u(f, "handle")?)
                    .ok_or_else(|| anyhow!("cuMemMap of an unknown allocation handle"))?;
                cu!(
                    api,
                    cuMemMap(
                        self.mem.translate(u(f, "ptr")?),
                        u(f, "size")? as usize,
                        u(f, "offset")? as usize,
                        h,
                        0
                    )
                )?;
                Outcome::Done
            }
            "cuMemUnmap" => {
                cu!(
                    api,
                    cuMemUnmap(self.mem.translate(u(f, "ptr")?), u(f, "size")? as usize)
                )?;
                Outcome::Done
            }
            "cuMemSetAccess" => {
                let n = u(f, "count")?.max(1) as usize;
                let mut desc = Vec::with_capacity(12 * n);
                for _ in 0..n {
                    desc.extend_from_slice(&rw_access(self.dev));
                }
                cu!(
                    api,
                    cuMemSetAccess(
                        self.mem.translate(u(f, "ptr")?),
                        u(f, "size")? as usize,
                        desc.as_ptr(),
                        n
                    )
                )?;
                Outcome::Done
            }
            "cuMemcpyHtoD" | "cuMemcpyHtoDAsync" => {
                let Some(data) = blobs(object(f, "h2d_blob"))? else {
                    return Ok(Outcome::Skipped("H2D source not recorded".into()));
                };
                let dst = self.mem.translate(u(f, "dst")?);
                let stream = self.stream(ev, "stream")?;
                // From pageable memory the driver stages the source before returning: no wait.
                cu!(
                    api,
                    cuMemcpyHtoDAsync_v2(dst, data.as_ptr() as *const c_void, data.len(), stream)
                )?;
                if self.capturing(stream) {
                    self.graph_host.push(data); // the graph reads it at every launch
                }
                Outcome::Done
            }
            "cuMemcpyDtoH" | "cuMemcpyDtoHAsync" => {
                let src = self.mem.translate(u(f, "src")?);
                let mut got = vec![0u8; u(f, "bytes")? as usize];
                let stream = self.stream(ev, "stream")?;
                cu!(
                    api,
                    cuMemcpyDtoHAsync_v2(got.as_mut_ptr() as *mut c_void, src, got.len(), stream)
                )?;
                if self.capturing(stream) {
                    self.graph_host.push(got);
                    return Ok(Outcome::Skipped(CAPTURED_D2H.into()));
                }
                self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
                Outcome::D2h {
                    got,
                    expected: object(f, "d2h_blob"),
                }
            }
            "cuMemcpyDtoD" | "cuMemcpyDtoDAsync" => {
                let stream = self.stream(ev, "stream")?;
                cu!(
                    api,
                    cuMemcpyDtoDAsync_v2(
                        self.mem.translate(u(f, "dst")?),
                        self.mem.translate(u(f, "src")?),
                        u(f, "bytes")? as usize,
                        stream
                    )
                )?;
                Outcome::Done
            }
            "cuMemcpy" | "cuMemcpyAsync" => {
                let stream = self.stream(ev, "stream")?;
                let n = u(f, "bytes")? as usize;
                match u(f, "direction")? as u8 {
                    0 => cu!(
                        api,
                        cuMemcpyDtoDAsync_v2(
                            self.mem.translate(u(f, "dst")?),
                            self.mem.translate(u(f, "src")?),
                            n,
                            stream
                        )
                    )?,
                    1 => {
                        let Some(data) = blobs(object(f, "h2d_blob"))? else {
                            return Ok(Outcome::Skipped("H2D source not recorded".into()));
                        };
                        cu!(
                            api,
                            cuMemcpyHtoDAsync_v2(
                                self.mem.translate(u(f, "dst")?),
                                data.as_ptr() as *const c_void,
                                data.len(),
                                stream
                            )
                        )?;
                        if self.capturing(stream) {
                            self.graph_host.push(data);
                        }
                    }
                    2 => {
                        let mut got = vec![0u8; n];
                        cu!(
                            api,
                            cuMemcpyDtoHAsync_v2(
                                got.as_mut_ptr() as *mut c_void,
                                self.mem.translate(u(f, "src")?),
                                n,
                                stream
                            )
                        )?;
                        if self.capturing(stream) {
                            self.graph_host.push(got);
                            return Ok(Outcome::Skipped(CAPTURED_D2H.into()));
                        }
                        self.wait(stream, &format!("D2H copy (event #{})", ev.seq))?;
                        return Ok(Outcome::D2h {
                            got,
                            expected: object(f, "d2h_blob"),
                        });
                    }
                    _ => return Ok(Outcome::Skipped("host-to-host copy".into())),
                }
                Outcome::Done
            }
            "cuMemsetD8" | "cuMemsetD16" | "cuMemsetD32" | "cuMemsetD8Async"
            | "cuMemsetD16Async" | "cuMemsetD32Async" => {
                let dst = self.mem.translate(u(f, "dst")?);
                let (v, n) = (u(f, "value")?, u(f, "count")? as usize);
                let stream = self.stream(ev, "stream")?;
                match u(f, "element_bytes")? {
                    1 => cu!(api, cuMemsetD8Async(dst, v as u8, n, stream))?,
                    2 => cu!(api, cuMemsetD16Async(dst, v as u16, n, stream))?,
                    _ => cu!(api, cuMemsetD32Async(dst, v as u32, n, stream))?,
                }
                Outcome::Done
            }
            "cuModuleLoad"
            | "cuModuleLoadData"
            | "cuModuleLoadDataEx"
            | "cuModuleLoadFatBinary"
            | "cuLibraryLoadData"
            | "cuLibraryLoadFromFile" => {
                // Loaded once by `preload`; this load only binds the recorded handle to it.
                let library = ev.name.starts_with("cuLibrary");
                let (loaded, key) = if library {
                    (&self.library_of_code, "library")
                } else {
                    (&self.module_of_code, "module")
                };
                let id =
                    object(f, "code").ok_or_else(|| anyhow!("the {key} image was not recorded"))?;
                let h = *loaded
                    .get(&id)
                    .ok_or_else(|| anyhow!("code object {id} missing from the archive"))?;
                self.map_out(u(f, key)?, h);
                Outcome::Done
            }
            "cuModuleGetFunction" => {
                let m = self.handle(u(f, "module")?)?;
                let name = CString::new(text(f, "name"))?;
                let mut h: H = std::ptr::null_mut();
                cu!(api, cuModuleGetFunction(&mut h, m, name.as_ptr()))?;
                self.map_out(u(f, "function")?, h);
                Outcome::Done
            }
            "cuLibraryGetKernel" => {
                let l = self.handle(u(f, "library")?)?;
                let name = CString::new(text(f, "name"))?;
                let mut h: H = std::ptr::null_mut();
                cu!(api, cuLibraryGetKernel(&mut h, l, name.as_ptr()))?;
                self.map_out(u(f, "kernel")?, h);
                Outcome::Done
            }
            "cuLibraryGetModule" => {
                let l = self.handle(u(f, "library")?)?;
                let mut h: H = std::ptr::null_mut();
                cu!(api, cuLibraryGetModule(&mut h, l))?;
                self.map_out(u(f, "module")?, h);
                Outcome::Done
            }
            "cuKernelGetFunction" => {
                let k = self.handle(u(f, "kernel")?)?;
                let mut h: H = std::ptr::null_mut();
                cu!(api, cuKernelGetFunction(&mut h, k))?;
                self.map_out(u(f, "function")?, h);
                Outcome::Done
            }
            "cuModuleGetGlobal" | "cuLibraryGetGlobal" => {
                let owner = self.handle(u(f, "owner")?)?;
                let name = CString::new(text(f, "name"))?;
                let (mut p, mut n) = (0u64, 0usize);
                if ev.name == "cuModuleGetGlobal" {
                    cu!(
                        api,
                        cuModuleGetGlobal_v2(&mut p, &mut n, owner, name.as_ptr())
                    )?;
                } else {
                    cu!(
                        api,
                        cuLibraryGetGlobal(&mut p, &mut n, owner, name.as_ptr())
                    )?;
                }
                self.mem.note_moved(u(f, "dptr")?, n as u64, p);
                Outcome::Done
            }
            "cuFuncSetAttribute" => {
                cu!(
                    api,
                    cuFuncSetAttribute(
                        self.handle(u(f, "function")?)?,
                        u(f, "attrib")? as i32,
                        u(f, "value")? as i32
                    )
                )?;
                Outcome::Done
            }
            "cuKernelSetAttribute" => {
                cu!(
                    api,
                    cuKernelSetAttribute(
                        u(f, "attrib")? as i32,
                        u(f, "value")? as i32,
                        self.handle(u(f, "kernel")?)?,
                        self.dev
                    )
                )?;
                Outcome::Done
            }
            "cuFuncSetCacheConfig" => {
                cu!(
                    api,
                    cuFuncSetCacheConfig(self.handle(u(f, "function")?)?, u(f, "config")? as i32)
                )?;
                Outcome::Done
            }
            "cuLaunchKernel" | "cuLaunchKernelEx" | "cuLaunchCooperativeKernel" => {
                return self.launch(ev, opts.kernel_filter.as_deref());
            }
            "cuStreamCreate" | "cuStreamCreateWithPriority" => {
                let mut s: H = std::ptr::null_mut();
                let flags = u(f, "flags")? as u32;
                match u(f, "priority") {
                    Ok(p) => cu!(api, cuStreamCreateWithPriority(&mut s, flags, p as i32))?,
                    Err(_) => cu!(api, cuStreamCreate(&mut s, flags))?,
                }
                self.map_out(u(f, "stream")?, s);
                Outcome::Done
            }
            "cuStreamDestroy" => {
                let rec = u(f, "stream")?;
                cu!(api, cuStreamDestroy_v2(self.handle(rec)?))?;
                self.handles.remove(&rec);
                Outcome::Done
            }
            "cuStreamSynchronize" => {
                let s = self.stream(ev, "stream")?;
                self.wait(s, &format!("cuStreamSynchronize (event #{})", ev.seq))?;
                Outcome::Done
            }
            "cuCtxSynchronize" => {
                cu!(api, cuCtxSynchronize())?;
                Outcome::Done
            }
            "cuStreamWaitEvent" => {
                cu!(
                    api,
                    cuStreamWaitEvent(
                        self.stream(ev, "stream")?,
                        self.handle(u(f, "event")?)?,
                        u(f, "flags")? as u32
                    )
                )?;
                Outcome::Done
            }
            "cuEventCreate" => {
                let mut e: H = std::ptr::null_mut();
                cu!(api, cuEventCreate(&mut e, u(f, "flags")? as u32))?;
                self.map_out(u(f, "event")?, e);
                Outcome::Done
            }
            "cuEventRecord" | "cuEventRecordWithFlags" => {
                cu!(
                    api,
                    cuEventRecord(self.handle(u(f, "event")?)?, self.stream(ev, "stream")?)
                )?;
                Outcome::Done
            }
            "cuEventSynchronize" => {
                cu!(api, cuEventSynchronize(self.handle(u(f, "event")?)?))?;
                Outcome::Done
            }
            "cuEventDestroy" => {
                let rec = u(f, "event")?;
                cu!(api, cuEventDestroy_v2(self.handle(rec)?))?;
                self.handles.remove(&rec);
                Outcome::Done
            }
            "cuStreamBeginCapture" => {
                // Always RELAXED, whatever mode the program used: in GLOBAL (cudart's default)
                // or THREAD_LOCAL mode the driver refuses "potentially unsafe" calls — memory
                // allocation, VMM mapping, legacy-stream copies — while the capture runs, and
                // replay makes such calls of its own (placing allocations the program made
                // during the capture, copies for its checks). The mode changes only what may be
                // called meanwhile, never what the graph holds.
                cu!(
                    api,
                    cuStreamBeginCapture_v2(
                        self.stream(ev, "stream")?,
                        CU_STREAM_CAPTURE_MODE_RELAXED
                    )
                )?;
                Outcome::Done
            }
            "cuStreamEndCapture" => {
                let mut g: H = std::ptr::null_mut();
                cu!(api, cuStreamEndCapture(self.stream(ev, "stream")?, &mut g))?;
                self.graphs.insert(u(f, "graph")?, g);
                Outcome::Done
            }
            "cuGraphInstantiate"
            | "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams" => {
                let graph = u(f, "graph")?;
                let Some(&g) = self.graphs.get(&graph) else {
                    return Ok(Outcome::Skipped(format!(
                        "graph 0x{graph:x} was not built by a recorded stream capture (explicit graph construction is not recorded); not instantiated"
                    )));
                };
                // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD (2) only means "upload now" and needs
                // cuGraphInstantiateWithParams; the graph is uploaded at its first launch anyway.
                let flags = u(f, "flags").unwrap_or(0) & !2;
                let mut exec: H = std::ptr::null_mut();
                cu!(api, cuGraphInstantiateWithFlags(&mut exec, g, flags))?;
                self.execs.insert(u(f, "exec")?, exec);
                Outcome::Done
            }
            "cuGraphLaunch" => {
                let rec = u(f, "exec")?;
                let Some(&exec) = self.execs.get(&rec) else {
                    return Ok(Outcome::Skipped(format!(
                        "graph exec 0x{rec:x} was not instantiated in replay (its graph was not built by a recorded stream capture)"
                    )));
                };
                let stream = self.stream(ev, "stream")?;
                cu!(api, cuGraphLaunch(exec, stream))?;
                if !self.capturing(stream) && (self.sync_after_launch || self.watchdog_ms > 0) {
                    self.wait(stream, &format!("graph launch (event #{})", ev.seq))?;
                }
                Outcome::GraphLaunched
            }
            "cuGraphDestroy" => match self.graphs.remove(&u(f, "graph")?) {
                Some(g) => {
                    cu!(api, cuGraphDestroy(g))?;
                    Outcome::Done
                }
                None => Outcome::Ignored, // not rebuilt (explicitly built)
            },
            "cuGraphExecDestroy" => match self.execs.remove(&u(f, "graph")?) {
                Some(e) => {
                    cu!(api, cuGraphExecDestroy(e))?;
                    Outcome::Done
                }
                None => Outcome::Ignored,
            },
            "cuLaunchHostFunc" => Outcome::Skipped("host callbacks are not in the archive".into()),
            // Queries, context selection, unloads (code stays loaded, shared by code object),
            // registrations and graph construction change no device state replay depends on.
            _ => Outcome::Ignored,
        })
    }

    fn finish(&mut self) -> Result<()> {
        cu!(self.api, cuCtxSynchronize())?;
        Ok(())
    }

    fn placement(&self) -> super::Placement {
        super::Placement {
            placed: self.mem.placed,
            translated: self.mem.translated,
            first_refusal: self.mem.first_refusal.clone(),
        }
    }
}
