//! Large D2H results digested on the GPU ([`hrr_archive::digest`], FORMAT.md §7): the kernel of
//! `crates/hrr-capture/gpu/digest.cu`, its PTX embedded, loaded into a context at the program's
//! first event record after an allocation that can hold a large result ([`prepare`],
//! [`before_event_record`]; else at the first large result the context copies back), launched
//! after the program's blocking copy returned, on a stream of capture's own, writing the
//! digests into mapped pinned memory. The module holds no constant data, whose device memory the
//! driver would allocate at the load among the program's allocations (a 6% slower tf32 GEMM on an
//! H100; `digest.cu`): `hrr_fingerprint` is handed its secret ([`fingerprint_secret`]) by value.
//! A 64 MiB result takes ~40 µs there (H100) against
//! milliseconds on the host, so a loop copying back 64 MiB per repetition no longer waits for
//! the host to read every byte. A large async result ([`behind`]) has the same kernel enqueued
//! on the copy's own stream right behind the copy, writing into a mapped buffer the pending
//! result holds; its digests are read when the result is recorded (the synchronisation that
//! made it visible), so that synchronisation does not read the result on the host
//! (`HRR_CAPTURE_ASYNC_DIGESTS=0`: the host reads async results).
//!
//! Only where the kernel can read what the copy read, and without disturbing the program: the
//! source is device memory of the current context itself, or memory that belongs to no context
//! (mapped into a reserved range with `cuMemMap`: PyTorch's expandable segments; allocated from
//! a memory pool: `cuMemAllocAsync`) where the current device may read every mapping the result
//! spans (its access flags; on an H100 both kinds answer a null context and their mappings'
//! access, base and size); not managed memory, whose pages the kernel would migrate; not another
//! context's or device's memory, which the kernel could not reach: a fault there would break the
//! program's context. 8-byte aligned, a whole number of 8-byte words. capture's driver calls
//! run in the relaxed stream-capture mode
//! (`cuThreadExchangeStreamCaptureMode`), so a graph another thread is capturing is not
//! invalidated by them. The kernel is waited for at most [`WAIT`]: a GPU kept busy by the
//! program's own kernels gets the host's digests instead of stalling the program's copy. The
//! first result of each context is checked against the host's digest of its first chunk; a
//! context where the module does not load, a launch fails, that check disagrees or the wait
//! runs out gets its digests from the host from then on (said once on stderr). Each context
//! holds the module, a stream and 2 MiB of mapped pinned memory for the digests and
//! fingerprints (a result of more than 4 GiB is digested 4 GiB at a time), and 2 MiB more for
//! the digests of pending async results ([`spare_buffers`]); a context destroyed or reset
//! forgets them ([`forget`]).
//!
//! A result that lands in host-visible memory the tracker watches (`super::hostmem`: mapped
//! pinned memory, simpleStreams' registered buffer) also has the tracker's fingerprints of the
//! 64 KiB chunks it covers whole taken by the same module's `hrr_fingerprint` (XXH3-128, as
//! `crate::fingerprint` computes it), so that the tracker need not read the result on the host
//! to know it (`crate::fingerprint::remember_pieces`). Checked like the digests, against the
//! host's fingerprint of the first chunk, once per context. A wrong fingerprint could only make
//! the tracker record bytes the host holds as a host write it did not make (the next scan finds
//! them "changed"), never miss one.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use hrr_archive::digest::{chunk_digest, CHUNK};

use super::custom::{ATTR_IS_MANAGED, ATTR_MEMORY_TYPE, DEVICEMAP, MEMORYTYPE_DEVICE};
use super::loader::driver_fn;

