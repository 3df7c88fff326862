//! The recorder: per-process capture state behind one mutex. Opens `pid-<pid>/` lazily on the
//! first recorded call (so processes that never touch the driver get none), writes events through
//! hrr-archive, finishes on exit, flushes what it can on fatal signals, and stops (marking the
//! archive incomplete) when the disk is nearly full or a write fails. Never panics across FFI.
//!
//! The recorder knows no API: the archive's schema and device facts are those of the
//! [`ApiDef`] whose call opened it (CUDA driver or HIP); call ids are per schema. A process that
//! uses both APIs gets the first one recorded; calls of the other are not recorded, and the
//! manifest says so. What an API remembers about its handles lives in its own `state` module.
//!
//! Host blobs are hashed on the calling thread and written by the `hrr-blobs` thread
//! ([`crate::blobq`]), never under the recorder's lock; every flush point (synchronisations,
//! blocking D2H copies, finish, stop, fatal and terminating signals) first waits for (or writes)
//! the queued blobs, so an event handed to the kernel never names a blob that is not.

use crate::hot::HOT;
use std::cell::Cell;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use hrr_archive::journal::JOURNAL_OBJECT_MAX;
use hrr_archive::schema::PayloadBuilder;
use hrr_archive::writer::ProcessWriter;
use hrr_archive::{CodeKind, ObjectId};

use crate::api::ApiDef;
use crate::hook::guard::catch;

const MODE_UNDECIDED: u8 = 0;
const MODE_OFF: u8 = 1;
const MODE_ON: u8 = 2;
const MODE_STOPPED: u8 = 3;

// MODE_UNDECIDED at start: `HOT.mode` (crate::hot)
const _: () = assert!(MODE_UNDECIDED == 0);
// This process's id (`HOT.pid`), kept current across `fork` by an atfork handler (no
// syscall per event).

extern "C" fn after_fork_in_child() {
    crate::hook::forward::reset_counts();
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    HOT.pid
        .store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
}

/// This process's id (cached; correct in fork children).
pub fn current_pid() -> u32 {
    match HOT.pid.load(Ordering::Relaxed) {
        0 => std::process::id(),
        pid => pid,
    }
}
static OUTPUT: OnceLock<PathBuf> = OnceLock::new();
static STATE: Mutex<Option<Recorder>> = Mutex::new(None);

thread_local! {
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// Per-process capture state.
pub struct Recorder {
    pid: u32,
    api: &'static ApiDef,
    writer: ProcessWriter,
    /// Host blobs written off the calling thread (`None`: the thread could not start; blobs
    /// are then written under the lock, as before).
    blobs: Option<crate::blobq::BlobQueue>,
    min_free: u64,
    /// Event time stamps.
    clock: crate::stamp::StampClock,
}

/// Decide once whether this process records: the output variable is set and this is not a
/// secure-execution (setuid) process.
pub fn init_from_env() {
    if HOT.mode.load(Ordering::Acquire) != MODE_UNDECIDED {
        return;
    }
    let out = std::env::var_os("HIP_HRR_CAPTURE_OUTPUT")
        .or_else(|| std::env::var_os("HRR_CAPTURE_OUTPUT"))
        .filter(|v| !v.is_empty());
    // SAFETY: getauxval has no preconditions.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    let mode = match out {
        Some(path) if !secure => {
            let path = PathBuf::from(path);
            let abs = if path.is_absolute() {
                path
            } else {
                std::env::current_dir()
                    .map(|d| d.join(&path))
                    .unwrap_or(path)
            };
            let _ = OUTPUT.set(abs);
            HOT.pid.store(std::process::id(), Ordering::Relaxed);
            // SAFETY: registering plain extern "C" functions.
            unsafe {
                libc::atexit(at_exit);
                libc::pthread_atfork(None, None, Some(after_fork_in_child));
            }
            MODE_ON
        }
        _ => MODE_OFF,
    };
    HOT.mode.store(mode, Ordering::Release);
}

/// Is recording on (and not stopped) in this process?
#[inline]
pub fn active() -> bool {
    HOT.mode.load(Ordering::Relaxed) == MODE_ON
}

