//! Device-side snapshots of blocking D2H results: a large result is not hashed and written
//! before the copy returns. Right after the program's copy (`cuMemcpyDtoH`, a blocking
//! `cuMemcpy` to host) returned, its source is copied, on the device, into a buffer of
//! capture's own (a device-to-device copy on a stream of capture's, waited for: some tens of
//! microseconds where hashing and writing 64 MiB take some tens of milliseconds); the copy is
//! recorded without its bytes, and the `hrr-late` thread (`crate::hook::late`) reads the
//! snapshot back into host memory, stores it and records an `hrrMemcpyLateResult` event naming
//! the copy, which replay takes for the copy's own result. The program may change the host
//! bytes and the device source at once: the snapshot is neither.
//!
//! Only results of [`SNAPSHOT_MIN`] bytes or more, from device memory, with a context current,
//! take this way (into host memory the tracker of host-visible memory follows too, as
//! simpleStreams' registered buffer: the tracker still learns the destination's new bytes from
//! the host, `hook::common::memcpy_dtoh_then`, a fingerprint per chunk); a snapshot holds
//! device memory (at most `hook::late::BUDGET` bytes in flight; buffers are kept for reuse,
//! up to [`KEEP`] bytes a context) and the copy falls back to recording its result at once
//! where none can be had (the budget spent for two seconds, no free device memory, a failed
//! copy). A context's snapshots are finished and its buffers freed before it is destroyed
//! (`cuCtxDestroy`, primary context release or reset), and all are finished at the archive's
//! finish; a result whose read-back fails is not recorded, so replay counts its copy as
//! unchecked.

use std::ffi::{c_uint, c_void};
use std::sync::{Mutex, MutexGuard};

use hrr_calls::cuda::ffi::{CUresult, Handle};
use hrr_calls::shapes::CopyResult;

use super::calls::Export;
use super::loader::driver_fn;
use crate::hook::common::rec;
use crate::hook::late;

/// Blocking D2H results this large or larger are snapshotted.
pub const SNAPSHOT_MIN: usize = 4 << 20;

/// Snapshot buffers kept for reuse, per context, at the most (bytes).
const KEEP: usize = 256 << 20;

/// Device memory a snapshot leaves free, at the least: the program's own allocations come first.
const LEAVE_FREE: usize = 2 << 30;

/// `CU_STREAM_NON_BLOCKING`: capture's stream does not wait for the legacy default stream.
const STREAM_NON_BLOCKING: c_uint = 1;

type CtxGet = unsafe extern "C" fn(*mut Handle) -> CUresult;
type CtxSet = unsafe extern "C" fn(Handle) -> CUresult;
type MemAlloc = unsafe extern "C" fn(*mut u64, usize) -> CUresult;
type MemFree = unsafe extern "C" fn(u64) -> CUresult;
type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> CUresult;
type StreamCreate = unsafe extern "C" fn(*mut Handle, c_uint) -> CUresult;
type StreamDestroy = unsafe extern "C" fn(Handle) -> CUresult;
type StreamSync = unsafe extern "C" fn(Handle) -> CUresult;
type CopyD2dAsync = unsafe extern "C" fn(u64, u64, usize, Handle) -> CUresult;
type CopyD2hAsync = unsafe extern "C" fn(*mut c_void, u64, usize, Handle) -> CUresult;

/// The driver entry points snapshots use (the driver's own: never capture's wrappers).
#[derive(Clone, Copy)]
struct Driver {
    ctx_get: CtxGet,
    ctx_set: CtxSet,
    alloc: MemAlloc,
    free: MemFree,
    info: MemGetInfo,
    stream_create: StreamCreate,
    stream_destroy: StreamDestroy,
    sync: StreamSync,
    d2d: CopyD2dAsync,
    d2h: CopyD2hAsync,
}