/// The kernel's PTX, NUL-terminated for `cuModuleLoadData`.
const PTX: &str = concat!(include_str!("../../../gpu/digest.ptx"), "\0");
/// Threads per block (the kernel's `__launch_bounds__`).
const THREADS: c_uint = 256;
/// Chunks one launch digests or fingerprints (each of the two halves of a context's buffer,
/// 16 bytes a chunk).
const SEGMENT_CHUNKS: usize = 1 << 16;
/// XXH3's default secret (192 bytes, as twox_hash has it), `hrr_fingerprint`'s fourth
/// parameter: by value, so that the module holds no constant data, whose device memory the
/// driver would allocate at its load (`digest.cu`).
fn fingerprint_secret() -> &'static [u8] {
    static SECRET: OnceLock<Box<[u8]>> = OnceLock::new();
    SECRET.get_or_init(|| twox_hash::XxHash3_128::new().into_secret())
}
/// The secret's length, as `hrr_fingerprint` declares it.
#[cfg(test)]
const SECRET_BYTES: usize = 192;
/// Threads `hrr_fingerprint` takes per chunk (a warp).
const FINGERPRINT_THREADS: usize = 32;
/// The buffers for the digests of pending async results allocated with the module: (how many,
/// bytes each; 16 bytes hold a 64 KiB chunk's digest), [`spare_buffers`].
const SPARE: [(usize, usize); 2] = [(64, 16 << 10), (8, 128 << 10)];
/// How long a launch is waited for before the host takes over.
const WAIT: std::time::Duration = std::time::Duration::from_millis(250);
/// `CU_POINTER_ATTRIBUTE_CONTEXT`; `CUDA_ERROR_NOT_READY`; `CU_STREAM_CAPTURE_MODE_RELAXED`.
const ATTR_CONTEXT: c_int = 1;
/// `CU_POINTER_ATTRIBUTE_ACCESS_FLAGS`, `_MAPPING_SIZE`, `_MAPPING_BASE_ADDR`; the read bit of
/// `CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ` (1) and `_READWRITE` (3).
const ATTR_ACCESS_FLAGS: c_int = 16;
const ATTR_MAPPING_SIZE: c_int = 18;
const ATTR_MAPPING_BASE: c_int = 19;
const ACCESS_READ: c_int = 1;
const NOT_READY: c_int = 600;
const CAPTURE_MODE_RELAXED: c_int = 2;
/// `CU_STREAM_NON_BLOCKING`: capture's stream waits for no work of the program's.
const STREAM_NON_BLOCKING: c_uint = 1;

type Ptr = *mut c_void;
/// `cuLaunchKernel`: function, grid x, y, z, block x, y, z, shared bytes, stream, parameters,
/// extra.
type LaunchFn = unsafe extern "C" fn(
    Ptr,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Ptr,
    *mut Ptr,
    *mut Ptr,
) -> c_int;

/// The driver's entry points used: the real driver's, never capture's wrappers.
struct Fns {
    ctx_get_current: unsafe extern "C" fn(*mut Ptr) -> c_int,
    ctx_get_id: unsafe extern "C" fn(Ptr, *mut u64) -> c_int,
    pointer_attribute: PointerAttributeFn,
    module_load_data: unsafe extern "C" fn(*mut Ptr, *const c_void) -> c_int,
    module_get_function: unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> c_int,
    stream_create: unsafe extern "C" fn(*mut Ptr, c_uint) -> c_int,
    host_alloc: unsafe extern "C" fn(*mut Ptr, usize, c_uint) -> c_int,
    host_device_pointer: unsafe extern "C" fn(*mut u64, Ptr, c_uint) -> c_int,
    launch: LaunchFn,
    stream_query: unsafe extern "C" fn(Ptr) -> c_int,
    /// `cuThreadExchangeStreamCaptureMode` (drivers before CUDA 10.1 lack it).
    exchange_capture_mode: Option<unsafe extern "C" fn(*mut c_int) -> c_int>,
}

/// The entry points, looked up once; `None` when the driver lacks one.
fn fns() -> Option<&'static Fns> {
    static FNS: OnceLock<Option<Fns>> = OnceLock::new();
    FNS.get_or_init(|| unsafe {
        Some(Fns {
            ctx_get_current: driver_fn(c"cuCtxGetCurrent")?,
            ctx_get_id: driver_fn(c"cuCtxGetId")?,
            pointer_attribute: driver_fn(c"cuPointerGetAttribute")?,
            module_load_data: driver_fn(c"cuModuleLoadData")?,
            module_get_function: driver_fn(c"cuModuleGetFunction")?,
            stream_create: driver_fn(c"cuStreamCreate")?,
            host_alloc: driver_fn(c"cuMemHostAlloc")?,
            host_device_pointer: driver_fn(c"cuMemHostGetDevicePointer_v2")?,
            launch: driver_fn(c"cuLaunchKernel")?,
            stream_query: driver_fn(c"cuStreamQuery")?,
            exchange_capture_mode: driver_fn(c"cuThreadExchangeStreamCaptureMode"),
        })
    })
    .as_ref()
}

/// What a context holds of the kernels.
struct Loaded {
    function: Ptr,
    /// `hrr_fingerprint`, while its fingerprints are taken (`None`: the host reads them).
    fingerprint: Option<Ptr>,
    stream: Ptr,
    /// Mapped pinned memory for [`SEGMENT_CHUNKS`] digests, then as many fingerprints: the
    /// host's address, the device's.
    out: (Ptr, u64),
    /// Whether a result's digests were checked against the host's.
    checked: bool,
    /// Whether fingerprints were.
    fingerprints_checked: bool,
    /// Mapped pinned buffers for async results' digests ([`behind`]) no result holds now: host
    /// address, device address, bytes.
    spare: Vec<(Ptr, u64, usize)>,
}

/// A context's state: loaded, digests taken by the host, or waiting to be loaded ([`prepare`]).
enum Slot {
    Ready(Loaded),
    Off,
    /// Marked by [`prepare`]: loaded at the context's next event record
    /// ([`before_event_record`]) or first large result ([`loaded`]).
    Wanted,
}

