//! The HIP backend: replays `hip` events against the HIP runtime loaded at run time (ROCm 5, 6
//! or 7 names, or `--runtime PATH`). Handles (streams, events, modules, functions, VMM handles)
//! are remapped; code objects (fat binaries registered by hipcc programs, module images) are
//! loaded once with `hipModuleLoadData` before the first call, and kernels bind by (code object,
//! name): `<<<>>>` launches through `hipModuleGetFunction` on their fat binary, module launches
//! through the recorded look-ups. Arguments are passed as the recorded buffer (`extra`).
//!
//! Placement: the recorded device ranges are reserved with `hipMemAddressReserve` at their
//! addresses before any code loads; each allocation is then backed where it was
//! (`hipMemCreate` + `hipMemMap` + `hipMemSetAccess` over the pages it needs, in the runtime's
//! granularity), so allocations that shared a page share it again. Where the runtime lacks that
//! family, refuses an address, or `--no-placement`, the allocation goes elsewhere and 8-byte
//! kernel arguments inside moved ranges are translated (pointers stored in device memory cannot
//! be). The allocation properties are built in the layout of the runtime found (it changed in
//! ROCm 6), checked with `hipMemGetAllocationGranularity`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, c_void, CString};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::ObjectId;

use super::fields::{bytes, object, text, u, u64s};
use super::hip_runtime::{hip, kind, HipApi, H, HIP_ERROR_NOT_READY};
use super::{Backend, Event, Outcome, Placement};
use crate::cli::ReplayOptions;

/// `hipMemAllocationProp` for pinned memory on device `dev`, in the ROCm 6+ layout (CUDA's) or
/// the ROCm 5 one.
fn allocation_prop(dev: i32, rocm5: bool) -> [u8; 32] {
    let mut p = [0u8; 32];
    let one = 1i32.to_le_bytes();
    if rocm5 {
        // {u8 compressionType; hipMemLocation {type, id}; requestedHandleType; type; ...}
        p[4..8].copy_from_slice(&one);
        p[8..12].copy_from_slice(&dev.to_le_bytes());
        p[16..20].copy_from_slice(&one);
    } else {
        // {type; requestedHandleType; hipMemLocation {type, id}; void *win32; allocFlags}
        p[0..4].copy_from_slice(&one);
        p[8..12].copy_from_slice(&one);
        p[12..16].copy_from_slice(&dev.to_le_bytes());
    }
    p
}

/// `hipMemAccessDesc` granting read/write to `dev` (the same in every ROCm).
fn rw_access(dev: i32) -> [u8; 12] {
    let mut d = [0u8; 12];
    d[0..4].copy_from_slice(&1i32.to_le_bytes());
    d[4..8].copy_from_slice(&dev.to_le_bytes());
    d[8..12].copy_from_slice(&3i32.to_le_bytes());
    d
}

/// Physical memory mapped for placed allocations: one `hipMemCreate` + `hipMemMap` per run of
/// pages that were unmapped when an allocation needed them.
struct Segment {
    len: u64,
    handle: u64,
    /// Pages of the segment some live allocation uses.
    live_pages: u64,
    /// The segment has a reservation of its own (outside the ranges reserved at start).
    own_reservation: bool,
}

/// Placement and translation state of the HIP backend.
struct HipMemory {
    /// The allocation properties the runtime accepts, when placement is on.
    prop: Option<[u8; 32]>,
    dev: i32,
    /// The runtime's allocation granularity: the unit of placement.
    page: u64,
    /// Address ranges reserved at start, covering recorded allocations: start → length.
    reservations: BTreeMap<u64, u64>,
    /// Mapped page → (its segment, live allocations using it).
    pages: HashMap<u64, (u64, u32)>,
    segments: BTreeMap<u64, Segment>,
    moved: BTreeMap<u64, (u64, u64)>,
    live: BTreeMap<u64, u64>,
    placed: u64,
    translated: u64,
    first_refusal: Option<String>,
}

impl HipMemory {
    fn refuse(&mut self, why: String) {
        if self.first_refusal.is_none() {
            self.first_refusal = Some(why);
        }
    }

    fn covered(&self, start: u64, len: u64) -> bool {
        matches!(self.reservations.range(..=start).next_back(),
            Some((&s, &l)) if start + len <= s + l)
    }