impl Driver {
    unsafe fn load() -> Option<Driver> {
        Some(Driver {
            ctx_get: driver_fn(c"cuCtxGetCurrent")?,
            ctx_set: driver_fn(c"cuCtxSetCurrent")?,
            alloc: driver_fn(c"cuMemAlloc_v2")?,
            free: driver_fn(c"cuMemFree_v2")?,
            info: driver_fn(c"cuMemGetInfo_v2")?,
            stream_create: driver_fn(c"cuStreamCreate")?,
            stream_destroy: driver_fn(c"cuStreamDestroy_v2")?,
            sync: driver_fn(c"cuStreamSynchronize")?,
            d2d: driver_fn(c"cuMemcpyDtoDAsync_v2")?,
            d2h: driver_fn(c"cuMemcpyDtoHAsync_v2")?,
        })
    }
}

/// What capture holds in one context: its stream and the buffers free for reuse.
struct Pool {
    ctx: usize,
    stream: usize,
    /// (device address, bytes), free.
    free: Vec<(u64, usize)>,
}

static POOLS: Mutex<Vec<Pool>> = Mutex::new(Vec::new());

fn pools() -> MutexGuard<'static, Vec<Pool>> {
    POOLS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A snapshot taken: `len` bytes at `buf` in context `ctx`, holding its share of the budget.
pub struct Snapshot {
    drv: Driver,
    ctx: usize,
    stream: usize,
    buf: (u64, usize),
    len: usize,
    _budget: late::Reservation,
}

/// Right after a blocking copy of `n` bytes from device address `src` returned: snapshot its
/// source, if this result takes that way (module docs).
///
/// # Safety
/// The program's copy from `src` returned successfully on this thread.
pub unsafe fn take(src: u64, n: usize) -> Option<Snapshot> {
    if n < SNAPSHOT_MIN || !crate::recorder::active() || !super::custom::is_device_ptr(src) {
        return None;
    }
    let drv = Driver::load()?;
    let mut ctx: Handle = std::ptr::null_mut();
    if (drv.ctx_get)(&mut ctx) != 0 || ctx.is_null() {
        return None;
    }
    let budget = late::reserve(n)?;
    let (stream, buf) = buffer(drv, ctx as usize, n)?;
    let snap = Snapshot {
        drv,
        ctx: ctx as usize,
        stream,
        buf,
        len: n,
        _budget: budget,
    };
    let s = stream as Handle;
    if (drv.d2d)(buf.0, src, n, s) != 0 || (drv.sync)(s) != 0 {
        return None; // (dropped: the buffer goes back)
    }
    Some(snap)
}

/// Capture's stream in context `ctx` and a free buffer of `n` bytes or more there (a kept one,
/// else a new one while the device keeps [`LEAVE_FREE`] bytes free).
unsafe fn buffer(drv: Driver, ctx: usize, n: usize) -> Option<(usize, (u64, usize))> {
    let mut pools = pools();
    let i = match pools.iter().position(|p| p.ctx == ctx) {
        Some(i) => i,
        None => {
            let mut s: Handle = std::ptr::null_mut();
            if (drv.stream_create)(&mut s, STREAM_NON_BLOCKING) != 0 {
                return None;
            }
            pools.push(Pool {
                ctx,
                stream: s as usize,
                free: Vec::new(),
            });
            pools.len() - 1
        }
    };
    let pool = &mut pools[i];
    let fit = pool
        .free
        .iter()
        .enumerate()
        .filter(|(_, &(_, len))| len >= n)
        .min_by_key(|(_, &(_, len))| len)
        .map(|(j, _)| j);
    if let Some(j) = fit {
        return Some((pool.stream, pool.free.swap_remove(j)));
    }
    let (mut free, mut total) = (0usize, 0usize);
    if (drv.info)(&mut free, &mut total) != 0 || free < n.saturating_add(LEAVE_FREE) {
        return None;
    }
    let mut p = 0u64;
    ((drv.alloc)(&mut p, n) == 0).then_some((pool.stream, (p, n)))
}

