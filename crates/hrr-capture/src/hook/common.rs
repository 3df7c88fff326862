//! Custom functions shared by the APIs: calls whose recording is the same whatever the API
//! (`cuMemCreate` and `hipMemCreate`, the memsets, the plain copies, ...). Each is generic over
//! the export (any [`ApiExport`]) and over the argument types that differ between the APIs'
//! C signatures (a CUDA `CUdeviceptr` is a `u64`, a HIP device pointer a `void *`); an API's
//! `custom` module re-exports the ones its table names.

#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use hrr_archive::ObjectId;
use hrr_calls::shapes::*;
use hrr_calls::Shape;

use super::args::{bytes_at, cstr, out, out_field, IntoField};
use super::{results, ApiExport};
use crate::recorder::{self, Recorder};

/// Record export `h`'s event with status `r` and the shape `fill` builds.
#[inline]
pub fn rec<E: ApiExport, S: Shape>(h: E, r: c_int, fill: impl FnOnce(&mut Recorder) -> S) {
    super::record(E::api(), h.id(), Some(r), fill);
}

/// Make the call and record its event (the shape `fill` builds), noting in the manifest, under
/// the export's row, why its calls do not replay as they ran (`why`).
#[inline]
fn call_unreplayable<E: ApiExport, S: Shape>(
    h: E,
    why: &str,
    call: impl FnOnce() -> c_int,
    fill: impl FnOnce() -> S,
) -> c_int {
    let r = call();
    rec(h, r, |rc| {
        rc.note_unreplayable(h.base_name(), why);
        fill()
    });
    r
}

/// [`rec`], returning the event's sequence number when it was written.
#[inline]
pub fn rec_seq<E: ApiExport, S: Shape>(
    h: E,
    r: c_int,
    fill: impl FnOnce(&mut Recorder) -> S,
) -> Option<u64> {
    super::record(E::api(), h.id(), Some(r), fill)
}

/// Async D2H results, shared by the APIs: what the host function behind an async D2H copy
/// needs (boxed when it is enqueued, freed by it).
struct PendingResult<E> {
    /// Its id in [`super::results`].
    pending: u64,
    /// The API's `hrrMemcpyResult` pseudo-export.
    result: E,
    copy: u64,
    dst: *mut c_void,
    n: usize,
    stream: *mut c_void,
    /// Its destination region's write count as its copy's submission left it
    /// (`hostmem::Recorded::Async`).
    writes: Option<(u64, u64)>,
    /// Its digests, taken on the device by work enqueued behind the copy (`None`: its bytes
    /// are stored).
    digests: Option<Box<dyn DigestsBehind>>,
}

/// The chunk digests of a large async D2H result ([`hrr_archive::digest`]), taken on the device
/// by work the API enqueued on the copy's stream right behind the copy, so that the host need
/// not read the result (CUDA: `api::cuda::digest::behind`). Dropped only once the copy's stream
/// has passed that work (a result is freed after its copy completed).
pub trait DigestsBehind: Send {
    /// The digests, once the copy's stream passed the work that takes them; `first`: the
    /// result's first chunk as the host holds it, to check the device's against. `None`: the
    /// host takes the result itself.
    ///
    /// # Safety
    /// The copy and the work behind it completed.
    unsafe fn take(self: Box<Self>, first: &[u8]) -> Option<Vec<[u8; 16]>>;
}

/// Store the result an async D2H copy left at `p.dst` (its digests where the device took them,
/// else its bytes); record its result event.
unsafe fn record_result<E: ApiExport>(p: &mut PendingResult<E>) {
    super::profile::RESULTS_RECORDED.time(|| record_result_now(p))
}