// SAFETY: the handles are the driver's, usable from any thread; the map's lock orders their use.
unsafe impl Send for Slot {}

/// The contexts seen, by their unique id (`cuCtxGetId`: a context destroyed and another created
/// at the same address get different ids).
fn contexts() -> std::sync::MutexGuard<'static, HashMap<u64, Slot>> {
    static MAP: OnceLock<Mutex<HashMap<u64, Slot>>> = OnceLock::new();
    MAP.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Context `id`'s slot, the kernels loaded into the current context first where they are not
/// yet (none, or [`Slot::Wanted`]).
///
/// # Safety
/// `id` is the current context's; called in the relaxed capture mode ([`Relaxed`]).
unsafe fn loaded<'m>(map: &'m mut HashMap<u64, Slot>, id: u64, f: &Fns) -> &'m mut Slot {
    let slot = map.entry(id).or_insert(Slot::Wanted);
    if matches!(slot, Slot::Wanted) {
        *slot = load(f);
    }
    slot
}

/// The chunk digests of the `host.len()` bytes a blocking copy just copied from device address
/// `src` into `host`, taken on the GPU; `None`: the host takes them ([module docs](self)).
///
/// # Safety
/// Called on the thread whose current context made the copy, after it returned successfully.
pub unsafe fn device_digests(src: u64, host: &[u8]) -> Option<Vec<[u8; 16]>> {
    taken_on_device(src, host.len(), &host[..CHUNK.min(host.len())], Some(host))
}

/// The chunk digests of `n` bytes of device memory at `src` that no copy brought to the host
/// (what a freed allocation held: `super::freecheck`), taken on the GPU; `first`: its first
/// chunk as the host read it, to check the first use against. `None`: not taken.
///
/// # Safety
/// Called on a thread whose current context holds `src`, with no work left writing it.
pub unsafe fn device_memory_digests(src: u64, n: usize, first: &[u8]) -> Option<Vec<[u8; 16]>> {
    taken_on_device(src, n, first, None)
}

/// [`device_digests`] of `n` bytes at `src` whose first chunk the host holds as `first`; `host`:
/// the whole result where a copy brought it to the host (its chunks in tracked host-visible
/// memory are fingerprinted on the GPU too).
unsafe fn taken_on_device(
    src: u64,
    n: usize,
    first: &[u8],
    host: Option<&[u8]>,
) -> Option<Vec<[u8; 16]>> {
    if n == 0 || !n.is_multiple_of(8) || !src.is_multiple_of(8) || first.len() != CHUNK.min(n) {
        return None;
    }
    let f = fns()?;
    let id = context_holding(f, src, n)?;
    let _relaxed = Relaxed::enter(f);
    let mut map = contexts();
    let slot = loaded(&mut map, id, f);
    let Slot::Ready(gpu) = slot else {
        return None;
    };
    let why = match run(f, gpu, src, n) {
        Ok(d) if agrees(gpu, &d, first) => {
            if let Some(host) = host {
                fingerprint_covered(f, gpu, src, host);
            }
            return Some(d);
        }
        Ok(_) => DISAGREE,
        Err(why) => why,
    };
    give_up(slot, why);
    None
}

/// Why a context's digests are given up when they differ from the host's.
const DISAGREE: &str = "disagree with the host's";

/// Do a result's GPU digests `d` agree with the host's digest of its `first` chunk? Checked at
/// a context's first result only ([module docs](self)).
fn agrees(gpu: &mut Loaded, d: &[[u8; 16]], first: &[u8]) -> bool {
    if !gpu.checked && d.first() != Some(&chunk_digest(first)) {
        return false;
    }
    gpu.checked = true;
    true
}

/// The host takes this context's digests from now on (`why`: said once).
fn give_up(slot: &mut Slot, why: &str) {
    crate::recorder::notice(&format!(
        "GPU digests of D2H results {why} in this context; the host takes them"
    ));
    *slot = Slot::Off;
}

/// The `chunks` 16-byte digests the kernel wrote at `host`.
///
/// # Safety
/// `host` is readable for `chunks * 16` bytes the kernel finished writing.
unsafe fn digests_at(host: Ptr, chunks: usize) -> impl Iterator<Item = [u8; 16]> {
    std::slice::from_raw_parts(host as *const u8, chunks * 16)
        .chunks_exact(16)
        .map(|d| <[u8; 16]>::try_from(d).expect("16"))
}

/// The current context and its unique id; `None` without one.
unsafe fn current_context(f: &Fns) -> Option<(Ptr, u64)> {
    let mut ctx: Ptr = std::ptr::null_mut();
    let mut id = 0u64;
    let ok =
        (f.ctx_get_current)(&mut ctx) == 0 && !ctx.is_null() && (f.ctx_get_id)(ctx, &mut id) == 0;
    ok.then_some((ctx, id))
}