fn thread_id() -> u64 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::syscall(libc::SYS_gettid) } as u64);
        }
        t.get()
    })
}

pub(crate) fn notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "[HRR capture] {msg}");
}

fn stop(state: &mut Option<Recorder>, why: &str) {
    notice(&format!(
        "{why}; capture stopped, the application continues. The archive is marked incomplete."
    ));
    if let Some(mut rec) = state.take() {
        if let Some(q) = rec.blobs.as_ref().filter(|_| rec.pid == current_pid()) {
            let _ = q.finish();
        }
        let _ = rec.writer.events().mark_incomplete(why);
        rec.note_forwarded_calls();
        let _ = rec.writer.finish();
    }
    HOT.mode.store(MODE_STOPPED, Ordering::Release);
}

/// Whether the recorder is open in this process for `api`: opened now if it was not (the first
/// recorded call, or a fork child's). Inlined: a call of the API that opened it is two
/// comparisons.
#[inline(always)]
fn open(state: &mut Option<Recorder>, api: &'static ApiDef) -> bool {
    match state.as_ref() {
        Some(rec) if rec.pid == current_pid() && std::ptr::eq(rec.api, api) => true,
        _ => open_slow(state, api),
    }
}

/// [`open`] when this process's recorder is not open for `api`.
#[cold]
#[inline(never)]
fn open_slow(state: &mut Option<Recorder>, api: &'static ApiDef) -> bool {
    let pid = current_pid();
    if let Some(rec) = state.as_mut() {
        if rec.pid == pid {
            if !std::ptr::eq(rec.api, api) {
                let why = format!(
                    "this process also calls the {} API; only the {} API, used first, is recorded",
                    api.name, rec.api.name
                );
                rec.note_unreplayable(api.name, &why);
                return false;
            }
            return true;
        }
        // A fork child: the parent's writer is not ours to finish.
        std::mem::forget(state.take());
    }
    let Some(root) = OUTPUT.get() else {
        return false;
    };
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() } as u32;
    match ProcessWriter::create(root, pid, ppid, &(api.schema)()) {
        Ok(mut writer) => {
            // events.bin written by a thread of its own: the program's threads only buffer
            // (flush points still wait until everything before them is written)
            let _ = writer
                .events()
                .write_in_background(crate::signals::block_in_this_thread);
            // Asked from inside a hook, so a runtime that calls its own exports meanwhile is
            // forwarded and never re-enters the recorder while it is locked.
            writer.manifest_mut().metadata = Some((api.metadata)());
            let _ = writer.checkpoint_manifest();
            notice(&format!(
                "Recording pid {pid} into {}",
                writer.dir().display()
            ));
            let min_free = std::env::var("HRR_CAPTURE_MIN_FREE_MB")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(512)
                .saturating_mul(1 << 20);
            let blobs = crate::blobq::BlobQueue::start(writer.object_store());
            *state = Some(Recorder {
                pid,
                api,
                writer,
                blobs,
                min_free,
                clock: crate::stamp::StampClock::new(),
            });
            crate::signals::install();
            start_flusher();
            true
        }
        Err(e) => {
            notice(&format!("Capture disabled: cannot create the archive: {e}"));
            HOT.mode.store(MODE_STOPPED, Ordering::Release);
            false
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Recorder>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Record one event of record type `id` of `api`; `fill` writes every field (the result too,
/// for calls that return one). A panic in `fill` loses the event, never the program. Returns
/// the event's sequence number when it was written.
pub fn record(
    api: &'static ApiDef,
    id: u16,
    fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder),
) -> Option<u64> {
    if !active() {
        return None;
    }
    let mut state = lock();
    if !open(&mut state, api) {
        return None;
    }
    let rec = state.as_mut().expect("opened");
    // the payload is written in place, in the events buffer (no copy)
    let mut record = rec.writer.events().begin_record();
    if catch(|| fill(rec, record.payload())).is_none() {
        rec.writer.events().cancel_record(record);
        return None;
    }
    let ts = rec.clock.now();
    let result = rec.writer.events().end_record(record, id, thread_id(), ts);
    match result {
        Ok(seq) => Some(seq),
        Err(e) => {
            stop(&mut state, &format!("cannot write events.bin: {e}"));
            None
        }
    }
}

/// The blob queue of this process's recorder, if it has one (never a fork parent's: its writer
/// thread does not exist in the child).
fn blob_queue() -> Option<crate::blobq::BlobQueue> {
    let pid = current_pid();
    lock()
        .as_ref()
        .filter(|r| r.pid == pid)
        .and_then(|r| r.blobs.clone())
}

/// Wait for the queued host blobs to be written; a write error stops the capture.
fn drain_blobs() {
    if let Some(Err(e)) = blob_queue().map(|q| q.drain()) {
        let mut state = lock();
        if state.is_some() {
            stop(&mut state, &format!("cannot write a blob: {e}"));
        }
    }
}

/// Re-ask the driver for device facts once it is initialised (cudart calls
/// `cuDriverGetVersion` before `cuInit`, so the archive may open before devices can be queried).
pub fn refresh_metadata(api: &'static ApiDef) {
    if !active() {
        return;
    }
    let mut state = lock();
    if let Some(rec) = state.as_mut() {
        let known = rec
            .writer
            .manifest_mut()
            .metadata
            .as_ref()
            .and_then(|m| m["devices"].as_array().map(|d| !d.is_empty()))
            .unwrap_or(false);
        if !known {
            rec.writer.manifest_mut().metadata = Some((api.metadata)());
            let _ = rec.writer.checkpoint_manifest();
        }
    }
}

/// Host functions recording an async D2H result right now (entered, not yet returned).
static RESULTS_RECORDING: AtomicU32 = AtomicU32::new(0);

/// Run `f`, which records an async D2H result from a host function, counted as in flight.
pub fn recording_result(f: impl FnOnce()) {
    RESULTS_RECORDING.fetch_add(1, Ordering::AcqRel);
    let _ = catch(f);
    RESULTS_RECORDING.fetch_sub(1, Ordering::AcqRel);
}

/// After a synchronisation returned: wait (at most a second) for host functions still
/// recording a result. A driver returns from a synchronisation only after the host functions
/// before it have returned, and they record before returning, so this finds none in flight
/// for what was synchronised; it guards the order of events.bin (result before the sync's
/// event) should a host function still be finishing. Host functions not yet started are not
/// waited for: they may belong to other streams, behind work that takes any time.
pub fn wait_results_recorded() {
    crate::hook::results::wait_recorded();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while RESULTS_RECORDING.load(Ordering::Acquire) != 0 && std::time::Instant::now() < until {
        std::thread::yield_now();
    }
}

/// Flush buffered events to the kernel (not fsync), after the queued host blobs are written:
/// called after synchronisations and blocking D2H copies, so that a `kill -9` then loses
/// nothing recorded.
pub fn flush_soft() {
    if !active() {
        return;
    }
    drain_blobs();
    flush_events();
}

/// Hand buffered events to the kernel without waiting for queued blobs (before a call that
/// may block: a hang then loses no event; blobs still queued are written meanwhile).
pub fn flush_events() {
    if !active() {
        return;
    }
    if let Some(rec) = lock().as_mut() {
        let _ = rec.writer.events().flush(false);
    }
}

/// How a host blob new to the archive is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlobWrite {
    /// Copied into staging and written by the blob threads (the caller goes on at once).
    Staged,
    /// Written before returning, from the caller's bytes, on several threads: for a caller
    /// that would wait for the write anyway (a blocking D2H copy).
    Now,
}

/// Store a host buffer before the call that reads it (or after the call that wrote it); `None`
/// if recording is off or failed. The bytes are hashed here (the id is their content hash, taken
/// from the last store when the same address held the same bytes: [`crate::fingerprint`]) and,
/// unless a blob of that id is stored or queued, copied into staging and written by the blob
/// thread ([`BlobWrite::Staged`]); the recorder's lock is not held while hashing, copying or
/// writing.
///
/// # Safety
/// `ptr` is null or readable for `len` bytes.
pub unsafe fn put_host_blob(
    api: &'static ApiDef,
    ptr: *const c_void,
    len: usize,
) -> Option<ObjectId> {
    put_host_blob_as(api, ptr, len, BlobWrite::Staged)
}

/// [`put_host_blob`], the blob written as `how` says ([`BlobWrite::Now`]: before returning).
///
/// # Safety
/// As [`put_host_blob`].
pub(crate) unsafe fn put_host_blob_as(
    api: &'static ApiDef,
    ptr: *const c_void,
    len: usize,
    how: BlobWrite,
) -> Option<ObjectId> {
    if !active() || ptr.is_null() {
        return None;
    }
    let bytes = std::slice::from_raw_parts(ptr as *const u8, len);
    let id = crate::fingerprint::blob_id(bytes);
    store_object(api, id, bytes, Object::Blob(how))
}

/// Blocking D2H results this long or longer are recorded as digests, not bytes
/// ([`hrr_archive::digest`]): `HRR_CAPTURE_DIGEST_MIN` bytes (`off`: never), else
/// [`hrr_archive::digest::DEFAULT_MIN`]. Asked once.
pub fn digest_min() -> u64 {
    static MIN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MIN.get_or_init(
        || match std::env::var("HRR_CAPTURE_DIGEST_MIN").ok().as_deref() {
            Some("off" | "never") => u64::MAX,
            Some(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
                notice(&format!(
                    "HRR_CAPTURE_DIGEST_MIN={v:?} is not a number of bytes (or `off`): \
                     results of 16 MiB or more are digested"
                ));
                hrr_archive::digest::DEFAULT_MIN
            }),
            None => hrr_archive::digest::DEFAULT_MIN,
        },
    )
}

