//! What the CUDA and HIP backends share: the error of a failed call ([`CallFailed`], [`Call`]),
//! where a loaded library came from, the recorded → live handle map ([`Handles`]), waiting for
//! a stream with the `--sync-watchdog-ms` watchdog ([`Waiter`] over [`Streams`]), the
//! translation of pointer arguments of a launch ([`translate_pointer_args`], [`launch_call!`]),
//! and the dispatch arms both backends share ([`shared_calls!`]).

use std::ffi::{c_int, c_void, CStr};

use anyhow::{anyhow, Result};
use hrr_calls::shapes::Launch;

use super::Outcome;
use crate::replay::placement::Placement;

/// Why a copy whose host source was not recorded is skipped.
pub const H2D_NOT_RECORDED: &str = "H2D source not recorded";

/// Why a host-to-host copy is skipped.
pub const H2H: &str = "host-to-host copy";

/// Why a host callback is skipped.
pub const HOST_FUNC: &str = "host callbacks are not in the archive";

/// Opaque handle of the driver or runtime.
pub type H = *mut c_void;

/// A driver or runtime call that returned an error (CUDA and HIP results are both C ints).
#[derive(Debug)]
pub struct CallFailed {
    /// Entry point.
    pub call: &'static str,
    /// Result code.
    pub code: c_int,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for CallFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)
    }
}

impl std::error::Error for CallFailed {}

/// A wait the `--sync-watchdog-ms` watchdog gave up on: the GPU work did not finish in time.
#[derive(Debug)]
pub struct Hung {
    /// The watchdog's limit, in milliseconds.
    pub ms: u64,
}

impl std::fmt::Display for Hung {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "still running after {} ms (--sync-watchdog-ms); the GPU is hung or the kernel is very slow",
            self.ms
        )
    }
}

impl std::error::Error for Hung {}

/// The result of one entry point behind a trait: the outer error is a missing entry point (an
/// error at once), the inner one what the call returned.
pub type Call<T> = Result<std::result::Result<T, CallFailed>>;