impl Drop for Snapshot {
    /// The buffer goes back to its context's pool (freed beyond [`KEEP`]).
    fn drop(&mut self) {
        let mut pools = pools();
        match pools.iter_mut().find(|p| p.ctx == self.ctx) {
            Some(pool) if pool.free.iter().map(|b| b.1).sum::<usize>() + self.buf.1 <= KEEP => {
                pool.free.push(self.buf)
            }
            // SAFETY: capture's own allocation, no longer used (its read-back waited for).
            _ => unsafe {
                (self.drv.free)(self.buf.0);
            },
        }
    }
}

impl crate::hook::common::LateResult for Snapshot {
    /// Have the `hrr-late` thread read the snapshot back and record it as the result of the
    /// blocking copy recorded as event `copy` into host address `dst`.
    fn record_later(self, copy: u64, dst: u64) {
        let job: late::Job = Box::new(move || {
            // SAFETY: the snapshot's context lives until `settle` has drained this job.
            if let Some(bytes) = unsafe { self.read_back() } {
                drop(self); // the device memory and budget are free before the hashing
                record_result(copy, dst, &bytes);
            }
        });
        if let Err(job) = late::hand_over(job) {
            job();
        }
    }
}

impl Snapshot {
    /// The snapshot's bytes, read on this thread (its context made current here).
    unsafe fn read_back(&self) -> Option<Vec<u8>> {
        if (self.drv.ctx_set)(self.ctx as Handle) != 0 {
            return None;
        }
        let mut bytes = Vec::<u8>::with_capacity(self.len);
        let s = self.stream as Handle;
        let ok = (self.drv.d2h)(bytes.as_mut_ptr() as *mut c_void, self.buf.0, self.len, s) == 0
            && (self.drv.sync)(s) == 0;
        // SAFETY: the completed copy wrote all `len` bytes.
        ok.then(|| {
            bytes.set_len(self.len);
            bytes
        })
    }
}

/// Store `bytes` (the result of event `copy`, a blocking copy into `dst`) and record them in an
/// `hrrMemcpyLateResult` event.
fn record_result(copy: u64, dst: u64, bytes: &[u8]) {
    // SAFETY: `bytes` is a live slice; written before the event that names it.
    let d2h_blob = unsafe {
        crate::recorder::put_host_blob_aside(
            &super::API,
            bytes.as_ptr() as *const c_void,
            bytes.len(),
        )
    };
    if d2h_blob.is_some() {
        rec(Export::hrrMemcpyLateResult, 0, |_| CopyResult {
            copy,
            dst,
            bytes: bytes.len() as u64,
            stream: 0,
            d2h_blob,
        });
    }
}

/// Before a context goes (`ctx`; `None`: every context, as a primary context's release or
/// reset may be the one): finish its snapshots and free capture's buffers and stream there.
pub fn settle(ctx: Option<usize>) {
    late::drain();
    let Some(drv) = (unsafe { Driver::load() }) else {
        return;
    };
    let mut pools = pools();
    if pools.is_empty() {
        return;
    }
    let mut current: Handle = std::ptr::null_mut();
    // SAFETY: driver entry points with valid out-pointers.
    if unsafe { (drv.ctx_get)(&mut current) } != 0 {
        return;
    }
    pools.retain(|p| {
        if ctx.is_some_and(|c| c != p.ctx) {
            return true;
        }
        // SAFETY: capture's own buffers and stream, unused once drained, freed in their
        // context (made current for that, then the caller's again); the context is alive until
        // the program's call that destroys it runs, after this.
        unsafe {
            if (drv.ctx_set)(p.ctx as Handle) == 0 {
                for &(buf, _) in &p.free {
                    (drv.free)(buf);
                }
                (drv.stream_destroy)(p.stream as Handle);
            }
        }
        false
    });
    // SAFETY: as above.
    unsafe { (drv.ctx_set)(current) };
}