/// The unique id of the current context, when its kernels can read the `n` bytes at `src`
/// ([`in_this_context`]).
unsafe fn context_holding(f: &Fns, src: u64, n: usize) -> Option<u64> {
    let (ctx, id) = current_context(f)?;
    in_this_context(f, src, n, ctx).then_some(id)
}

/// Right after an async D2H copy of `n` bytes from `src` was enqueued on `stream` (not being
/// captured into a graph): the kernel enqueued behind it on the same stream, so that it reads
/// what the copy read, writing the result's chunk digests into mapped pinned memory the
/// result holds until recorded; the host then reads 16 bytes per 64 KiB instead of the
/// result (simpleMultiCopy's loops synchronise behind a 16 MiB download each time). For
/// results of [`crate::recorder::digest_min`] bytes or more (as blocking ones), under the
/// conditions of the [module docs](self); `None`: the host takes the result's bytes. The
/// program's stream runs one more kernel (~10 us for 16 MiB on an H100). Off with
/// `HRR_CAPTURE_ASYNC_DIGESTS=0` (`crate::hook::profile::async_digests`).
///
/// # Safety
/// Called on the thread whose current context enqueued the copy, right after it was.
pub unsafe fn behind(
    src: u64,
    n: usize,
    stream: Ptr,
) -> Option<Box<dyn crate::hook::common::DigestsBehind>> {
    if !crate::hook::profile::async_digests()
        || (n as u64) < crate::recorder::digest_min()
        || hrr_archive::digest::ResultDigest::stored_len(n) == n
        || !n.is_multiple_of(8)
        || !src.is_multiple_of(8)
    {
        return None;
    }
    let f = fns()?;
    let ctx = context_holding(f, src, n)?;
    let chunks = n.div_ceil(CHUNK);
    let grid = c_uint::try_from(chunks).ok()?;
    let _relaxed = Relaxed::enter(f);
    let mut map = contexts();
    let Slot::Ready(gpu) = loaded(&mut map, ctx, f) else {
        return None;
    };
    // (the smallest spare buffer that holds the digests; none: the host reads the result,
    // as allocating one here would wait for the device to go idle, [`spare_buffers`])
    let bytes = chunks * 16;
    let fits = gpu.spare.iter().enumerate().filter(|(_, b)| b.2 >= bytes);
    let (i, _) = fits.min_by_key(|(_, b)| b.2)?;
    let buffer = gpu.spare.swap_remove(i);
    if !launch(
        f,
        gpu.function,
        grid,
        [src, (n / 8) as u64, buffer.1],
        stream,
    ) {
        gpu.spare.push(buffer);
        return None;
    }
    Some(Box::new(Behind {
        ctx,
        buffer,
        chunks,
    }))
}

/// The digests [`behind`] has the GPU write: the context, the buffer (host address, device
/// address, bytes), the chunks.
struct Behind {
    ctx: u64,
    buffer: (Ptr, u64, usize),
    chunks: usize,
}

// SAFETY: the buffer is the driver's mapped memory, readable from any thread; the context map's
// lock orders its reuse.
unsafe impl Send for Behind {}

impl crate::hook::common::DigestsBehind for Behind {
    unsafe fn take(self: Box<Self>, first: &[u8]) -> Option<Vec<[u8; 16]>> {
        // (the map's lock, a local, is released before `self`, a parameter, is dropped and
        // gives its buffer back to the context)
        let mut map = contexts();
        // (a context gone took its buffers with it: the host reads the result)
        let slot = map.get_mut(&self.ctx)?;
        let Slot::Ready(gpu) = slot else {
            return None;
        };
        let digests: Vec<[u8; 16]> = digests_at(self.buffer.0, self.chunks).collect();
        if agrees(gpu, &digests, first) {
            return Some(digests);
        }
        give_up(slot, DISAGREE);
        None
    }
}

impl Drop for Behind {
    fn drop(&mut self) {
        // (the copy's stream passed the kernel: the buffer is free for another result)
        if let Some(Slot::Ready(gpu)) = contexts().get_mut(&self.ctx) {
            gpu.spare.push(self.buffer);
        }
    }
}