unsafe fn record_result_now<E: ApiExport>(p: &mut PendingResult<E>) {
    let digests = p.digests.take().and_then(|d| {
        let first =
            std::slice::from_raw_parts(p.dst as *const u8, p.n.min(hrr_archive::digest::CHUNK));
        d.take(first)
    });
    let d2h_blob = match digests {
        Some(chunks) => {
            // (no pieces of an earlier buffer are handed to the tracker as this one's)
            crate::fingerprint::forget_recent();
            recorder::put_digests(E::api(), p.n, chunks)
        }
        None => host_blob(p.result, p.dst, p.n),
    };
    rec(p.result, 0, |_| CopyResult {
        copy: p.copy,
        dst: p.dst as u64,
        bytes: p.n as u64,
        stream: p.stream as u64,
        d2h_blob,
    });
    crate::api::cuda::hostmem::result_recorded(
        p.dst as u64,
        p.n,
        crate::api::cuda::hostmem::Recorded::Async(p.writes),
    );
}

/// The host function behind an async D2H copy (runs on a driver thread, calls no GPU API):
/// hands the result to the recorder thread and returns at once, unless it must be recorded
/// here ([`super::results`]).
unsafe extern "C" fn d2h_completed<E: ApiExport>(data: *mut c_void) {
    // SAFETY: `data` is the box `result_at_completion` leaked, handed to this function once.
    let mut p = Box::from_raw(data as *mut PendingResult<E>);
    let id = p.pending;
    // SAFETY: the destination stays the copy's until the result is recorded (module docs of
    // `results`: synchronisations, later copies there and frees wait for it).
    let job = results::Job::new(Box::new(move || {
        recorder::recording_result(|| record_result(&mut p))
    }));
    results::hand_over(id, job);
}

/// The API's real host-function enqueuer (`cuLaunchHostFunc`, `hipLaunchHostFunc`).
pub type LaunchHostFn =
    unsafe extern "C" fn(*mut c_void, unsafe extern "C" fn(*mut c_void), *mut c_void) -> c_int;

/// The driver's event calls that let an async D2H result learn its copy completed without a
/// host function on the copy's stream ([`results::Deferred`]): creating an event (flags),
/// recording it on a stream, and those the pending result needs later.
#[derive(Clone, Copy)]
pub struct EventOps {
    pub create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int,
    pub record: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    pub fns: results::EventFns,
}

/// `CU_EVENT_DISABLE_TIMING` (`hipEventDisableTiming` is the same value).
const EVENT_DISABLE_TIMING: c_uint = 2;

/// After the async D2H copy recorded as event `copy` was issued on `stream` (the handle the
/// API's host-function call understands): have the bytes at `dst` recorded in a `result`
/// event (the API's `hrrMemcpyResult` pseudo-export) when the copy has completed: with
/// `events`, once a synchronisation finds an event recorded behind the copy complete
/// ([`results::Deferred`]: the stream does not wait for the host), else by a host function
/// enqueued behind it with `launch`. Where neither can be set up, `sync` waits for the stream
/// (true: done) and the result is recorded at once. `digests`: its digests, taken by work the
/// API already enqueued behind the copy ([`DigestsBehind`]).
pub unsafe fn result_at_completion<E: ApiExport>(
    result: E,
    copy: u64,
    (dst, n): (*mut c_void, usize),
    stream: *mut c_void,
    (launch, events): (Option<LaunchHostFn>, Option<EventOps>),
    digests: Option<Box<dyn DigestsBehind>>,
    sync: impl FnOnce() -> bool,
) {
    let p = Box::into_raw(Box::new(PendingResult {
        pending: results::register(dst as usize, n, stream as usize),
        result,
        copy,
        dst,
        n,
        stream,
        writes: crate::api::cuda::hostmem::copy_writes(),
        digests,
    }));
    let id = (*p).pending;
    if let Some(ops) = events.filter(|_| launch.is_some()) {
        let mut event = std::ptr::null_mut();
        if (ops.create)(&mut event, EVENT_DISABLE_TIMING) == 0 {
            if (ops.record)(event, stream) == 0 {
                let d = results::Deferred {
                    event,
                    stream,
                    data: p as *mut c_void,
                    fire: d2h_completed::<E>,
                    fns: ops.fns,
                };
                results::defer(id, d);
                return;
            }
            (ops.fns.destroy)(event);
        }
    }
    let launched = match launch {
        Some(f) => f(stream, d2h_completed::<E>, p as *mut c_void) == 0,
        None => false,
    };
    if !launched {
        // SAFETY: not handed to the driver: still ours.
        let mut p = Box::from_raw(p);
        if sync() {
            record_result(&mut p);
        }
        results::done(p.pending);
    }
}