/// Store the result of `len` bytes a blocking D2H copy from device address `src` left at
/// `ptr`, before the copy returns: below [`digest_min`] its bytes, written as `how` says; else
/// its digest
/// ([`hrr_archive::digest`]), taken on the device where the API can
/// (`ApiDef::device_digests`), else here on several threads, stored as a small blob. Async
/// results are stored whole (by the recorder thread, off the program's; an unchanged result
/// in the same buffer costs a fingerprint, not a store: [`crate::fingerprint::blob_id`]).
/// `None` if recording is off or failed.
///
/// # Safety
/// `ptr` is null or readable for `len` bytes, and holds the result `src` holds.
pub(crate) unsafe fn put_result(
    api: &'static ApiDef,
    ptr: *const c_void,
    len: usize,
    src: u64,
    how: BlobWrite,
) -> Option<ObjectId> {
    // (a digest object as long as its result, 40 bytes, would read as the result itself)
    if (len as u64) < digest_min() || hrr_archive::digest::ResultDigest::stored_len(len) == len {
        return put_host_blob_as(api, ptr, len, how);
    }
    if !active() || ptr.is_null() {
        return None;
    }
    // (the tracker of host-visible memory takes over this result's pieces, when the GPU took
    // them: never an earlier buffer's)
    crate::fingerprint::forget_recent();
    let bytes = std::slice::from_raw_parts(ptr as *const u8, len);
    let on_device = api.device_digests.and_then(|f| f(src, bytes));
    let chunks = on_device.unwrap_or_else(|| hrr_archive::digest::digests(bytes));
    put_digests(api, len, chunks)
}