    /// Reserve `[start, start+len)` exactly; false (and the reason noted) when refused.
    fn reserve_exact(&mut self, api: &HipApi, start: u64, len: u64) -> Result<bool> {
        let mut got = 0u64;
        if let Err(e) = hip!(
            api,
            hipMemAddressReserve(&mut got, len as usize, 0, start, 0)
        ) {
            self.refuse(format!("reserving 0x{start:x} (+{len} bytes): {e}"));
            return Ok(false);
        }
        if got != start {
            self.refuse(format!(
                "the runtime put the reservation asked at 0x{start:x} (+{len} bytes) at 0x{got:x}"
            ));
            hip!(api, hipMemAddressFree(got, len as usize))?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Reserve the recorded ranges (rounded to pages, merged) before code loading or anything
    /// else takes device addresses.
    fn prereserve(&mut self, api: &HipApi, ranges: &[(u64, u64)]) -> Result<()> {
        let g = self.page;
        let mut spans: Vec<(u64, u64)> = ranges
            .iter()
            .filter(|(s, l)| *s != 0 && *l != 0)
            .map(|&(s, l)| (s / g * g, s.saturating_add(l).div_ceil(g) * g))
            .collect();
        spans.sort();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        for (s, e) in merged {
            if self.reserve_exact(api, s, e - s)? {
                self.reservations.insert(s, e - s);
            }
        }
        Ok(())
    }

    fn alloc(&mut self, api: &HipApi, addr: u64, size: u64) -> Result<()> {
        let size = size.max(1);
        if self.prop.is_some() && self.place(api, addr, size)? {
            self.placed += 1;
        } else {
            let mut p = 0u64;
            hip!(api, hipMalloc(&mut p, size as usize))?;
            self.moved.insert(addr, (size, p));
            self.translated += 1;
        }
        self.live.insert(addr, size);
        Ok(())
    }

    /// Map what `[addr, addr+size)` needs at its address: runs of unmapped pages each become a
    /// segment; pages mapped already (shared with another allocation) are reused.
    fn place(&mut self, api: &HipApi, addr: u64, size: u64) -> Result<bool> {
        let g = self.page;
        let (first, end) = (addr / g * g, (addr + size).div_ceil(g) * g);
        let mut made = Vec::new();
        let mut page = first;
        while page < end {
            if self.pages.contains_key(&page) {
                page += g;
                continue;
            }
            let mut run_end = page + g;
            while run_end < end && !self.pages.contains_key(&run_end) {
                run_end += g;
            }
            if !self.map_segment(api, page, run_end - page)? {
                for s in made {
                    self.drop_segment(api, s)?;
                }
                return Ok(false);
            }
            made.push(page);
            page = run_end;
        }
        let mut page = first;
        while page < end {
            let (seg, refs) = self.pages.get_mut(&page).expect("mapped above");
            *refs += 1;
            if *refs == 1 {
                let seg = *seg;
                self.segments.get_mut(&seg).expect("segment").live_pages += 1;
            }
            page += g;
        }
        Ok(true)
    }

    fn map_segment(&mut self, api: &HipApi, start: u64, len: u64) -> Result<bool> {
        let (n, prop) = (len as usize, self.prop.expect("placement on"));
        let own_reservation = !self.covered(start, len);
        if own_reservation && !self.reserve_exact(api, start, len)? {
            return Ok(false);
        }
        let mut handle = 0u64;
        let mut mapped = hip!(api, hipMemCreate(&mut handle, n, prop.as_ptr(), 0));
        if mapped.is_ok() {
            mapped = hip!(api, hipMemMap(start, n, 0, handle, 0));
        }
        if let Err(e) = mapped {
            self.refuse(format!("backing 0x{start:x} (+{len} bytes): {e}"));
            if handle != 0 {
                hip!(api, hipMemRelease(handle))?;
            }
            if own_reservation {
                hip!(api, hipMemAddressFree(start, n))?;
            }
            return Ok(false);
        }
        let access = rw_access(self.dev);
        hip!(api, hipMemSetAccess(start, n, access.as_ptr(), 1))?;
        self.segments.insert(
            start,
            Segment {
                len,
                handle,
                live_pages: 0,
                own_reservation,
            },
        );
        let mut page = start;
        while page < start + len {
            self.pages.insert(page, (start, 0));
            page += self.page;
        }
        Ok(true)
    }

    fn drop_segment(&mut self, api: &HipApi, start: u64) -> Result<()> {
        let Some(seg) = self.segments.remove(&start) else {
            return Ok(());
        };
        let n = seg.len as usize;
        // Work queued before the free may still use the memory (hipFree waits for it too).
        hip!(api, hipDeviceSynchronize())?;
        hip!(api, hipMemUnmap(start, n))?;
        hip!(api, hipMemRelease(seg.handle))?;
        if seg.own_reservation {
            hip!(api, hipMemAddressFree(start, n))?;
        }
        let mut page = start;
        while page < start + seg.len {
            self.pages.remove(&page);
            page += self.page;
        }
        Ok(())
    }

    fn unref_page(&mut self, api: &HipApi, page: u64) -> Result<()> {
        let Some((seg, refs)) = self.pages.get_mut(&page) else {
            return Ok(());
        };
        *refs -= 1;
        if *refs == 0 {
            let seg = *seg;
            let s = self.segments.get_mut(&seg).expect("segment");
            s.live_pages -= 1;
            if s.live_pages == 0 {
                self.drop_segment(api, seg)?;
            }
        }
        Ok(())
    }

    fn free(&mut self, api: &HipApi, addr: u64) -> Result<()> {
        let Some(size) = self.live.remove(&addr) else {
            return Ok(());
        };
        if let Some((_, p)) = self.moved.remove(&addr) {
            hip!(api, hipFree(p))?;
            return Ok(());
        }
        let g = self.page;
        let mut page = addr / g * g;
        while page < addr + size {
            self.unref_page(api, page)?;
            page += g;
        }
        Ok(())
    }

    fn note_moved(&mut self, recorded: u64, len: u64, now: u64) {
        if recorded != now {
            self.moved.insert(recorded, (len, now));
        }
    }

    fn translate(&self, v: u64) -> u64 {
        match self.moved.range(..=v).next_back() {
            Some((&start, &(len, now))) if v < start + len => now + (v - start),
            _ => v,
        }
    }
}

/// Replays HIP runtime events.
pub struct Hip {
    api: HipApi,
    dev: c_int,
    device_name: String,
    arch: String,
    runtime_version: i32,
    mem: HipMemory,
    /// Code object → module and its image (kept alive for the runtime).
    module_of_code: HashMap<ObjectId, (H, Vec<u8>)>,
    /// (code object, kernel name) → function, for `<<<>>>` launches.
    functions: HashMap<(ObjectId, String), H>,
    handles: HashMap<u64, H>,
    vmm: HashMap<u64, u64>,
    watchdog: Option<H>,
    sync_after_launch: bool,
    watchdog_ms: u64,
}

/// The architecture name (`gfx90a:sramecc+:xnack-`) in a filled `hipDeviceProp_t`, wherever
/// the layout of this ROCm puts it: the first string after `name` that starts with `gfx`.
fn arch_name(props: &[u8]) -> Option<String> {
    (256..props.len().saturating_sub(4))
        .find(|&i| {
            props[i - 1] == 0 && &props[i..i + 3] == b"gfx" && props[i + 3].is_ascii_hexdigit()
        })
        .and_then(|i| {
            let end = props[i..].iter().position(|&b| b == 0)? + i;
            Some(String::from_utf8_lossy(&props[i..end]).into_owned())
        })
}

impl Hip {
    /// Load the runtime, initialise it and select device 0.
    pub fn open(opts: &ReplayOptions, ranges: &[(u64, u64)]) -> Result<Self> {
        let api = HipApi::load(opts.runtime.as_deref())?;
        hip!(api, hipInit(0))?;
        let mut count = 0;
        hip!(api, hipGetDeviceCount(&mut count))?;
        if count < 1 {
            bail!("the HIP runtime {} sees no device", api.path);
        }
        let dev: c_int = 0;
        hip!(api, hipSetDevice(dev))?;
        let mut runtime_version = 0;
        let _ = hip!(api, hipRuntimeGetVersion(&mut runtime_version));
        let mut props = vec![0u8; 8192];
        let got = if api.hipGetDevicePropertiesR0600.is_some() {
            hip!(api, hipGetDevicePropertiesR0600(props.as_mut_ptr(), dev))
        } else {
            hip!(api, hipGetDeviceProperties(props.as_mut_ptr(), dev))
        };
        let (mut device_name, mut arch) = (String::new(), String::new());
        if got.is_ok() {
            device_name = std::ffi::CStr::from_bytes_until_nul(&props[..256])
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            arch = arch_name(&props).unwrap_or_default();
        }
        let mut name = [0 as std::ffi::c_char; 256];
        if hip!(api, hipDeviceGetName(name.as_mut_ptr(), 255, dev)).is_ok() {
            // SAFETY: NUL-terminated by the runtime within 255 bytes.
            device_name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
        }
        // The allocation properties this runtime accepts (their layout changed in ROCm 6), and
        // its granularity; without them placement is off.
        let mut mem = HipMemory {
            prop: None,
            dev,
            page: 4096,
            reservations: BTreeMap::new(),
            pages: HashMap::new(),
            segments: BTreeMap::new(),
            moved: BTreeMap::new(),
            live: BTreeMap::new(),
            placed: 0,
            translated: 0,
            first_refusal: None,
        };
        if opts.no_placement {
            mem.refuse("--no-placement".into());
        } else {
            let order = if runtime_version >= 60_000_000 {
                [false, true]
            } else {
                [true, false]
            };
            let mut last = None;
            for rocm5 in order {
                let prop = allocation_prop(dev, rocm5);
                let mut gran = 0usize;
                match hip!(
                    api,
                    hipMemGetAllocationGranularity(&mut gran, prop.as_ptr(), 0)
                ) {
                    Ok(()) if gran > 0 => {
                        mem.prop = Some(prop);
                        mem.page = (gran as u64).max(4096);
                        break;
                    }
                    Ok(()) => last = Some("granularity 0".to_string()),
                    Err(e) => last = Some(e.to_string()),
                }
            }
            if mem.prop.is_none() {
                mem.refuse(format!(
                    "virtual memory management unavailable ({})",
                    last.unwrap_or_default()
                ));
            } else {
                mem.prereserve(&api, ranges)?;
            }
        }
        let mut handles = HashMap::new();
        handles.insert(0u64, std::ptr::null_mut());
        Ok(Hip {
            api,
            dev,
            device_name,
            arch,
            runtime_version,
            mem,
            module_of_code: HashMap::new(),
            functions: HashMap::new(),
            handles,
            vmm: HashMap::new(),
            watchdog: None,
            sync_after_launch: opts.sync_after_launch,
            watchdog_ms: opts.sync_watchdog_ms,
        })
    }

    fn handle(&self, recorded: u64) -> Result<H> {
        if recorded <= 2 {
            return Ok(recorded as H); // null, hipStreamLegacy, hipStreamPerThread
        }
        self.handles
            .get(&recorded)
            .copied()
            .ok_or_else(|| anyhow!("handle 0x{recorded:x} was never created in this archive"))
    }

    fn stream(&self, ev: &Event) -> Result<H> {
        self.handle(u(&ev.fields, "stream").unwrap_or(0))
    }

    fn module(&self, id: Option<ObjectId>) -> Result<H> {
        let id = id.ok_or_else(|| anyhow!("the code object was not recorded"))?;
        self.module_of_code
            .get(&id)
            .map(|(m, _)| *m)
            .ok_or_else(|| anyhow!("code object {id} missing from the archive"))
    }

    /// The function `name` of code object `code` (for `<<<>>>` launches).
    fn function(&mut self, code: Option<ObjectId>, name: &str) -> Result<H> {
        let id = code.ok_or_else(|| anyhow!("the code object of `{name}` was not recorded"))?;
        if let Some(f) = self.functions.get(&(id, name.to_string())) {
            return Ok(*f);
        }
        let m = self.module(Some(id))?;
        let c = CString::new(name)?;
        let mut f: H = std::ptr::null_mut();
        hip!(self.api, hipModuleGetFunction(&mut f, m, c.as_ptr()))?;
        self.functions.insert((id, name.to_string()), f);
        Ok(f)
    }

    /// Device address of variable `name` of code object `code`, and its size.
    fn global(&self, code: Option<ObjectId>, name: &str) -> Result<(u64, u64)> {
        let m = self.module(code)?;
        let c = CString::new(name)?;
        let (mut p, mut n) = (0u64, 0usize);
        hip!(self.api, hipModuleGetGlobal(&mut p, &mut n, m, c.as_ptr()))
            .with_context(|| format!("looking up `{name}`"))?;
        Ok((p, n as u64))
    }

    fn wait(&mut self, stream: H, what: &str) -> Result<()> {
        if self.watchdog_ms == 0 {
            return hip!(self.api, hipStreamSynchronize(stream))
                .map_err(|e| anyhow!("{what}: {e}"));
        }
        if self.watchdog.is_none() {
            let mut e: H = std::ptr::null_mut();
            hip!(self.api, hipEventCreateWithFlags(&mut e, 2))?; // hipEventDisableTiming
            self.watchdog = Some(e);
        }
        let e = self.watchdog.expect("created");
        hip!(self.api, hipEventRecord(e, stream))?;
        let start = std::time::Instant::now();
        loop {
            match hip!(self.api, hipEventQuery(e)) {
                Ok(()) => return Ok(()),
                Err(err) if err.code == HIP_ERROR_NOT_READY => {}
                Err(err) => bail!("{what}: {err}"),
            }
            if start.elapsed().as_millis() as u64 > self.watchdog_ms {
                bail!("{what}: still running after {} ms (--sync-watchdog-ms); the GPU is hung or the kernel is very slow", self.watchdog_ms);
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    fn copy(&mut self, dst: u64, src: u64, n: usize, k: i32, stream: H, what: &str) -> Result<()> {
        hip!(self.api, hipMemcpyAsync(dst, src, n, k, stream))?;
        if k != kind::D2D {
            // The host side is a buffer of this replay: wait until the copy is done with it.
            self.wait(stream, what)?;
        }
        Ok(())
    }

    fn h2d(&mut self, ev: &Event, dst: u64, data: &[u8]) -> Result<()> {
        let stream = self.stream(ev)?;
        let what = format!("H2D copy (event #{})", ev.seq);
        self.copy(
            dst,
            data.as_ptr() as u64,
            data.len(),
            kind::H2D,
            stream,
            &what,
        )
    }

    fn d2h(&mut self, ev: &Event, src: u64, n: usize) -> Result<Outcome> {
        let stream = self.stream(ev)?;
        let mut got = vec![0u8; n];
        let what = format!("D2H copy (event #{})", ev.seq);
        self.copy(got.as_mut_ptr() as u64, src, n, kind::D2H, stream, &what)?;
        Ok(Outcome::D2h {
            got,
            expected: object(&ev.fields, "d2h_blob"),
        })
    }

    fn launch(&mut self, ev: &Event, filter: Option<&str>) -> Result<Outcome> {
        let f = &ev.fields;
        let kernel = text(f, "kernel");
        if u(f, "in_capture").unwrap_or(0) != 0 {
            return Ok(Outcome::Skipped(
                "launch inside stream capture (graphs are not replayed)".into(),
            ));
        }
        if u(f, "args_known").unwrap_or(1) == 0 {
            return Ok(Outcome::Skipped(format!(
                "argument layout of `{kernel}` unknown"
            )));
        }
        if filter.is_some_and(|p| !kernel.contains(p)) {
            return Ok(Outcome::Filtered);
        }
        let func = if ev.name == "hipModuleLaunchKernel" {
            self.handle(u(f, "function")?)?
        } else {
            self.function(object(f, "code"), &kernel)?
        };
        let stream = self.stream(ev)?;
        let mut args = bytes(f, "args").to_vec();
        let offs = u64s(f, "arg_offsets");
        if !self.mem.moved.is_empty() {
            for (o, s) in offs.iter().zip(u64s(f, "arg_sizes")) {
                let o = *o as usize;
                if s == 8 && o + 8 <= args.len() {
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
        let result = if u(f, "cooperative").unwrap_or(0) != 0 {
            let mut ptrs: Vec<*mut c_void> = offs
                .iter()
                .map(|&o| args[o as usize..].as_mut_ptr() as *mut c_void)
                .collect();
            hip!(
                self.api,
                hipModuleLaunchCooperativeKernel(
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
        } else {
            let mut size = args.len();
            // Zeros past the arguments: a runtime that reads the whole kernarg segment from
            // the buffer (hidden arguments included) reads them rather than beyond it.
            args.resize(size + 1024, 0);
            let mut extra: [*mut c_void; 5] = [
                std::ptr::without_provenance_mut(1), // HIP_LAUNCH_PARAM_BUFFER_POINTER
                args.as_mut_ptr() as *mut c_void,
                std::ptr::without_provenance_mut(2), // HIP_LAUNCH_PARAM_BUFFER_SIZE
                &mut size as *mut usize as *mut c_void,
                std::ptr::without_provenance_mut(3), // HIP_LAUNCH_PARAM_END
            ];
            hip!(
                self.api,
                hipModuleLaunchKernel(
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
        if self.sync_after_launch || self.watchdog_ms > 0 {
            self.wait(stream, &format!("kernel `{kernel}` (event #{})", ev.seq))?;
        }
        Ok(Outcome::Launched)
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

    fn runtime(&self) -> String {
        self.api.path.clone()
    }

    fn preflight(&self, meta: Option<&serde_json::Value>) -> Result<()> {
        let Some(meta) = meta else { return Ok(()) };
        let base = |a: &str| a.split(':').next().unwrap_or("").to_string();
        if let Some(arch) = meta["devices"][0]["gcn_arch_name"].as_str() {
            if !self.arch.is_empty() && base(arch) != base(&self.arch) {
                // A fat binary may hold code for this GPU too: loading the code objects decides.
                eprintln!("[HRR] Note: the archive was captured on {arch}; this device is {}. Code objects without code for it will fail to load.", self.arch);
            }
        }
        if let Some(recorded) = meta["runtime_version"].as_i64() {
            let (then, now) = (
                recorded / 10_000_000,
                self.runtime_version as i64 / 10_000_000,
            );
            if now > 0 && then > now {
                eprintln!(
                    "[HRR] Note: the archive was captured with HIP {recorded}; this runtime is {}.",
                    self.runtime_version
                );
            }
        }
        Ok(())
    }

    fn preload(&mut self, code: &[(ObjectId, PathBuf, bool)]) -> Result<()> {
        for (id, path, _) in code {
            if self.module_of_code.contains_key(id) {
                continue;
            }
            let image = read_code(path)?;
            let mut m: H = std::ptr::null_mut();
            hip!(
                self.api,
                hipModuleLoadData(&mut m, image.as_ptr() as *const c_void)
            )
            .with_context(|| format!("loading code object {id}"))?;
            self.module_of_code.insert(*id, (m, image));
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
        Ok(match ev.name {
            "hipMalloc" | "hipExtMallocWithFlags" | "hipMallocAsync" => {
                self.mem
                    .alloc(&self.api, u(f, "dptr")?, u(f, "bytesize")?)?;
                Outcome::Done
            }
            "hipMallocPitch" => {
                let size = u(f, "pitch")? * u(f, "height")?;
                self.mem.alloc(&self.api, u(f, "dptr")?, size)?;
                Outcome::Done
            }
            "hipMallocManaged" => {
                let (mut p, size) = (0u64, u(f, "bytesize")?);
                hip!(
                    self.api,
                    hipMallocManaged(&mut p, size as usize, u(f, "flags")? as u32)
                )?;
                self.mem.note_moved(u(f, "dptr")?, size, p);
                Outcome::Done
            }
            "hipFree" | "hipFreeAsync" => {
                self.mem.free(&self.api, u(f, "dptr")?)?;
                Outcome::Done
            }
            "hipHostMalloc" => {
                let (mut p, size) = (0u64, u(f, "bytesize")?);
                hip!(
                    self.api,
                    hipHostMalloc(&mut p, size as usize, u(f, "flags").unwrap_or(0) as u32)
                )?;
                self.mem.note_moved(u(f, "host_ptr")?, size, p);
                Outcome::Done
            }
            "hipHostRegister" => {
                // Pinned memory standing in for the registered range, with its recorded contents.
                let (mut p, size) = (0u64, u(f, "bytesize")?);
                hip!(self.api, hipHostMalloc(&mut p, size as usize, 0))?;
                if let Some(data) = blobs(object(f, "contents"))? {
                    let n = data.len().min(size as usize);
                    // SAFETY: p is a fresh host allocation of `size` bytes.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u8, n) };
                }
                self.mem.note_moved(u(f, "host_ptr")?, size, p);
                Outcome::Done
            }
            "hipHostFree" | "hipHostUnregister" => {
                let rec = u(f, "host_ptr")?;
                let now = self.mem.translate(rec);
                if now != rec {
                    hip!(self.api, hipHostFree(now))?;
                    self.mem.moved.remove(&rec);
                }
                Outcome::Done
            }
            "hipMemAddressReserve" => {
                let (rec, size) = (u(f, "ptr")?, u(f, "size")?);
                if self.mem.prop.is_some() && self.mem.covered(rec, size) {
                    return Ok(Outcome::Done); // placed: inside a reservation made at start
                }
                let hint = if opts.no_placement { 0 } else { rec };
                let mut got = 0u64;
                hip!(
                    self.api,
                    hipMemAddressReserve(
                        &mut got,
                        size as usize,
                        u(f, "alignment")? as usize,
                        hint,
                        0
                    )
                )?;
                self.mem.note_moved(rec, size, got);
                Outcome::Done
            }
            "hipMemAddressFree" => {
                let (rec, size) = (u(f, "ptr")?, u(f, "size")?);
                if !(self.mem.prop.is_some() && self.mem.covered(rec, size)) {
                    hip!(
                        self.api,
                        hipMemAddressFree(self.mem.translate(rec), size as usize)
                    )?;
                    self.mem.moved.remove(&rec);
                }
                Outcome::Done
            }
            "hipMemCreate" => {
                let prop = self.mem.prop.unwrap_or_else(|| {
                    allocation_prop(self.dev, self.runtime_version < 60_000_000)
                });
                let mut h = 0u64;
                hip!(
                    self.api,
                    hipMemCreate(
                        &mut h,
                        u(f, "size")? as usize,
                        prop.as_ptr(),
                        u(f, "flags")?
                    )
                )?;
                self.vmm.insert(u(f, "handle")?, h);
                Outcome::Done
            }
            "hipMemRelease" => {
                if let Some(h) = self.vmm.remove(&u(f, "handle")?) {
                    hip!(self.api, hipMemRelease(h))?;
                }
                Outcome::Done
            }
            "hipMemMap" => {
                let h = *self
                    .vmm
                    .get(&u(f, "handle")?)
                    .ok_or_else(|| anyhow!("hipMemMap of an unknown allocation handle"))?;
                hip!(
                    self.api,
                    hipMemMap(
                        self.mem.translate(u(f, "ptr")?),
                        u(f, "size")? as usize,
                        u(f, "offset")? as usize,
                        h,
                        0
                    )
                )?;
                Outcome::Done
            }
            "hipMemUnmap" => {
                hip!(
                    self.api,
                    hipMemUnmap(self.mem.translate(u(f, "ptr")?), u(f, "size")? as usize)
                )?;
                Outcome::Done
            }
            "hipMemSetAccess" => {
                let n = u(f, "count")?.max(1) as usize;
                let desc: Vec<u8> = (0..n).flat_map(|_| rw_access(self.dev)).collect();
                hip!(
                    self.api,
                    hipMemSetAccess(
                        self.mem.translate(u(f, "ptr")?),
                        u(f, "size")? as usize,
                        desc.as_ptr(),
                        n
                    )
                )?;
                Outcome::Done
            }
            "hipMemcpyHtoD" | "hipMemcpyHtoDAsync" => {
                let Some(data) = blobs(object(f, "h2d_blob"))? else {
                    return Ok(Outcome::Skipped("H2D source not recorded".into()));
                };
                let dst = self.mem.translate(u(f, "dst")?);
                self.h2d(ev, dst, &data)?;
                Outcome::Done
            }
            "hipMemcpyDtoH" | "hipMemcpyDtoHAsync" => {
                let src = self.mem.translate(u(f, "src")?);
                return self.d2h(ev, src, u(f, "bytes")? as usize);
            }
            "hipMemcpyDtoD" | "hipMemcpyDtoDAsync" => {
                let stream = self.stream(ev)?;
                let (dst, src) = (
                    self.mem.translate(u(f, "dst")?),
                    self.mem.translate(u(f, "src")?),
                );
                self.copy(dst, src, u(f, "bytes")? as usize, kind::D2D, stream, "")?;
                Outcome::Done
            }
            "hipMemcpy" | "hipMemcpyAsync" | "hipMemcpyWithStream" => {
                let n = u(f, "bytes")? as usize;
                let (dst, src) = (
                    self.mem.translate(u(f, "dst")?),
                    self.mem.translate(u(f, "src")?),
                );
                match u(f, "direction")? as u8 {
                    0 => {
                        let stream = self.stream(ev)?;
                        self.copy(dst, src, n, kind::D2D, stream, "")?;
                    }
                    1 => {
                        let Some(data) = blobs(object(f, "h2d_blob"))? else {
                            return Ok(Outcome::Skipped("H2D source not recorded".into()));
                        };
                        self.h2d(ev, dst, &data)?;
                    }
                    2 => return self.d2h(ev, src, n),
                    _ => return Ok(Outcome::Skipped("host-to-host copy".into())),
                }
                Outcome::Done
            }
            "hipMemset" | "hipMemsetAsync" | "hipMemsetD8" | "hipMemsetD8Async"
            | "hipMemsetD16" | "hipMemsetD16Async" | "hipMemsetD32" | "hipMemsetD32Async" => {
                let dst = self.mem.translate(u(f, "dst")?);
                let (v, n) = (u(f, "value")?, u(f, "count")? as usize);
                let s = self.stream(ev)?;
                match u(f, "element_bytes")? {
                    1 => hip!(self.api, hipMemsetD8Async(dst, v as u8, n, s))?,
                    2 => hip!(self.api, hipMemsetD16Async(dst, v as u16, n, s))?,
                    _ => hip!(self.api, hipMemsetD32Async(dst, v as u32 as i32, n, s))?,
                }
                Outcome::Done
            }
            "hipMemcpyToSymbol" | "hipMemcpyToSymbolAsync" => {
                let (addr, size) = self.global(object(f, "code"), &text(f, "name"))?;
                let (off, n) = (u(f, "offset")?, u(f, "bytes")?);
                if off + n > size {
                    bail!("copy of {n} bytes at offset {off} into a {size}-byte variable");
                }
                if u(f, "direction")? == 0 {
                    let stream = self.stream(ev)?;
                    let src = self.mem.translate(u(f, "src")?);
                    self.copy(addr + off, src, n as usize, kind::D2D, stream, "")?;
                } else {
                    let Some(data) = blobs(object(f, "h2d_blob"))? else {
                        return Ok(Outcome::Skipped("H2D source not recorded".into()));
                    };
                    self.h2d(ev, addr + off, &data)?;
                }
                Outcome::Done
            }
            "hipMemcpyFromSymbol" | "hipMemcpyFromSymbolAsync" => {
                let (addr, _) = self.global(object(f, "code"), &text(f, "name"))?;
                let (off, n) = (u(f, "offset")?, u(f, "bytes")? as usize);
                if u(f, "direction")? == 0 {
                    let stream = self.stream(ev)?;
                    let dst = self.mem.translate(u(f, "dst")?);
                    self.copy(dst, addr + off, n, kind::D2D, stream, "")?;
                    Outcome::Done
                } else {
                    return self.d2h(ev, addr + off, n);
                }
            }
            "hipGetSymbolAddress" => {
                let (addr, size) = self.global(object(f, "code"), &text(f, "name"))?;
                self.mem.note_moved(u(f, "dptr")?, size, addr);
                Outcome::Done
            }
            "hipModuleGetGlobal" => {
                let m = self.handle(u(f, "owner")?)?;
                let name = CString::new(text(f, "name"))?;
                let (mut p, mut n) = (0u64, 0usize);
                hip!(
                    self.api,
                    hipModuleGetGlobal(&mut p, &mut n, m, name.as_ptr())
                )?;
                self.mem.note_moved(u(f, "dptr")?, n as u64, p);
                Outcome::Done
            }
            "hipModuleLoad" | "hipModuleLoadData" | "hipModuleLoadDataEx" => {
                let m = self.module(object(f, "code"))?;
                self.handles.insert(u(f, "module")?, m);
                Outcome::Done
            }
            "hipModuleGetFunction" => {
                let m = self.handle(u(f, "module")?)?;
                let name = CString::new(text(f, "name"))?;
                let mut h: H = std::ptr::null_mut();
                hip!(self.api, hipModuleGetFunction(&mut h, m, name.as_ptr()))?;
                self.handles.insert(u(f, "function")?, h);
                Outcome::Done
            }
            "hipLaunchKernel"
            | "hipLaunchCooperativeKernel"
            | "hipExtLaunchKernel"
            | "hipModuleLaunchKernel" => return self.launch(ev, opts.kernel_filter.as_deref()),
            "hipStreamCreate" | "hipStreamCreateWithFlags" | "hipStreamCreateWithPriority" => {
                let mut s: H = std::ptr::null_mut();
                let flags = u(f, "flags")? as u32;
                match u(f, "priority") {
                    Ok(p) => hip!(
                        self.api,
                        hipStreamCreateWithPriority(&mut s, flags, p as i32)
                    )?,
                    Err(_) => hip!(self.api, hipStreamCreateWithFlags(&mut s, flags))?,
                }
                self.handles.insert(u(f, "stream")?, s);
                Outcome::Done
            }
            "hipStreamDestroy" => {
                let rec = u(f, "stream")?;
                hip!(self.api, hipStreamDestroy(self.handle(rec)?))?;
                self.handles.remove(&rec);
                Outcome::Done
            }
            "hipStreamSynchronize" => {
                let s = self.stream(ev)?;
                self.wait(s, &format!("hipStreamSynchronize (event #{})", ev.seq))?;
                Outcome::Done
            }
            "hipDeviceSynchronize" => {
                hip!(self.api, hipDeviceSynchronize())?;
                Outcome::Done
            }
            "hipStreamWaitEvent" => {
                hip!(
                    self.api,
                    hipStreamWaitEvent(
                        self.stream(ev)?,
                        self.handle(u(f, "event")?)?,
                        u(f, "flags")? as u32
                    )
                )?;
                Outcome::Done
            }
            "hipEventCreate" | "hipEventCreateWithFlags" => {
                let mut e: H = std::ptr::null_mut();
                hip!(
                    self.api,
                    hipEventCreateWithFlags(&mut e, u(f, "flags")? as u32)
                )?;
                self.handles.insert(u(f, "event")?, e);
                Outcome::Done
            }
            "hipEventRecord" => {
                hip!(
                    self.api,
                    hipEventRecord(self.handle(u(f, "event")?)?, self.stream(ev)?)
                )?;
                Outcome::Done
            }
            "hipEventSynchronize" => {
                hip!(self.api, hipEventSynchronize(self.handle(u(f, "event")?)?))?;
                Outcome::Done
            }
            "hipEventDestroy" => {
                let rec = u(f, "event")?;
                hip!(self.api, hipEventDestroy(self.handle(rec)?))?;
                self.handles.remove(&rec);
                Outcome::Done
            }
            "hipGraphLaunch" => Outcome::Skipped("HIP graph launches are not replayed yet".into()),
            "hipLaunchHostFunc" => Outcome::Skipped("host callbacks are not in the archive".into()),
            // Queries, device selection (device 0 is used), registrations (launches name their
            // code object), unloads (code stays loaded, shared by code object) and stream
            // capture bookkeeping change no device state replay depends on.
            _ => Outcome::Ignored,
        })
    }

    fn finish(&mut self) -> Result<()> {
        hip!(self.api, hipDeviceSynchronize())?;
        Ok(())
    }

    fn placement(&self) -> Placement {
        Placement {
            placed: self.mem.placed,
            translated: self.mem.translated,
            first_refusal: self.mem.first_refusal.clone(),
        }
    }
}

fn read_code(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read code object {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_props_follow_each_layout() {
        let new = allocation_prop(3, false);
        assert_eq!(&new[0..4], &1i32.to_le_bytes()); // type pinned
        assert_eq!(&new[8..16], &[1, 0, 0, 0, 3, 0, 0, 0]); // location {device, 3}
        let old = allocation_prop(3, true);
        assert_eq!(&old[4..12], &[1, 0, 0, 0, 3, 0, 0, 0]); // location {device, 3}
        assert_eq!(&old[16..20], &1i32.to_le_bytes()); // type pinned
        let mut props = vec![0u8; 1024];
        props[..5].copy_from_slice(b"Card\0");
        props[396..403].copy_from_slice(b"gfx942\0");
        assert_eq!(arch_name(&props).as_deref(), Some("gfx942"));
    }
}