/// Async H2D sources this large or larger, from page-locked memory, are read after the call
/// returned ([`source_later`]).
pub const SOURCE_LATER_MIN: usize = 1 << 20;

/// After the async H2D copy recorded as event `copy` (with no source bytes) was issued from
/// page-locked memory: have its `n` source bytes at `src` stored and recorded in a `source`
/// event (the API's `hrrMemcpySource` pseudo-export) by capture's recorder thread, so the call
/// returns without hashing them. The program may not change them until it knows the copy
/// completed, and everything that tells it so waits for the recorder ([`super::results`]).
pub unsafe fn source_later<E: ApiExport>(
    source: E,
    copy: u64,
    (src, n): (*const c_void, usize),
    stream: *mut c_void,
) {
    let id = results::register(src as usize, n, stream as usize);
    let (at, stream) = (src as usize, stream as u64);
    let job = results::Job::new(Box::new(move || {
        recorder::recording_result(|| {
            super::profile::SOURCES_RECORDED.time(|| {
                let h2d_blob = host_blob(source, at as *const c_void, n);
                rec(source, 0, |_| CopySource {
                    copy,
                    src: at as u64,
                    bytes: n as u64,
                    stream,
                    h2d_blob,
                });
            })
        })
    }));
    results::hand_over(id, job);
}

/// `cuEventQuery`, `cuStreamQuery` and HIP's: not recorded; once one says the work is done, the
/// program may use what it made, so async D2H results handed over are recorded first.
pub unsafe fn query_done<E: ApiExport>(
    _h: E,
    _object: *mut c_void,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    if r == 0 {
        results::wait_recorded();
    }
    r
}

/// Store `len` host bytes at `ptr` as a blob of `h`'s archive.
#[inline]
pub unsafe fn host_blob<E: ApiExport>(_h: E, ptr: *const c_void, len: usize) -> Option<ObjectId> {
    recorder::put_host_blob(E::api(), ptr, len)
}

/// Host sources this large or larger are stored (hashed, staged) while the driver copies them.
pub const ALONGSIDE_MIN: usize = 4 << 20;

/// Store the `len` host bytes at `ptr` as a blob of `h`'s archive while `call` runs, on a thread
/// of its own when they are [`ALONGSIDE_MIN`] bytes or more: a copy's source may not change
/// until the copy has read it (a blocking copy, a pageable one the driver stages before it
/// returns, or an async one from pinned memory the program must leave alone until it
/// completes), and both return before the caller's call does, so the upload and its recording
/// overlap instead of adding up.
pub unsafe fn host_blob_alongside<E: ApiExport, R>(
    h: E,
    ptr: *const c_void,
    len: usize,
    call: impl FnOnce() -> R,
) -> (Option<ObjectId>, R) {
    if len < ALONGSIDE_MIN || ptr.is_null() || !crate::recorder::active() {
        let id = host_blob(h, ptr, len);
        return (id, call());
    }
    let at = ptr as usize;
    // SAFETY: the caller's bytes stay valid and unchanged until `call` returns, and `alongside`
    // returns after the store.
    alongside(
        move || unsafe { host_blob(h, at as *const c_void, len) },
        call,
    )
}

