//! Results left in device memory: a program that copies nothing back (a benchmark timing its
//! GEMMs, a sample printing from its kernels) gives replay nothing to compare, and a replay
//! that compared nothing has not shown that it ran the work. So while a process has recorded
//! no result copied back (no D2H copy, no read of host-visible memory: [`results_copied`]),
//! what each device allocation held when the program freed it with `cuMemFree` is recorded
//! before the free, as the pseudo-call `hrrFreeCheck { dptr, bytes, d2h_blob }`; replay
//! compares it like a D2H result (`hrr-playback`, `Op::FreeCheck`).
//!
//! Only where reading cannot disturb the program: outside any stream capture (the
//! synchronisation below would end it), for a whole allocation of plain device memory (not
//! managed memory, whose pages the read would migrate; the GPU's digests only of the current
//! context's own, as `super::digest` requires), of at most
//! [`MAX_BYTES`], and at most [`MAX_CHECKS`] times per process (a program freeing in a loop pays
//! for the first few only). The context is synchronised first, as `cuMemFree` itself waits for
//! the device. Below `HRR_CAPTURE_DIGEST_MIN` (16 MiB) the bytes are copied to the host and
//! stored; from there on the GPU takes the digests of its 64 KiB chunks
//! (`super::digest::device_memory_digests`, as for large D2H results), else the host does, up
//! to [`MAX_HOST_BYTES`]. A VMM range the program unmaps (`cuMemUnmap`) is checked the same
//! way ([`before_unmap`]). `cuMemFreeAsync` (stream-ordered) is not checked.
//! `HRR_CAPTURE_FREE_CHECKS=0` turns the checks off ([`enabled`]).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;

use hrr_archive::digest::CHUNK;
use hrr_archive::ObjectId;
use hrr_calls::shapes::FreeCheck;

use super::calls::Export;
use super::loader::driver_fn;
use super::API;
use crate::hook::ApiExport;
use crate::recorder::{self, BlobWrite};

/// Frees checked per process at most.
pub const MAX_CHECKS: u32 = 64;
/// Allocations larger than this (1 GiB) are not checked.
pub const MAX_BYTES: usize = 1 << 30;
/// Without the GPU's digests, allocations up to this (256 MiB) are read by the host.
const MAX_HOST_BYTES: usize = 256 << 20;

/// Whether this process recorded a result copied back.
static RESULTS_COPIED: AtomicBool = AtomicBool::new(false);
/// Frees checked so far.
static CHECKED: AtomicU32 = AtomicU32::new(0);

/// This process copied a result back (a D2H or generic copy was made, host-visible memory was
/// read after a synchronisation): frees are no longer checked.
#[inline]
pub fn results_copied() {
    if !RESULTS_COPIED.load(Ordering::Relaxed) {
        RESULTS_COPIED.store(true, Ordering::Relaxed);
    }
}

/// Whether frees are checked at all: not with `HRR_CAPTURE_FREE_CHECKS=0` (or `off`). Asked once.
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        !matches!(
            std::env::var("HRR_CAPTURE_FREE_CHECKS").ok().as_deref(),
            Some("0" | "off")
        )
    })
}

/// The driver's entry points used: the real driver's, never capture's wrappers.
struct Fns {
    address_range: unsafe extern "C" fn(*mut u64, *mut usize, u64) -> c_int,
    pointer_attribute: super::digest::PointerAttributeFn,
    synchronize: unsafe extern "C" fn() -> c_int,
    copy_to_host: unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int,
    /// `cuMemGetAccess` and `cuCtxGetDevice` (unmapped ranges only: without them, none is read).
    access: Option<(GetAccess, GetDevice)>,
}

/// `cuMemGetAccess`: (flags out, location `{type, id}`, address).
type GetAccess = unsafe extern "C" fn(*mut u64, *const [c_int; 2], u64) -> c_int;
/// `cuCtxGetDevice`.
type GetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;

fn fns() -> Option<&'static Fns> {
    static FNS: OnceLock<Option<Fns>> = OnceLock::new();
    FNS.get_or_init(|| unsafe {
        Some(Fns {
            address_range: driver_fn(c"cuMemGetAddressRange_v2")?,
            pointer_attribute: driver_fn(c"cuPointerGetAttribute")?,
            synchronize: driver_fn(c"cuCtxSynchronize")?,
            copy_to_host: driver_fn(c"cuMemcpyDtoH_v2")?,
            access: driver_fn(c"cuMemGetAccess").zip(driver_fn(c"cuCtxGetDevice")),
        })
    })
    .as_ref()
}

/// The program is about to free device allocation `dptr` (`cuMemFree`): record what it holds
/// when this process has copied no result back ([module docs](self)).
///
/// # Safety
/// Called on the program's thread, before its `cuMemFree(dptr)`.
pub unsafe fn before_free(dptr: u64) {
    before_release(dptr, |f| whole_device_allocation(f, dptr));
}