/// Store the digest object of a result of `len` bytes whose chunk digests are `chunks`
/// ([`hrr_archive::digest::ResultDigest`]), as a small blob. `None` if recording failed.
pub(crate) fn put_digests(
    api: &'static ApiDef,
    len: usize,
    chunks: Vec<[u8; 16]>,
) -> Option<ObjectId> {
    let encoded = hrr_archive::digest::ResultDigest {
        len: len as u64,
        chunks,
    }
    .encode();
    let id = ObjectId::of(&encoded);
    store_object(api, id, &encoded, Object::Blob(BlobWrite::Staged))
}

/// What [`store_object`] stores.
#[derive(Clone, Copy)]
enum Object {
    /// A host blob, written as it says.
    Blob(BlobWrite),
    /// A code object of this kind (staged like a blob).
    Code(CodeKind),
}

/// Store `bytes`, whose id (content hash) is `id`, as `what`: nothing when the blob queue
/// knows it; else handed to the queue outside the recorder's lock, or, without a blob thread,
/// written here under it. A disk too full or a failed write stops the capture (`None`).
fn store_object(
    api: &'static ApiDef,
    id: ObjectId,
    bytes: &[u8],
    what: Object,
) -> Option<ObjectId> {
    let failed = match what {
        Object::Blob(_) => "cannot write a blob",
        Object::Code(_) => "cannot write a code object",
    };
    let queue = {
        let mut state = lock();
        if !open(&mut state, api) {
            return None;
        }
        let rec = state.as_mut()?;
        let queue = rec.blobs.clone();
        let code = matches!(what, Object::Code(_));
        if queue.as_ref().is_some_and(|q| q.knows(&id, code)) {
            return Some(id);
        }
        if let Some(why) = rec.disk_too_full(bytes.len() as u64) {
            stop(&mut state, &why);
            return None;
        }
        match queue {
            Some(q) => q,
            None => {
                // No blob thread: written here, under the lock.
                let written = catch(|| match what {
                    Object::Blob(_) => rec.writer.put_blob(bytes),
                    Object::Code(kind) => rec.writer.put_code_object(bytes, kind),
                })?;
                return match written {
                    Ok(id) => Some(id),
                    Err(e) => {
                        stop(&mut state, &format!("{failed}: {e}"));
                        None
                    }
                };
            }
        }
    };
    let put = match what {
        Object::Blob(BlobWrite::Staged) => queue.put(id, bytes),
        // a small one is journaled by the flush that follows, sooner than its file is written
        Object::Blob(BlobWrite::Now) if bytes.len() > JOURNAL_OBJECT_MAX => {
            queue.put_now(id, bytes)
        }
        Object::Blob(BlobWrite::Now) => queue.put(id, bytes),
        Object::Code(kind) => queue.put_code(id, kind, bytes),
    };
    match put {
        Ok(()) => Some(id),
        Err(e) => {
            let mut state = lock();
            if state.is_some() {
                stop(&mut state, &format!("{failed}: {e}"));
            }
            None
        }
    }
}