/// The file the loaded library holding `addr` came from (links resolved), else `fallback`.
pub fn loaded_from(addr: *const c_void, fallback: &str) -> String {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads.
    if unsafe { libc::dladdr(addr, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: a NUL-terminated path owned by the loader.
        let p = unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned();
        return std::fs::canonicalize(&p)
            .map(|c| c.display().to_string())
            .unwrap_or(p);
    }
    fallback.into()
}

/// Maps keyed by recorded handles.
pub use hrr_calls::handles::HandleMap;

/// Recorded handles (streams, events, modules, functions, ...) → the live ones of this replay.
pub struct Handles(HandleMap<H>);

impl Default for Handles {
    fn default() -> Self {
        let mut m = HandleMap::default();
        m.insert(0u64, std::ptr::null_mut());
        Handles(m)
    }
}

impl Handles {
    /// The live handle of `recorded`; 0, 1 and 2 are the API's own (null, legacy and
    /// per-thread default streams) and stay as they are.
    pub fn get(&self, recorded: u64) -> Result<H> {
        if recorded <= 2 {
            return Ok(recorded as H);
        }
        self.0
            .get(&recorded)
            .copied()
            .ok_or_else(|| anyhow!("handle 0x{recorded:x} was never created in this archive"))
    }

    /// `recorded` is now `live`.
    pub fn insert(&mut self, recorded: u64, live: H) {
        self.0.insert(recorded, live);
    }

    /// `recorded` was destroyed.
    pub fn remove(&mut self, recorded: u64) {
        self.0.remove(&recorded);
    }
}

/// The stream and event calls of an API (CUDA and HIP share their signatures): used by the
/// [`Waiter`] and by `backend::stream_calls`.
pub trait Streams {
    /// Create a stream, with a priority when one was recorded.
    fn create_stream(&self, flags: u32, priority: Option<i32>) -> Call<H>;
    /// Destroy a stream.
    fn destroy_stream(&self, stream: H) -> Call<()>;
    /// Wait for `stream`.
    fn synchronize_stream(&self, stream: H) -> Call<()>;
    /// Make `stream` wait for `event`.
    fn wait_event(&self, stream: H, event: H, flags: u32) -> Call<()>;
    /// Create an event.
    fn create_event(&self, flags: u32) -> Call<H>;
    /// Record `event` on `stream`.
    fn record_event(&self, event: H, stream: H) -> Call<()>;
    /// Wait for `event`.
    fn synchronize_event(&self, event: H) -> Call<()>;
    /// Has `event` completed? (`Ok(false)`: not yet.)
    fn query_event(&self, event: H) -> Call<bool>;
    /// Destroy an event.
    fn destroy_event(&self, event: H) -> Call<()>;
    /// Milliseconds between two completed events recorded with timing.
    fn elapsed_ms(&self, start: H, end: H) -> Call<f32>;
}

/// Waiting for streams: plainly, or polling an event under the `--sync-watchdog-ms` watchdog.
pub struct Waiter {
    watchdog: Option<H>,
    watchdog_ms: u64,
    sync_after_launch: bool,
}

impl Waiter {
    /// From `--sync-after-launch` and `--sync-watchdog-ms`.
    pub fn new(sync_after_launch: bool, watchdog_ms: u64) -> Self {
        Waiter {
            watchdog: None,
            watchdog_ms,
            sync_after_launch,
        }
    }

    /// Wait after every launch (`--sync-after-launch`, or a watchdog is set).
    pub fn after_launch(&self) -> bool {
        self.sync_after_launch || self.watchdog_ms > 0
    }

    /// After a kernel launch on `stream` returned `result`: an error names the kernel; work
    /// `captured` into a graph runs later; else wait when asked to.
    pub fn launched(
        &mut self,
        api: &impl Streams,
        result: std::result::Result<(), CallFailed>,
        (stream, captured): (H, impl FnOnce() -> bool),
        kernel: &str,
        seq: u64,
    ) -> Result<Outcome> {
        // (demangled only when a message needs it: a long C++ name costs more than a launch)
        let name = || crate::demangle::demangle(kernel);
        result
            .map_err(|e| anyhow::Error::new(e).context(format!("launching kernel `{}`", name())))?;
        if captured() {
            return Ok(Outcome::Done); // captured into a graph: runs when the graph is launched
        }
        if self.after_launch() {
            self.wait(api, stream, &format!("kernel `{}` (event #{seq})", name()))?;
        }
        Ok(Outcome::Launched)
    }

    /// Wait for `stream`; `what` names the work in errors.
    pub fn wait(&mut self, api: &impl Streams, stream: H, what: &str) -> Result<()> {
        if self.watchdog_ms == 0 {
            return api
                .synchronize_stream(stream)?
                .map_err(|e| anyhow::Error::new(e).context(what.to_string()));
        }
        let e = match self.watchdog {
            Some(e) => e,
            None => {
                let e = api.create_event(2)??; // no timing
                self.watchdog = Some(e);
                e
            }
        };
        api.record_event(e, stream)??;
        let start = std::time::Instant::now();
        loop {
            match api.query_event(e)? {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(err) => return Err(anyhow::Error::new(err).context(what.to_string())),
            }
            if start.elapsed().as_millis() as u64 > self.watchdog_ms {
                return Err(anyhow::Error::new(Hung {
                    ms: self.watchdog_ms,
                })
                .context(what.to_string()));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// Whether a launch is made: not when its argument layout was unknown at capture (skipped),
/// or `--kernel-filter` leaves its kernel out.
pub fn launch_gate(l: &Launch, filter: Option<&str>) -> std::result::Result<(), Outcome> {
    if l.args_known == 0 {
        return Err(Outcome::Skipped(format!(
            "argument layout of `{}` unknown",
            l.kernel
        )));
    }
    if filter.is_some_and(|p| !l.kernel.contains(p)) {
        return Err(Outcome::Filtered);
    }
    Ok(())
}

/// Translate the pointer arguments of a launch that point into ranges that moved: 8-byte
/// arguments, and every 8-byte-aligned word of a larger (struct) argument whose value lies in
/// a moved range (libraries such as cuBLAS pass their pointers inside one parameter struct;
/// such a value is a pointer into a live allocation, not a plausible integer). Pointers stored
/// in device memory cannot be translated.
pub fn translate_pointer_args(args: &mut [u8], offsets: &[u64], sizes: &[u64], mem: &Placement) {
    if !mem.any_moved() {
        return;
    }
    for (o, s) in offsets.iter().zip(sizes) {
        let (o, s) = (*o as usize, *s as usize);
        let Some(arg) = args.get_mut(o..o.saturating_add(s)) else {
            continue;
        };
        if s < 8 {
            continue;
        }
        for word in arg.chunks_exact_mut(8) {
            let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let t = mem.translate(v);
            if t != v {
                word.copy_from_slice(&t.to_le_bytes());
            }
        }
    }
}

/// Call a launch entry point `$entry` through the call macro `$call` (`cu` or `hip`) with the
/// function, the grid, block and shared memory of a recorded `hrr_calls::shapes::Launch`, the
/// stream and the remaining arguments.
macro_rules! launch_call {
    ($call:ident, $api:expr, $entry:ident, $func:expr, $launch:expr, $stream:expr $(, $rest:expr)*) => {{
        let l: &hrr_calls::shapes::Launch = $launch;
        $call!(
            $api,
            $entry($func, l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z, l.shared_mem, $stream $(, $rest)*)
        )
    }};
}
pub(crate) use launch_call;

/// Methods of an entry-point table that each call one entry point through its call macro
/// `$call`: `fn name(arguments) => entry(its arguments);` answers the call's status,
/// `fn name(arguments) -> out: T = init => entry(…);` the value the entry point wrote to `out`
/// (which starts as `init`) once it succeeded. The plain methods of [`impl_vmm!`],
/// [`impl_streams!`] and [`impl_device_memory!`].
macro_rules! forward_calls {
    ($call:ident: $(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $out:ident: $t:ty = $init:expr)?
        => $entry:ident($($e:expr),*);)*) => {
        $(
            fn $name(
                &self,
                $($arg: $ty),*
            ) -> $crate::replay::backend::shared::Call<
                $crate::replay::backend::shared::forward_calls!(@out $($t)?),
            > {
                $(let mut $out: $t = $init;)?
                Ok($call!(self, $entry($($e),*))$(.map(|()| $out))?)
            }
        )*
    };
    (@out) => { () };
    (@out $t:ty) => { $t };
}
pub(crate) use forward_calls;

/// Implement `crate::replay::placement::Vmm` for an entry-point table `$api` through its call
/// macro `$call` (`cu` or `hip`), naming the entry point of each operation (CUDA and HIP share
/// their signatures).
macro_rules! impl_vmm {
    ($api:ty, $call:ident, reserve: $reserve:ident, free_reservation: $afree:ident,
     create: $create:ident, release: $release:ident, map: $map:ident, unmap: $unmap:ident,
     set_access: $access:ident, alloc: $alloc:ident, free: $free:ident,
     synchronize: $sync:ident) => {
        impl $crate::replay::placement::Vmm for $api {
            $crate::replay::backend::shared::forward_calls! { $call:
                fn reserve(size: u64, align: u64, hint: u64) -> got: u64 = 0
                    => $reserve(&mut got, size as usize, align as usize, hint, 0);
                fn create(size: u64, prop: &[u8], flags: u64) -> h: u64 = 0
                    => $create(&mut h, size as usize, prop.as_ptr(), flags);
                fn alloc(size: u64) -> p: u64 = 0 => $alloc(&mut p, size as usize);
                fn free_reservation(addr: u64, size: u64) => $afree(addr, size as usize);
                fn release(handle: u64) => $release(handle);
                fn map(addr: u64, size: u64, offset: u64, handle: u64)
                    => $map(addr, size as usize, offset as usize, handle, 0);
                fn unmap(addr: u64, size: u64) => $unmap(addr, size as usize);
                fn set_access(addr: u64, size: u64, desc: &[u8], count: usize)
                    => $access(addr, size as usize, desc.as_ptr(), count);
                fn free(ptr: u64) => $free(ptr);
                fn synchronize() => $sync();
            }
        }
    };
}
pub(crate) use impl_vmm;

/// Implement [`Streams`] for an entry-point table `$api` through its call macro `$call`,
/// naming the entry points; `$not_ready` is the API's "not ready" result of an event query.
macro_rules! impl_streams {
    ($api:ty, $call:ident, create: $create:ident, create_with_priority: $create_prio:ident,
     destroy: $destroy:ident, synchronize: $sync:ident, wait_event: $wait:ident,
     create_event: $ecreate:ident, record_event: $record:ident,
     synchronize_event: $esync:ident, query_event: $query:ident,
     destroy_event: $edestroy:ident, elapsed: $elapsed:ident, not_ready: $not_ready:expr) => {
        impl $crate::replay::backend::shared::Streams for $api {
            fn create_stream(
                &self,
                flags: u32,
                priority: Option<i32>,
            ) -> $crate::replay::backend::shared::Call<H> {
                let mut s: H = std::ptr::null_mut();
                Ok(match priority {
                    Some(p) => $call!(self, $create_prio(&mut s, flags, p)),
                    None => $call!(self, $create(&mut s, flags)),
                }
                .map(|()| s))
            }
            fn query_event(&self, event: H) -> $crate::replay::backend::shared::Call<bool> {
                Ok(match $call!(self, $query(event)) {
                    Ok(()) => Ok(true),
                    Err(err) if err.code == $not_ready => Ok(false),
                    Err(err) => Err(err),
                })
            }
            $crate::replay::backend::shared::forward_calls! { $call:
                fn create_event(flags: u32) -> e: H = std::ptr::null_mut()
                    => $ecreate(&mut e, flags);
                fn elapsed_ms(start: H, end: H) -> ms: f32 = 0.0 => $elapsed(&mut ms, start, end);
                fn destroy_stream(stream: H) => $destroy(stream);
                fn synchronize_stream(stream: H) => $sync(stream);
                fn wait_event(stream: H, event: H, flags: u32) => $wait(stream, event, flags);
                fn record_event(event: H, stream: H) => $record(event, stream);
                fn synchronize_event(event: H) => $esync(event);
                fn destroy_event(event: H) => $edestroy(event);
            }
        }
    };
}
pub(crate) use impl_streams;

/// Call entry point `$name` of table `$api`, turning a missing symbol into an error at once
/// (`$missing` + the name; the caller's `?`) and a non-zero result into [`CallFailed`]: the
/// body of the `cu!` and `hip!` macros.
macro_rules! entry_call {
    ($missing:literal, $api:expr, $name:ident ( $($arg:expr),* )) => {{
        let f = $api.$name.ok_or_else(|| anyhow::anyhow!(concat!($missing, stringify!($name))))?;
        // SAFETY: arguments follow the API's documented contract for this call.
        let r = unsafe { f($($arg),*) };
        if r != 0 {
            Err($crate::replay::backend::CallFailed { call: stringify!($name), code: r, name: $api.error_name(r) })
        } else {
            Ok(())
        }
    }};
}
pub(crate) use entry_call;

/// Implement `crate::replay::placement::DeviceMemory` for an entry-point table `$api` through
/// its call macro `$call`, naming the entry points.
macro_rules! impl_device_memory {
    ($api:ty, $call:ident, managed: $managed:ident, host: $host:ident, memset8: $d8:ident,
     memset16: $d16:ident, memset32: $d32:ident) => {
        impl $crate::replay::placement::DeviceMemory for $api {
            $crate::replay::backend::shared::forward_calls! { $call:
                fn alloc_managed(size: u64, flags: u32) -> p: u64 = 0
                    => $managed(&mut p, size as usize, flags);
                fn alloc_host(size: u64, flags: u32) -> p: u64 = 0
                    => $host(&mut p as *mut u64 as *mut _, size as usize, flags);
            }
            fn memset(
                &self,
                dst: u64,
                value: u64,
                count: usize,
                width: u64,
                stream: H,
            ) -> $crate::replay::backend::shared::Call<()> {
                Ok(match width {
                    1 => $call!(self, $d8(dst, value as u8, count, stream)),
                    2 => $call!(self, $d16(dst, value as u16, count, stream)),
                    _ => $call!(self, $d32(dst, value as u32 as _, count, stream)),
                })
            }
        }
    };
}
pub(crate) use impl_device_memory;

/// Does a call of `kind` move or write device data (so that not replaying it changes results)?
pub fn writes_device_data(kind: hrr_calls::Kind) -> bool {
    use hrr_calls::Kind;
    matches!(
        kind,
        Kind::H2d | Kind::D2d | Kind::Copy | Kind::Memset | Kind::Launch | Kind::GraphLaunch
    )
}

/// The calls the CUDA and HIP backends replay alike, matched on the backend's own `Op` (the two
/// tables name these operations the same) and handled by the backend's methods of the same
/// names or the shared `memory_calls` and `stream_calls`: the program's VMM calls but the
/// reservation, the 1D copies but `Memcpy` and `MemcpyAsync`, the results of async D2H copies,
/// the stream and event calls that name no stream to translate, and host functions (skipped,
/// [`HOST_FUNC`]). `$b` is the backend (`self`); each backend's `replay` falls back to this
/// after its own arms, and what neither replays is [`Outcome::Ignored`].
macro_rules! shared_calls {
    ($b:ident, $op:expr, $ev:expr, $blobs:expr) => {{
        use $crate::replay::backend::shared::HOST_FUNC;
        use $crate::replay::backend::{memory_calls, stream_calls, Outcome};
        match $op {
            Op::MemAddressFree => memory_calls::address_free(&mut $b.mem, &$b.api, $ev),
            Op::MemCreate => $b.vmm_create($ev),
            Op::MemRelease => memory_calls::release(&mut $b.mem, &$b.api, $ev),
            Op::MemMap => memory_calls::map(&mut $b.mem, &$b.api, $ev),
            Op::MemUnmap => memory_calls::unmap(&mut $b.mem, &$b.api, $ev),
            Op::MemSetAccess => memory_calls::set_access(&mut $b.mem, &$b.api, $ev),
            Op::MemcpyHtoD | Op::MemcpyHtoDAsync => $b.copy_h2d($ev, $blobs),
            Op::MemcpyDtoH => $b.copy_d2h($ev, false),
            Op::MemcpyDtoHAsync => $b.copy_d2h($ev, true),
            Op::MemcpyDtoD | Op::MemcpyDtoDAsync => $b.copy_d2d($ev),
            Op::MemcpyResult => $b.copy_result($ev),
            Op::StreamCreateWithPriority => {
                stream_calls::stream_create(&mut $b.handles, &$b.api, $ev, true)
            }
            Op::StreamDestroy => stream_calls::stream_destroy(&mut $b.handles, &$b.api, $ev),
            Op::EventSynchronize => stream_calls::event_synchronize(&$b.handles, &$b.api, $ev),
            Op::EventDestroy => stream_calls::event_destroy(&mut $b.handles, &$b.api, $ev),
            Op::LaunchHostFunc => Ok(Outcome::Skipped(HOST_FUNC.into())),
            // A call that moves or writes device data and that no arm replays is skipped work,
            // said so (never a silent pass); anything else changes nothing replay depends on.
            op if $crate::replay::backend::shared::writes_device_data(op.kind()) => Ok(
                Outcome::Skipped(format!("{:?} is not replayed by this build", op)),
            ),
            _ => Ok(Outcome::Ignored),
        }
    }};
}
pub(crate) use shared_calls;
