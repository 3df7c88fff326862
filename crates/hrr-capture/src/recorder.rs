//! The recorder: per-process capture state behind one mutex. Opens `pid-<pid>/` lazily on the
//! first recorded call (so processes that never touch the driver get none), writes events through
//! hrr-archive, finishes on exit, flushes what it can on fatal signals, and stops (marking the
//! archive incomplete) when the disk is nearly full or a write fails. Never panics across FFI.
//!
//! The archive's schema is that of the [`Api`] whose call opened it (CUDA driver or HIP); call
//! ids are per schema. A process that uses both APIs gets the first one recorded; calls of the
//! other are not recorded, and the manifest says so.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hrr_archive::schema::PayloadBuilder;
use hrr_archive::writer::ProcessWriter;
use hrr_archive::{CodeKind, ObjectId};

use crate::ffi::{self, CUresult};

const MODE_UNDECIDED: u8 = 0;
const MODE_OFF: u8 = 1;
const MODE_ON: u8 = 2;
const MODE_STOPPED: u8 = 3;

static MODE: AtomicU8 = AtomicU8::new(MODE_UNDECIDED);
/// This process's id, kept current across `fork` by an atfork handler (no syscall per event).
static PID: AtomicU32 = AtomicU32::new(0);

extern "C" fn after_fork_in_child() {
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
}

/// This process's id (cached; correct in fork children).
pub fn current_pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => std::process::id(),
        pid => pid,
    }
}
static OUTPUT: OnceLock<PathBuf> = OnceLock::new();
static STATE: Mutex<Option<Recorder>> = Mutex::new(None);
/// Passthrough symbols noted before the archive was opened.
static PENDING_PASSTHROUGH: Mutex<Vec<String>> = Mutex::new(Vec::new());

thread_local! {
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// The GPU API a process capture records: it selects the schema and the device facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// The CUDA driver API (`cuda-driver`).
    CudaDriver,
    /// The HIP runtime API (`hip`).
    Hip,
}

impl Api {
    /// Schema `api` name.
    pub fn name(self) -> &'static str {
        match self {
            Api::CudaDriver => "cuda-driver",
            Api::Hip => "hip",
        }
    }

    fn schema(self) -> hrr_archive::schema::Schema {
        match self {
            Api::CudaDriver => crate::hooks::schema(),
            Api::Hip => crate::hip::hooks::schema(),
        }
    }

    fn metadata(self) -> serde_json::Value {
        match self {
            Api::CudaDriver => crate::metadata::collect(),
            Api::Hip => crate::hip::device::collect(),
        }
    }
}

/// What the recorder knows about a function or kernel handle.
#[derive(Debug, Clone)]
pub struct KernelInfo {
    /// Kernel name.
    pub name: String,
    /// Code object it came from.
    pub code: Option<ObjectId>,
    /// True for `CUkernel` handles (library kernels), false for `CUfunction`.
    pub is_library_kernel: bool,
}

/// A kernel's parameters as (offset, size), from the driver.
pub type ParamLayout = Arc<[(u32, u32)]>;

/// Per-process capture state.
pub struct Recorder {
    pid: u32,
    api: Api,
    writer: ProcessWriter,
    /// Module or library handle → code object.
    pub modules: HashMap<u64, Option<ObjectId>>,
    /// Function or kernel handle → what it is.
    pub kernels: HashMap<u64, KernelInfo>,
    layouts: HashMap<u64, Option<ParamLayout>>,
    /// Payload buffer reused from event to event.
    scratch: Vec<u8>,
    /// Streams currently in stream capture.
    pub capturing: HashSet<u64>,
    /// Graphs a recorded `cuStreamEndCapture` produced (replay rebuilds exactly these).
    pub captured_graphs: HashSet<u64>,
    min_free: u64,
}

/// Decide once whether this process records: the output variable is set and this is not a
/// secure-execution (setuid) process.
pub fn init_from_env() {
    if MODE.load(Ordering::Acquire) != MODE_UNDECIDED {
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
            PID.store(std::process::id(), Ordering::Relaxed);
            // SAFETY: registering plain extern "C" functions.
            unsafe {
                libc::atexit(at_exit);
                libc::pthread_atfork(None, None, Some(after_fork_in_child));
            }
            MODE_ON
        }
        _ => MODE_OFF,
    };
    MODE.store(mode, Ordering::Release);
}