/// `call()` on the calling thread while `store()` runs beside it: on a waiting thread of the
/// hashing pool where it runs (`super::offer::beside`, a few microseconds to hand over; on the
/// calling thread after `call` when every pool thread is busy), else on
/// a thread of its own (tens: started and joined), else before it; both done when it returns.
/// `None` from a store that panicked.
pub fn alongside<S: Send + 'static, R>(
    store: impl FnOnce() -> Option<S> + Send + Copy,
    call: impl FnOnce() -> R,
) -> (Option<S>, R) {
    let (call, store) = match super::offer::beside(call, store) {
        Ok((r, stored)) => return (stored.flatten(), r),
        Err(back) => back,
    };
    std::thread::scope(
        |s| match std::thread::Builder::new().spawn_scoped(s, store) {
            Ok(t) => {
                let r = call();
                (t.join().ok().flatten(), r)
            }
            Err(_) => (store(), call()),
        },
    )
}

/// A host or device address argument (`u64`, `void *`, `const void *`).
pub trait Addr: Copy + IntoField<u64> {}
impl<T: Copy + IntoField<u64>> Addr for T {}

/// The host pointer behind an address argument.
fn host<P: Addr>(p: P) -> *const c_void {
    p.into_field() as *const c_void
}

pub unsafe fn device_get_name<E: ApiExport>(
    h: E,
    name: *mut c_char,
    len: c_int,
    dev: c_int,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    rec(h, r, |_| DeviceName {
        name: if r == 0 && len > 0 {
            cstr(name)
        } else {
            String::new()
        },
        device: dev,
    });
    r
}

pub unsafe fn host_register<E: ApiExport>(
    h: E,
    p: *mut c_void,
    size: usize,
    flags: c_uint,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let contents = host_blob(h, p, size);
    let r = call();
    rec(h, r, |_| HostRegister {
        host_ptr: p as u64,
        bytesize: size as u64,
        flags,
        contents,
    });
    r
}

pub unsafe fn host_get_device_pointer<E: ApiExport, D: Copy + IntoField<u64>>(
    h: E,
    dptr: *mut D,
    p: *mut c_void,
    flags: c_uint,
    call: impl FnOnce() -> c_int,
) -> c_int {
    const WHY: &str =
        "mapped host memory is read by kernels but its later host-side writes are not recorded";
    call_unreplayable(h, WHY, call, || HostDevicePointer {
        dptr: out_field(dptr),
        host_ptr: p as u64,
        flags,
    })
}

/// `sizeof(CUmemAllocationProp)` = `sizeof(hipMemAllocationProp)`.
const MEM_PROP_BYTES: usize = 32;
/// `sizeof(CUmemAccessDesc)` = `sizeof(hipMemAccessDesc)`.
const ACCESS_DESC_BYTES: usize = 12;

pub unsafe fn mem_create<E: ApiExport>(
    h: E,
    handle: *mut u64,
    size: usize,
    prop: *const u8,
    flags: u64,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    rec(h, r, |_| MemCreate {
        handle: out(handle),
        size: size as u64,
        prop: bytes_at(prop, MEM_PROP_BYTES).to_vec(),
        flags,
    });
    r
}

pub unsafe fn mem_set_access<E: ApiExport, P: Addr>(
    h: E,
    ptr: P,
    size: usize,
    desc: *const u8,
    count: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    rec(h, r, |_| MemSetAccess {
        ptr: ptr.into_field(),
        size: size as u64,
        desc: bytes_at(desc, count.min(64) * ACCESS_DESC_BYTES).to_vec(),
        count: count as u64,
    });
    r
}

/// Before a copy or memset writing `n` bytes at `dst` (reading `src`, a device-side address,
/// where `Some`) is made: the host-visible memory it reaches is read for host writes first and
/// taken as written by it ([`crate::api::cuda::hostmem::submit`]).
pub fn submit_copy(dst: u64, src: Option<u64>, n: usize) {
    crate::api::cuda::hostmem::submit(crate::api::cuda::hostmem::Target::Copy { dst, src, n });
}