/// The tracker's fingerprints of the chunks of host-visible memory the copy of `host.len()`
/// bytes from `src` into `host` covers whole, taken on the GPU and handed to the tracker
/// ([module docs](self)); nothing when it covers none, or where the GPU's are not taken.
unsafe fn fingerprint_covered(f: &Fns, gpu: &mut Loaded, src: u64, host: &[u8]) {
    let Some(function) = gpu.fingerprint else {
        return;
    };
    let dst = host.as_ptr() as u64;
    let Some((at, count)) = super::hostmem::chunks_to_cover(dst, host.len()) else {
        return;
    };
    let from = src + (at - dst);
    if !from.is_multiple_of(8) {
        return; // (the kernel reads 8-byte words)
    }
    let why = match fingerprints(f, gpu, function, from, count) {
        Ok(parts) => {
            let off = (at - dst) as usize;
            let first = &host[off..off + crate::fingerprint::PIECE];
            if gpu.fingerprints_checked || parts[0] == crate::fingerprint::of(first) {
                gpu.fingerprints_checked = true;
                crate::fingerprint::remember_pieces(at as usize, parts);
                return;
            }
            "disagree with the host's"
        }
        Err(why) => why,
    };
    crate::recorder::notice(&format!(
        "GPU fingerprints of D2H results {why} in this context; the host reads them"
    ));
    gpu.fingerprint = None;
}

/// A context goes (`cuCtxDestroy` of `ctx`; `None`: a primary context released or reset, whose
/// id may not be known any more): what it held of the kernel is forgotten (all contexts' for
/// `None`: they load it again at their next large result).
///
/// # Safety
/// `ctx` is a live context handle.
pub unsafe fn forget(ctx: Option<Ptr>) {
    let Some(f) = fns() else {
        return;
    };
    let mut map = contexts();
    match ctx {
        Some(c) => {
            let mut id = 0u64;
            if (f.ctx_get_id)(c, &mut id) == 0 {
                map.remove(&id);
            }
        }
        None => map.clear(),
    }
}

/// Runs capture's driver calls in the relaxed stream-capture mode, the thread's own mode
/// restored when dropped.
struct Relaxed(Option<(unsafe extern "C" fn(*mut c_int) -> c_int, c_int)>);

impl Relaxed {
    unsafe fn enter(f: &Fns) -> Relaxed {
        Relaxed(f.exchange_capture_mode.and_then(|exchange| {
            let mut mode = CAPTURE_MODE_RELAXED;
            (exchange(&mut mode) == 0).then_some((exchange, mode))
        }))
    }
}

impl Drop for Relaxed {
    fn drop(&mut self) {
        if let Some((exchange, mut mode)) = self.0 {
            // SAFETY: the driver's entry point, given the mode it handed out.
            unsafe { exchange(&mut mode) };
        }
    }
}

/// Can a kernel of context `ctx` read the `n` bytes at `src`: device memory (not managed) of
/// `ctx` itself, or memory mapped into a reserved range (`cuMemMap`, which belongs to no
/// context: PyTorch's expandable segments) that `ctx`'s device may read in every mapping the
/// bytes span ([`readable_mappings`])?
unsafe fn in_this_context(f: &Fns, src: u64, n: usize, ctx: Ptr) -> bool {
    if !plain_device_memory(f.pointer_attribute, src) {
        return false;
    }
    match pointer_attr::<usize>(f.pointer_attribute, ATTR_CONTEXT, src) {
        Some(owner) if owner == ctx as usize => true,
        Some(0) => readable_mappings(f.pointer_attribute, src, n),
        _ => false,
    }
}

/// Does the current context's device have read access to every mapping that the `n` bytes at
/// `src` span (`CU_POINTER_ATTRIBUTE_ACCESS_FLAGS` of each, stepping from one mapping to the next
/// by their base and size)? Access is set per mapping (`cuMemSetAccess`): a kernel reading one
/// the device may not would fault and break the program's context. `false` where the driver
/// does not answer these attributes.
///
/// # Safety
/// `attribute` is the driver's `cuPointerGetAttribute`.
unsafe fn readable_mappings(attribute: PointerAttributeFn, src: u64, n: usize) -> bool {
    let Some(end) = src.checked_add(n as u64) else {
        return false;
    };
    let mut at = src;
    while at < end {
        let (Some(access), Some(base), Some(size)) = (
            pointer_attr::<c_int>(attribute, ATTR_ACCESS_FLAGS, at),
            pointer_attr::<u64>(attribute, ATTR_MAPPING_BASE, at),
            pointer_attr::<usize>(attribute, ATTR_MAPPING_SIZE, at),
        ) else {
            return false;
        };
        let next = base.saturating_add(size as u64);
        if access & ACCESS_READ == 0 || base > at || next <= at {
            return false;
        }
        at = next;
    }
    true
}

/// Attribute `a` of `ptr` read as a `T` (the attribute's C type), or `None` where the driver
/// (`attribute`) does not answer.
///
/// # Safety
/// `attribute` is the driver's `cuPointerGetAttribute`; `T` is the attribute's type.
unsafe fn pointer_attr<T: Default>(attribute: PointerAttributeFn, a: c_int, ptr: u64) -> Option<T> {
    let mut value = T::default();
    (attribute(&mut value as *mut T as *mut c_void, a, ptr) == 0).then_some(value)
}