/// The program is about to unmap `size` bytes of VMM-mapped memory at `ptr` (`cuMemUnmap`):
/// as [`before_free`], for the whole range when it is device memory (a compressible buffer, a
/// segment of PyTorch's expandable allocator) of at most [`MAX_BYTES`].
///
/// # Safety
/// Called on the program's thread, before its `cuMemUnmap(ptr, size)`.
pub unsafe fn before_unmap(ptr: u64, size: usize) {
    before_release(ptr, |f| {
        (size != 0
            && size <= MAX_BYTES
            && super::digest::plain_device_memory(f.pointer_attribute, ptr)
            && readable_here(f, ptr, size))
        .then_some(size)
    });
}

/// Whether the current context's device may read every mapping of the `size` bytes at `ptr`
/// (`cuMemGetAccess` every 2 MiB, the VMM granularity, and at the last byte): a mapping the
/// program never opened to it would fault the read, and a fault would end the program's
/// context.
unsafe fn readable_here(f: &Fns, ptr: u64, size: usize) -> bool {
    let Some((get_access, get_device)) = f.access else {
        return false;
    };
    let mut dev: c_int = 0;
    if get_device(&mut dev) != 0 {
        return false;
    }
    let here = [1, dev]; // CU_MEM_LOCATION_TYPE_DEVICE, this device
    let readable = |p: u64| {
        let mut flags = 0u64;
        get_access(&mut flags, &here, p) == 0 && flags & 1 != 0
    };
    const STEP: usize = 2 << 20;
    let last = ptr + size as u64 - 1;
    (0..size).step_by(STEP).all(|o| readable(ptr + o as u64)) && readable(last)
}

/// Record what the device memory at `dptr` holds before the program releases it, `bytes` of
/// it (`None`: not a range checked).
unsafe fn before_release(dptr: u64, bytes: impl FnOnce(&Fns) -> Option<usize>) {
    if dptr == 0
        || RESULTS_COPIED.load(Ordering::Relaxed)
        || CHECKED.load(Ordering::Relaxed) >= MAX_CHECKS
        || !enabled()
        || !recorder::active()
        || super::state::any_capturing()
    {
        return;
    }
    let Some(f) = fns() else {
        return;
    };
    let Some(bytes) = bytes(f) else {
        return;
    };
    if (f.synchronize)() != 0 {
        return;
    }
    let checked = CHECKED.fetch_add(1, Ordering::Relaxed) + 1;
    if checked > MAX_CHECKS {
        return;
    }
    let Some(blob) = take(f, dptr, bytes) else {
        return;
    };
    crate::hook::record(&API, Export::hrrFreeCheck.id(), None, |_| FreeCheck {
        dptr,
        bytes: bytes as u64,
        d2h_blob: Some(blob),
    });
    if checked == MAX_CHECKS {
        recorder::notice(&format!(
            "{MAX_CHECKS} freed allocations recorded for replay to check (the process copied no \
             result back); later frees are not"
        ));
    }
}

/// The length of the allocation starting at `dptr`, when it is plain device memory (not
/// managed) of at most [`MAX_BYTES`].
unsafe fn whole_device_allocation(f: &Fns, dptr: u64) -> Option<usize> {
    let (mut base, mut size) = (0u64, 0usize);
    if (f.address_range)(&mut base, &mut size, dptr) != 0
        || base != dptr
        || size == 0
        || size > MAX_BYTES
    {
        return None;
    }
    super::digest::plain_device_memory(f.pointer_attribute, dptr).then_some(size)
}

/// Store what the `n` bytes at `dptr` hold: their bytes below the digest threshold, else their
/// digests (the GPU's, else the host's up to [`MAX_HOST_BYTES`]). `None`: not stored.
unsafe fn take(f: &Fns, dptr: u64, n: usize) -> Option<ObjectId> {
    let read = |len: usize| -> Option<Vec<u8>> {
        let mut v = vec![0u8; len];
        ((f.copy_to_host)(v.as_mut_ptr() as *mut c_void, dptr, len) == 0).then_some(v)
    };
    if (n as u64) < recorder::digest_min() {
        let v = read(n)?;
        return recorder::put_result(&API, v.as_ptr() as *const c_void, n, dptr, BlobWrite::Now);
    }
    let first = read(CHUNK.min(n))?;
    let chunks = match super::digest::device_memory_digests(dptr, n, &first) {
        Some(chunks) => chunks,
        None if n <= MAX_HOST_BYTES => hrr_archive::digest::digests(&read(n)?),
        None => return None,
    };
    recorder::put_digests(&API, n, chunks)
}