/// Before an H2D copy of `n` bytes from host address `src` to `dst` is made: as
/// [`submit_copy`], after the uploaded bytes were looked at for pointers into host-visible
/// memory (`crate::api::cuda::hostmem::uploaded`).
///
/// # Safety
/// `src` must be readable for `n` bytes (the copy reads them).
pub unsafe fn submit_upload(dst: u64, src: *const c_void, n: usize) {
    // SAFETY: the caller's.
    unsafe { crate::api::cuda::hostmem::uploaded(src.cast(), n, dst) };
    submit_copy(dst, None, n);
}

pub unsafe fn memcpy_htod<E: ApiExport, D: Addr, S: Addr>(
    h: E,
    dst: D,
    src: S,
    n: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    memcpy_htod_async(h, dst, src, n, std::ptr::null_mut(), call)
}

pub unsafe fn memcpy_htod_async<E: ApiExport, D: Addr, S: Addr>(
    h: E,
    dst: D,
    src: S,
    n: usize,
    stream: *mut c_void,
    call: impl FnOnce() -> c_int,
) -> c_int {
    submit_upload(dst.into_field(), host(src), n);
    let (h2d_blob, r) = host_blob_alongside(h, host(src), n, call);
    rec(h, r, |_| CopyH2d {
        dst: dst.into_field(),
        src: src.into_field(),
        bytes: n as u64,
        stream: stream as u64,
        h2d_blob,
    });
    r
}

/// An async D2H copy's call and event, shared by the APIs' `memcpy_dtoh_async`: `dst` is
/// claimed from the results still to be written (`results::claim`) before the call, and the
/// event stores the result `d2h_blob` gives from the status (`None`: stored later, or not at
/// all). Returns the status and the event's sequence number when it was written.
pub unsafe fn memcpy_dtoh_async_event<E: ApiExport, S: Addr>(
    h: E,
    (dst, src, n): (*mut c_void, S, usize),
    stream: *mut c_void,
    call: impl FnOnce() -> c_int,
    d2h_blob: impl FnOnce(c_int) -> Option<ObjectId>,
) -> (c_int, Option<u64>) {
    results::claim(dst as usize, n);
    submit_copy(dst as u64, Some(src.into_field()), n);
    let r = call();
    let d2h_blob = d2h_blob(r);
    let seq = rec_seq(h, r, |_| CopyD2h {
        dst: dst as u64,
        src: src.into_field(),
        bytes: n as u64,
        stream: stream as u64,
        d2h_blob,
    });
    (r, seq)
}

/// A blocking D2H copy: its result is stored after the call, then buffered events are handed to
/// the kernel (the program may act on the result).
pub unsafe fn memcpy_dtoh<E: ApiExport, D: Addr, S: Addr>(
    h: E,
    dst: D,
    src: S,
    n: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    submit_copy(dst.into_field(), Some(src.into_field()), n);
    let r = call();
    let d2h_blob = if r == 0 {
        // written before the call returns (the flush below waits for it anyway): no staging
        let now = recorder::BlobWrite::Now;
        recorder::put_result(E::api(), host(dst), n, src.into_field(), now)
    } else {
        None
    };
    rec(h, r, |_| CopyD2h {
        dst: dst.into_field(),
        src: src.into_field(),
        bytes: n as u64,
        stream: 0,
        d2h_blob,
    });
    if d2h_blob.is_some() {
        crate::api::cuda::hostmem::result_recorded(
            host(dst) as u64,
            n,
            crate::api::cuda::hostmem::Recorded::Blocking,
        );
    }
    recorder::flush_soft();
    r
}