/// Note, outside an event, a call of `api` replay cannot reproduce exactly and why (listed in
/// the manifest's `unreplayable_apis`).
pub fn note_unreplayable_now(api: &'static ApiDef, call: &str, why: &str) {
    if !active() {
        return;
    }
    let mut state = lock();
    if open(&mut state, api) {
        if let Some(rec) = state.as_mut() {
            rec.note_unreplayable(call, why);
        }
    }
}

/// Store a code object; `None` if recording is off or failed.
///
/// Hashed on the calling thread (its id goes into the load's event) and, where the process has
/// a blob queue, staged and written by its threads like a host blob: the runtime loads a
/// module at its first kernel's first use, often inside a program's timed region, where a file
/// created and renamed on the calling thread costs hundreds of microseconds.
pub fn put_code(api: &'static ApiDef, bytes: &[u8], kind: CodeKind) -> Option<ObjectId> {
    if !active() {
        return None;
    }
    store_object(api, ObjectId::of(bytes), bytes, Object::Code(kind))
}

impl Recorder {
    /// Put the calls made through counting forwarders into the manifest (`passthrough_calls`).
    fn note_forwarded_calls(&mut self) {
        self.writer.manifest_mut().passthrough_calls =
            crate::hook::forward::called().into_iter().collect();
    }

    /// Note a call replay cannot reproduce, and why (listed in the manifest).
    pub fn note_unreplayable(&mut self, call: &str, why: &str) {
        let list = self
            .writer
            .manifest_mut()
            .unreplayable_apis
            .entry(call.to_string())
            .or_default();
        if !list.iter().any(|w| w == why) {
            list.push(why.to_string());
        }
    }