/// `cuPointerGetAttribute`.
pub type PointerAttributeFn = unsafe extern "C" fn(*mut c_void, c_int, u64) -> c_int;

/// Is `ptr` device memory, not managed memory, by the driver's pointer attributes
/// (`attribute`: the real `cuPointerGetAttribute`)?
///
/// # Safety
/// `attribute` is the driver's entry point.
pub unsafe fn plain_device_memory(attribute: PointerAttributeFn, ptr: u64) -> bool {
    pointer_attr::<c_uint>(attribute, ATTR_MEMORY_TYPE, ptr) == Some(MEMORYTYPE_DEVICE)
        && pointer_attr::<c_uint>(attribute, ATTR_IS_MANAGED, ptr) == Some(0)
}

/// The program allocated `bytes` of device memory in the current context: where that is enough
/// for a result digested on the GPU ([`crate::recorder::digest_min`]), the context is marked
/// for the kernels to be loaded at its next event record ([`before_event_record`]), so that the
/// module load, stream and pinned buffer (about a millisecond) are not paid inside the first
/// such result's copy, which programs time (simpleStreams' first timed region is one async
/// 64 MiB download, with [`behind`] the kernel enqueued behind it). Not loaded here: what the
/// load allocates on the device would move every later allocation of the program, and where
/// the program's data lands changes how fast its kernels run (tf32TensorCoreGemm built with
/// `-rdc=true` ran 6% slower on an H100 with 2 MiB allocated before its matrices, plainly as
/// captured). A context that never records an event loads them at its first large result.
///
/// # Safety
/// Called on the thread that made the allocation, right after it succeeded.
pub unsafe fn prepare(bytes: usize) {
    if (bytes as u64) < crate::recorder::digest_min() || !crate::hook::profile::digest_preload() {
        return;
    }
    let Some(f) = fns() else {
        return;
    };
    let Some((_, id)) = current_context(f) else {
        return;
    };
    if let std::collections::hash_map::Entry::Vacant(slot) = contexts().entry(id) {
        slot.insert(Slot::Wanted);
        ANY_WANTED.store(true, Ordering::Release);
    }
}

/// Whether a context may be [`Slot::Wanted`]: an event record's whole cost while none is.
static ANY_WANTED: AtomicBool = AtomicBool::new(false);

/// The program is about to record an event: where the current context is marked
/// ([`prepare`]), the kernels are loaded into it now, before the region the event may start.
///
/// # Safety
/// Called on the thread about to record the event, before the call.
pub unsafe fn before_event_record() {
    if !ANY_WANTED.load(Ordering::Acquire) {
        return;
    }
    let Some(f) = fns() else {
        return;
    };
    let Some((_, id)) = current_context(f) else {
        return;
    };
    let mut map = contexts();
    if matches!(map.get(&id), Some(Slot::Wanted)) {
        let _relaxed = Relaxed::enter(f);
        loaded(&mut map, id, f);
    }
    let any = map.values().any(|slot| matches!(slot, Slot::Wanted));
    ANY_WANTED.store(any, Ordering::Release);
}

/// Load the kernels into the current context, with a stream and a buffer of its own.
unsafe fn load(f: &Fns) -> Slot {
    let null = std::ptr::null_mut;
    let (mut module, mut function, mut stream, mut out) = (null(), null(), null(), null());
    let mut fingerprint = null();
    let mut out_dev = 0u64;
    let ptx = crate::hook::profile::digest_ptx().unwrap_or(PTX.as_bytes());
    let loaded = (f.module_load_data)(&mut module, ptx.as_ptr() as *const c_void) == 0
        && (f.module_get_function)(&mut function, module, c"hrr_digest".as_ptr()) == 0
        && (f.stream_create)(&mut stream, STREAM_NON_BLOCKING) == 0
        && (f.host_alloc)(&mut out, 2 * SEGMENT_CHUNKS * 16, DEVICEMAP) == 0
        && (f.host_device_pointer)(&mut out_dev, out, 0) == 0;
    if !loaded {
        crate::recorder::notice(
            "GPU digests of D2H results unavailable in this context (the kernel did not load); \
             the host takes them",
        );
        return Slot::Off;
    }
    let fingerprint =
        ((f.module_get_function)(&mut fingerprint, module, c"hrr_fingerprint".as_ptr()) == 0)
            .then_some(fingerprint);
    let gpu = Loaded {
        function,
        fingerprint,
        stream,
        out: (out, out_dev),
        checked: false,
        fingerprints_checked: false,
        spare: spare_buffers(f),
    };
    warm_up(f, &gpu);
    Slot::Ready(gpu)
}