pub unsafe fn memcpy_dtod<E: ApiExport, D: Addr, S: Addr>(
    h: E,
    dst: D,
    src: S,
    n: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    submit_copy(dst.into_field(), Some(src.into_field()), n);
    let r = call();
    rec(h, r, |_| CopyD2d {
        dst: dst.into_field(),
        src: src.into_field(),
        bytes: n as u64,
        stream: 0,
    });
    r
}

/// A `MemsetD8/16/32` value: its element size is its own.
pub trait MemsetValue: Copy {
    /// The value as recorded.
    fn value(self) -> u32;
}

macro_rules! memset_values {
    ($($t:ty),*) => {
        $(impl MemsetValue for $t {
            fn value(self) -> u32 {
                self as u32
            }
        })*
    };
}
memset_values!(u8, u16, u32, i32);

pub unsafe fn memset<E: ApiExport, D: Addr, V: MemsetValue>(
    h: E,
    dst: D,
    v: V,
    n: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    memset_async(h, dst, v, n, std::ptr::null_mut(), call)
}

pub unsafe fn memset_async<E: ApiExport, D: Addr, V: MemsetValue>(
    h: E,
    dst: D,
    v: V,
    n: usize,
    stream: *mut c_void,
    call: impl FnOnce() -> c_int,
) -> c_int {
    submit_copy(dst.into_field(), None, n * std::mem::size_of::<V>());
    let r = call();
    rec(h, r, |_| Memset {
        dst: dst.into_field(),
        value: v.value(),
        element_bytes: std::mem::size_of::<V>() as u32,
        count: n as u64,
        stream: stream as u64,
    });
    r
}

/// A 2D memset (`cuMemsetD2D8/16/32`, async or not): `height` rows of `width` elements of
/// `V`, `pitch` bytes apart.
#[allow(clippy::too_many_arguments)]
pub unsafe fn memset_2d_async<E: ApiExport, D: Addr, V: MemsetValue>(
    h: E,
    dst: D,
    pitch: usize,
    v: V,
    width: usize,
    height: usize,
    stream: *mut c_void,
    call: impl FnOnce() -> c_int,
) -> c_int {
    // bytes it overwrites whole: rows with gaps between them are read first (the gaps stay)
    let row = width.saturating_mul(std::mem::size_of::<V>());
    let whole = match (row, height) {
        (0, _) | (_, 0) => 0,
        (row, 1) => row,
        (row, h) if row == pitch => row.saturating_mul(h),
        _ => 0,
    };
    submit_copy(dst.into_field(), None, whole);
    let r = call();
    rec(h, r, |_| Memset2d {
        dst: dst.into_field(),
        pitch: pitch as u64,
        value: v.value(),
        element_bytes: std::mem::size_of::<V>() as u32,
        width: width as u64,
        height: height as u64,
        stream: stream as u64,
    });
    r
}

pub unsafe fn memset_2d<E: ApiExport, D: Addr, V: MemsetValue>(
    h: E,
    dst: D,
    pitch: usize,
    v: V,
    width: usize,
    height: usize,
    call: impl FnOnce() -> c_int,
) -> c_int {
    memset_2d_async(h, dst, pitch, v, width, height, std::ptr::null_mut(), call)
}

pub unsafe fn get_global<E: ApiExport, D: Copy + IntoField<u64>>(
    h: E,
    dptr: *mut D,
    bytes: *mut usize,
    owner: *mut c_void,
    name: *const c_char,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    rec(h, r, |_| Global {
        dptr: out_field(dptr),
        bytes: out(bytes) as u64,
        owner: owner as u64,
        name: cstr(name),
    });
    r
}

pub unsafe fn launch_host_func<E: ApiExport>(
    h: E,
    s: *mut c_void,
    func: *mut c_void,
    data: *mut c_void,
    call: impl FnOnce() -> c_int,
) -> c_int {
    const WHY: &str = "host callbacks run application code that is not in the archive";
    call_unreplayable(h, WHY, call, || HostFunc {
        stream: s as u64,
        func: func as u64,
        data: data as u64,
    })
}