/// Is recording on (and not stopped) in this process?
#[inline]
pub fn active() -> bool {
    MODE.load(Ordering::Relaxed) == MODE_ON
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

/// Run `f` unless this thread is already inside a hook; nested driver calls pass through.
pub fn guarded<R>(f: impl FnOnce() -> R) -> Option<R> {
    if IN_HOOK.with(|h| h.replace(true)) {
        return None;
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    IN_HOOK.with(|h| h.set(false));
    r
}

fn notice(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "[HRR capture] {msg}");
}

fn stop(state: &mut Option<Recorder>, why: &str) {
    notice(&format!(
        "{why}; capture stopped, the application continues. The archive is marked incomplete."
    ));
    if let Some(mut rec) = state.take() {
        let _ = rec.writer.events().mark_incomplete(why);
        let _ = rec.writer.finish();
    }
    MODE.store(MODE_STOPPED, Ordering::Release);
}

fn open(state: &mut Option<Recorder>, api: Api) -> bool {
    let pid = current_pid();
    if let Some(rec) = state.as_mut() {
        if rec.pid == pid {
            if rec.api != api {
                note_unreplayable(
                    rec,
                    api.name(),
                    &format!(
                        "this process also calls the {} API; only the {} API, used first, is recorded",
                        api.name(),
                        rec.api.name()
                    ),
                );
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
    match ProcessWriter::create(root, pid, ppid, &api.schema()) {
        Ok(mut writer) => {
            // The runtime is asked with hooks passed through: a runtime that calls its own
            // exports must not re-enter the recorder while it is locked.
            let meta = IN_HOOK.with(|h| {
                let before = h.replace(true);
                let meta = api.metadata();
                h.set(before);
                meta
            });
            writer.manifest_mut().metadata = Some(meta);
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
            *state = Some(Recorder {
                pid,
                api,
                writer,
                modules: HashMap::new(),
                kernels: HashMap::new(),
                layouts: HashMap::new(),
                scratch: Vec::with_capacity(256),
                capturing: HashSet::new(),
                captured_graphs: HashSet::new(),
                min_free,
            });
            if let Some(rec) = state.as_mut() {
                let pending = std::mem::take(
                    &mut *PENDING_PASSTHROUGH
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()),
                );
                for name in pending {
                    *rec.writer
                        .manifest_mut()
                        .passthrough_calls
                        .entry(name)
                        .or_default() += 1;
                }
            }
            crate::signals::install();
            true
        }
        Err(e) => {
            notice(&format!("Capture disabled: cannot create the archive: {e}"));
            MODE.store(MODE_STOPPED, Ordering::Release);
            false
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Recorder>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Record one CUDA driver event of call `id` with `result`; `fill` appends the call's fields
/// after the result.
pub fn record(id: u16, result: CUresult, fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder)) {
    record_api(Api::CudaDriver, id, |rec, p| {
        p.i32(result);
        fill(rec, p);
    });
}

/// Record one event of call `id` of `api`; `fill` writes every field (the result too, for calls
/// that return one).
pub fn record_api(api: Api, id: u16, fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder)) {
    if !active() {
        return;
    }
    let mut state = lock();
    if !open(&mut state, api) {
        return;
    }
    let rec = state.as_mut().expect("opened");
    let mut p = PayloadBuilder::with_buffer(std::mem::take(&mut rec.scratch));
    fill(rec, &mut p);
    let result = rec.writer.events().append(id, thread_id(), p.as_bytes());
    rec.scratch = p.into_bytes();
    if let Err(e) = result {
        stop(&mut state, &format!("cannot write events.bin: {e}"));
    }
}

/// Re-ask the driver for device facts once it is initialised (cudart calls
/// `cuDriverGetVersion` before `cuInit`, so the archive may open before devices can be queried).
pub fn refresh_metadata() {
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
            rec.writer.manifest_mut().metadata = Some(crate::metadata::collect());
            let _ = rec.writer.checkpoint_manifest();
        }
    }
}

/// Flush buffered events to the kernel (not fsync): called at synchronisation points so that a
/// `kill -9` loses little.
pub fn flush_soft() {
    if !active() {
        return;
    }
    if let Some(rec) = lock().as_mut() {
        let _ = rec.writer.events().flush(false);
    }
}

/// Store a host buffer before the call that reads it; `None` if recording is off or failed.
///
/// # Safety
/// `ptr` must be readable for `len` bytes.
pub unsafe fn put_host_blob(ptr: *const c_void, len: usize) -> Option<ObjectId> {
    put_host_blob_api(Api::CudaDriver, ptr, len)
}

/// [`put_host_blob`] for a call of `api`.
///
/// # Safety
/// `ptr` must be readable for `len` bytes.
pub unsafe fn put_host_blob_api(api: Api, ptr: *const c_void, len: usize) -> Option<ObjectId> {
    if !active() || ptr.is_null() {
        return None;
    }
    let bytes = std::slice::from_raw_parts(ptr as *const u8, len);
    let mut state = lock();
    if !open(&mut state, api) {
        return None;
    }
    let rec = state.as_mut()?;
    if let Some(why) = rec.disk_too_full(len as u64) {
        stop(&mut state, &why);
        return None;
    }
    match rec.writer.put_blob(bytes) {
        Ok(id) => Some(id),
        Err(e) => {
            stop(&mut state, &format!("cannot write a blob: {e}"));
            None
        }
    }
}

/// Store a code object; `None` if recording is off or failed.
pub fn put_code(bytes: &[u8], kind: CodeKind) -> Option<ObjectId> {
    put_code_api(Api::CudaDriver, bytes, kind)
}

/// [`put_code`] for a call of `api`.
pub fn put_code_api(api: Api, bytes: &[u8], kind: CodeKind) -> Option<ObjectId> {
    if !active() {
        return None;
    }
    let mut state = lock();
    if !open(&mut state, api) {
        return None;
    }
    let rec = state.as_mut()?;
    match rec.writer.put_code_object(bytes, kind) {
        Ok(id) => Some(id),
        Err(e) => {
            stop(&mut state, &format!("cannot write a code object: {e}"));
            None
        }
    }
}

/// Note a symbol handed out unrecorded (listed in the manifest).
pub fn note_passthrough(name: &CStr) {
    if !active() {
        return;
    }
    let name = name.to_string_lossy().into_owned();
    let mut state = lock();
    match state.as_mut() {
        Some(rec) if rec.pid == current_pid() => {
            *rec.writer
                .manifest_mut()
                .passthrough_calls
                .entry(name)
                .or_default() += 1;
        }
        _ => PENDING_PASSTHROUGH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(name),
    }
}

/// Note a call replay cannot reproduce.
pub fn note_unreplayable(rec: &mut Recorder, call: &str, why: &str) {
    let list = rec
        .writer
        .manifest_mut()
        .unreplayable_apis
        .entry(call.to_string())
        .or_default();
    if !list.iter().any(|w| w == why) {
        list.push(why.to_string());
    }
}

impl Recorder {
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

    /// A function or kernel handle was (re)defined: handle values are reused once their object
    /// is destroyed, so what was cached under the value is dropped.
    pub fn define_kernel(&mut self, handle: u64, info: KernelInfo) {
        self.layouts.remove(&handle);
        self.kernels.insert(handle, info);
    }

    /// Parameter layout `(offset, size)` of a function or kernel handle, from the driver.
    pub fn param_layout(&mut self, handle: u64) -> Option<ParamLayout> {
        if let Some(l) = self.layouts.get(&handle) {
            return l.clone();
        }
        let is_kernel = self
            .kernels
            .get(&handle)
            .is_some_and(|k| k.is_library_kernel);
        let order: [&CStr; 2] = if is_kernel {
            [c"cuKernelGetParamInfo", c"cuFuncGetParamInfo"]
        } else {
            [c"cuFuncGetParamInfo", c"cuKernelGetParamInfo"]
        };
        let mut layout = None;
        for name in order {
            let f = ffi::driver_symbol(name);
            if f.is_null() {
                continue;
            }
            type ParamInfo =
                unsafe extern "C" fn(*mut c_void, usize, *mut usize, *mut usize) -> c_int;
            // SAFETY: both calls share this signature.
            let f: ParamInfo = unsafe { std::mem::transmute(f) };
            let mut v = Vec::new();
            loop {
                let (mut off, mut size) = (0usize, 0usize);
                // SAFETY: out-pointers to locals; the handle came from the application.
                let r = unsafe { f(handle as *mut c_void, v.len(), &mut off, &mut size) };
                if r != 0 || v.len() > 4096 {
                    break;
                }
                v.push((off as u32, size as u32));
            }
            let first_ok = {
                let (mut off, mut size) = (0usize, 0usize);
                // SAFETY: as above.
                unsafe { f(handle as *mut c_void, 0, &mut off, &mut size) == 0 }
            };
            if first_ok || !v.is_empty() {
                layout = Some(Arc::from(v));
                break;
            }
        }
        self.layouts.insert(handle, layout.clone());
        layout
    }
}

extern "C" fn at_exit() {
    let _ = guarded(finish);
}

/// Clean shutdown: trailer, manifests, root index.
pub fn finish() {
    let mut state = lock();
    if let Some(rec) = state.take() {
        if rec.pid == current_pid() {
            if let Err(e) = rec.writer.finish() {
                notice(&format!("could not finish the archive: {e}"));
            }
        } else {
            std::mem::forget(rec);
        }
    }
    if active() {
        MODE.store(MODE_STOPPED, Ordering::Release);
    }
}

/// Best effort from a fatal-signal handler: hand buffered events to the kernel and write the
/// manifest as incomplete. Skipped if another thread holds the state.
pub fn emergency_flush() {
    if let Ok(mut state) = STATE.try_lock() {
        if let Some(rec) = state.as_mut() {
            if rec.pid == current_pid() {
                let _ = rec.writer.checkpoint_manifest();
            }
        }
    }
}

/// Serialises the calls that create or destroy what later calls refer to (allocations, handles):
/// each such call runs and is recorded under this lock, so the recorded order of a `cuMemFree`
/// and a `cuMemAlloc` (or a destroy and a create) on two threads is the order the driver saw,
/// and a reused address or handle value maps to the right object at replay.
static ORDER: Mutex<()> = Mutex::new(());

/// Run `f` (the real call and its recording) under the ordering lock when recording.
pub fn ordered<R>(f: impl FnOnce() -> R) -> R {
    if !active() {
        return f();
    }
    let _order = ORDER.lock().unwrap_or_else(|e| e.into_inner());
    f()
}