/// Buffers [`behind`] hands to pending results, allocated with the module and never later:
/// `cuMemHostAlloc` waits for the device to go idle, so one allocated behind a program's async
/// download blocked the program until its queued work was done (asyncAPI's host loop, meant to
/// overlap the GPU, ran 22 times instead of thousands; simpleMultiCopy's timed D2H took nearly
/// three times as long). [`SPARE`]: (buffers, bytes each), carved from one allocation of 2 MiB:
/// 64 pending results of up to 64 MiB (simpleStreams queues 40 of 16 MiB before it waits) and
/// 8 more of up to 512 MiB. A result with none free, or larger, is read by the host when
/// recorded, as with async digests off. None unless async digests are on
/// (`crate::hook::profile::async_digests`).
unsafe fn spare_buffers(f: &Fns) -> Vec<(Ptr, u64, usize)> {
    if !crate::hook::profile::async_digests() {
        return Vec::new();
    }
    let total = SPARE.iter().map(|(count, bytes)| count * bytes).sum();
    let (mut host, mut dev) = (std::ptr::null_mut(), 0u64);
    if (f.host_alloc)(&mut host, total, DEVICEMAP) != 0
        || (f.host_device_pointer)(&mut dev, host, 0) != 0
    {
        return Vec::new(); // (the host reads async results)
    }
    let sizes = SPARE
        .iter()
        .flat_map(|&(count, bytes)| std::iter::repeat_n(bytes, count));
    let mut at = 0;
    sizes
        .map(|bytes| {
            let buffer = (
                host.cast::<u8>().wrapping_add(at).cast(),
                dev + at as u64,
                bytes,
            );
            at += bytes;
            buffer
        })
        .collect()
}

/// Launch each kernel once over nothing on capture's stream, so that whatever a context's first
/// launch of a kernel costs (making it resident) is not paid behind the first async download
/// [`behind`] follows, a region programs time. A precaution: on the H100 its own effect was not
/// separable from the noise (simpleMultiCopy's D2H 0.215 of plain before, 0.322 after; the
/// buffer allocation [`spare_buffers`] removes was the cost). Not waited for: the stream orders
/// it before capture's later use of the buffer. A failure here is left to the real launches,
/// which report it.
unsafe fn warm_up(f: &Fns, gpu: &Loaded) {
    // (no words, no chunks: `hrr_digest` writes one empty chunk's digest into the buffer,
    // `hrr_fingerprint` returns at once)
    let at = gpu.out.1;
    launch(f, gpu.function, 1, [at, 0, at], gpu.stream);
    if let Some(function) = gpu.fingerprint {
        let half = (SEGMENT_CHUNKS * 16) as u64;
        launch(f, function, 1, [at, 0, at + half], gpu.stream);
    }
}

/// Run `hrr_digest` over the `n` bytes at `src`, a segment at a time, waiting for each (at
/// most [`WAIT`]): the digests, or why not.
unsafe fn run(
    f: &Fns,
    gpu: &mut Loaded,
    src: u64,
    n: usize,
) -> Result<Vec<[u8; 16]>, &'static str> {
    let mut digests = Vec::with_capacity(n.div_ceil(CHUNK));
    for start in (0..n).step_by(SEGMENT_CHUNKS * CHUNK) {
        let len = (n - start).min(SEGMENT_CHUNKS * CHUNK);
        let chunks = len.div_ceil(CHUNK);
        let (s, words, out) = (src + start as u64, (len / 8) as u64, gpu.out.1);
        launch_and_wait(f, gpu, gpu.function, chunks as c_uint, [s, words, out])?;
        digests.extend(digests_at(gpu.out.0, chunks));
    }
    Ok(digests)
}

/// Run `function` (`hrr_fingerprint`) over the `count` whole chunks at `src`, a segment at a
/// time: their fingerprints, or why not.
unsafe fn fingerprints(
    f: &Fns,
    gpu: &Loaded,
    function: Ptr,
    src: u64,
    count: usize,
) -> Result<Vec<crate::fingerprint::Fingerprint>, &'static str> {
    let mut parts = Vec::with_capacity(count);
    let half = SEGMENT_CHUNKS * 16;
    for first in (0..count).step_by(SEGMENT_CHUNKS) {
        let chunks = (count - first).min(SEGMENT_CHUNKS);
        let s = src + (first * CHUNK) as u64;
        let grid = (chunks * FINGERPRINT_THREADS).div_ceil(THREADS as usize) as c_uint;
        launch_and_wait(
            f,
            gpu,
            function,
            grid,
            [s, chunks as u64, gpu.out.1 + half as u64],
        )?;
        let words = std::slice::from_raw_parts((gpu.out.0 as *const u8).add(half), chunks * 16);
        parts.extend(words.chunks_exact(16).map(|w| {
            let lo = u64::from_le_bytes(w[..8].try_into().expect("8"));
            let hi = u64::from_le_bytes(w[8..].try_into().expect("8"));
            (hi as u128) << 64 | lo as u128
        }));
    }
    Ok(parts)
}