    fn disk_too_full(&self, incoming: u64) -> Option<String> {
        let dir = std::ffi::CString::new(self.writer.dir().as_os_str().as_encoded_bytes()).ok()?;
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a valid path and an out-struct.
        if unsafe { libc::statvfs(dir.as_ptr(), &mut st) } != 0 {
            return None;
        }
        let free = st.f_bavail as u64 * st.f_frsize as u64;
        (free < self.min_free.saturating_add(incoming)).then(|| {
            format!(
                "Disk nearly full ({} MiB free, {} MiB reserve) under {}",
                free >> 20,
                self.min_free >> 20,
                self.writer.dir().display()
            )
        })
    }
}

extern "C" fn at_exit() {
    let _ = catch(finish);
}

/// Clean shutdown: trailer, manifests, root index.
pub fn finish() {
    crate::hook::profile::report();
    crate::hook::results::wait_recorded();
    drain_blobs();
    let mut state = lock();
    if let Some(mut rec) = state.take() {
        if rec.pid == current_pid() {
            if let Some(Err(e)) = rec.blobs.as_ref().map(|q| q.finish()) {
                let _ = rec
                    .writer
                    .events()
                    .mark_incomplete(&format!("cannot write a blob: {e}"));
            }
            rec.note_forwarded_calls();
            if let Err(e) = rec.writer.finish() {
                notice(&format!("could not finish the archive: {e}"));
            }
        } else {
            std::mem::forget(rec);
        }
    }
    if active() {
        HOT.mode.store(MODE_STOPPED, Ordering::Release);
    }
}

/// The longest an event waits in the writer's buffer before the flusher hands it to the kernel
/// (so `kill -9` of a program that never synchronises loses at most about this much).
const FLUSH_PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

/// The process whose flusher thread runs (a fork child starts its own).
static FLUSHER_PID: AtomicU32 = AtomicU32::new(0);

/// Start this process's flusher thread once: it first starts the pool of hashing threads
/// (`hrr_archive::start_pool`, off the program's threads: a module load or a copy that needed
/// it first waited for its threads to start), then every [`FLUSH_PERIOD`] it hands buffered
/// events to the kernel (not fsync), skipping a tick when another thread holds the recorder.
fn start_flusher() {
    let pid = current_pid();
    if FLUSHER_PID.swap(pid, Ordering::AcqRel) == pid {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("hrr-flush".into())
        .spawn(move || {
            hrr_archive::start_pool();
            loop {
                std::thread::sleep(FLUSH_PERIOD);
                if !active() || current_pid() != pid {
                    return;
                }
                if let Ok(mut state) = STATE.try_lock() {
                    match state.as_mut() {
                        Some(rec) if rec.pid == pid => {
                            // written by the events thread, not under the recorder's lock
                            let _ = rec.writer.events().hand_over();
                        }
                        _ => return,
                    }
                }
            }
        });
    if spawned.is_err() {
        FLUSHER_PID.store(0, Ordering::Release);
    }
}

/// Best effort from a terminating signal's handler: mark the archive incomplete with `why`,
/// hand buffered events to the kernel and write the manifest. Skipped if another thread holds
/// the state (the flusher has then written all but the last moments).
pub fn emergency_mark(why: &'static str) {
    if let Ok(mut state) = STATE.try_lock() {
        if let Some(rec) = state.as_mut() {
            if rec.pid == current_pid() {
                if let Some(q) = &rec.blobs {
                    q.drain_here();
                }
                let _ = rec.writer.events().mark_incomplete(why);
                let _ = rec.writer.events().flush(false);
                rec.note_forwarded_calls();
                let _ = rec.writer.checkpoint_manifest();
            }
        }
    }
}

/// Best effort from a fatal-signal handler: hand buffered events to the kernel and write the
/// manifest as incomplete. Skipped if another thread holds the state.
pub fn emergency_flush() {
    if let Ok(mut state) = STATE.try_lock() {
        if let Some(rec) = state.as_mut() {
            if rec.pid == current_pid() {
                if let Some(q) = &rec.blobs {
                    q.drain_here();
                }
                rec.note_forwarded_calls();
                let _ = rec.writer.checkpoint_manifest();
            }
        }
    }
}