/// Launch `function` with three 8-byte parameters and [`fingerprint_secret`] on `stream`,
/// `grid` blocks of [`THREADS`]: whether the driver took it. (`hrr_digest` declares the three
/// only; the driver reads as many parameters as the kernel declares.)
unsafe fn launch(f: &Fns, function: Ptr, grid: c_uint, mut args: [u64; 3], stream: Ptr) -> bool {
    let mut params: [Ptr; 4] = [
        &mut args[0] as *mut u64 as Ptr,
        &mut args[1] as *mut u64 as Ptr,
        &mut args[2] as *mut u64 as Ptr,
        fingerprint_secret().as_ptr() as Ptr,
    ];
    let (p, null) = (params.as_mut_ptr(), std::ptr::null_mut());
    (f.launch)(function, grid, 1, 1, THREADS, 1, 1, 0, stream, p, null) == 0
}

/// Launch `function` with three 8-byte parameters on capture's stream, `grid` blocks of
/// [`THREADS`], and wait for it (at most [`WAIT`]).
unsafe fn launch_and_wait(
    f: &Fns,
    gpu: &Loaded,
    function: Ptr,
    grid: c_uint,
    args: [u64; 3],
) -> Result<(), &'static str> {
    if !launch(f, function, grid, args, gpu.stream) {
        return Err("failed");
    }
    let until = std::time::Instant::now() + WAIT;
    loop {
        match (f.stream_query)(gpu.stream) {
            0 => return Ok(()),
            NOT_READY if std::time::Instant::now() < until => std::thread::yield_now(),
            NOT_READY => return Err("waited for over 250 ms (the GPU busy)"),
            _ => return Err("failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// The secret `hrr_fingerprint` is handed is as long as the kernel reads, and XXH3's
    /// default: with it, twox_hash gives the fingerprint the tracker takes (its default
    /// secret, seed 0).
    #[test]
    fn the_fingerprint_kernels_secret_is_xxh3s_default() {
        assert_eq!(fingerprint_secret().len(), SECRET_BYTES);
        let data: Vec<u8> = (0..65536u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let with = twox_hash::XxHash3_128::oneshot_with_secret(fingerprint_secret(), &data);
        assert_eq!(with.expect("a valid secret"), crate::fingerprint::of(&data));
    }

    thread_local! {
        /// What the fake `cuPointerGetAttribute` answers for: mappings (base, size, access flags).
        static MAPPINGS: RefCell<Vec<(u64, usize, c_int)>> = const { RefCell::new(Vec::new()) };
    }

    /// The driver's answers for VMM mappings, as an H100 gave them: access flags of the
    /// mapping holding `ptr`, its base and size; an error for an address no mapping holds.
    unsafe extern "C" fn attribute(data: *mut c_void, attr: c_int, ptr: u64) -> c_int {
        MAPPINGS.with_borrow(|mappings| {
            let holding = mappings
                .iter()
                .find(|(b, s, _)| ptr >= *b && ptr - b < *s as u64);
            let Some(&(base, size, access)) = holding else {
                return 1;
            };
            match attr {
                ATTR_ACCESS_FLAGS => *(data as *mut c_int) = access,
                ATTR_MAPPING_BASE => *(data as *mut u64) = base,
                ATTR_MAPPING_SIZE => *(data as *mut usize) = size,
                _ => return 1,
            }
            0
        })
    }

    fn readable(mappings: &[(u64, usize, c_int)], src: u64, n: usize) -> bool {
        MAPPINGS.set(mappings.to_vec());
        // SAFETY: `attribute` writes each attribute's type, as the driver does.
        unsafe { readable_mappings(attribute, src, n) }
    }

    const GRANULE: usize = 2 << 20;

    #[test]
    fn a_result_is_read_on_the_gpu_only_where_every_mapping_it_spans_may_be_read() {
        let (a, b, c) = (0x1000_0000, 0x1020_0000, 0x1040_0000);
        let three = [(a, GRANULE, 3), (b, GRANULE, 1), (c, GRANULE, 3)];
        // across all three (the middle one read-only), within one, the whole of one
        assert!(readable(&three, a + 0x10_0000, 2 * GRANULE));
        assert!(readable(&three, b + 8, 64));
        assert!(readable(&three, a, GRANULE));
        // the device may not read the middle one; it is not mapped; the range wraps around
        let denied = [(a, GRANULE, 3), (b, GRANULE, 0), (c, GRANULE, 3)];
        assert!(!readable(&denied, a + 0x10_0000, 2 * GRANULE));
        assert!(!readable(&denied, b + 8, 64));
        let gap = [(a, GRANULE, 3), (c, GRANULE, 3)];
        assert!(!readable(&gap, a + 0x10_0000, 2 * GRANULE));
        assert!(!readable(&three, u64::MAX - 8, 16));
    }
}
