//! What the CUDA and HIP backends share: the error of a failed call ([`CallFailed`], [`Call`]),
//! where a loaded library came from, the recorded → live handle map ([`Handles`]), waiting for
//! a stream with the `--sync-watchdog-ms` watchdog ([`Waiter`] over [`StreamSync`]), and the
//! translation of pointer arguments of a launch ([`translate_pointer_args`], [`launch_call!`]).

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};

use anyhow::{anyhow, bail, Result};

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

/// Recorded handles (streams, events, modules, functions, ...) → the live ones of this replay.
pub struct Handles(HashMap<u64, H>);

impl Default for Handles {
    fn default() -> Self {
        let mut m = HashMap::new();
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

/// The stream and event calls waiting needs.
pub trait StreamSync {
    /// Wait for `stream`.
    fn synchronize_stream(&self, stream: H) -> Call<()>;
    /// Create an event without timing.
    fn create_event(&self) -> Call<H>;
    /// Record `event` on `stream`.
    fn record_event(&self, event: H, stream: H) -> Call<()>;
    /// Has `event` completed? (`Ok(false)`: not yet.)
    fn query_event(&self, event: H) -> Call<bool>;
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

    /// Wait for `stream`; `what` names the work in errors.
    pub fn wait(&mut self, api: &impl StreamSync, stream: H, what: &str) -> Result<()> {
        if self.watchdog_ms == 0 {
            return api
                .synchronize_stream(stream)?
                .map_err(|e| anyhow!("{what}: {e}"));
        }
        let e = match self.watchdog {
            Some(e) => e,
            None => {
                let e = api.create_event()??;
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
                Err(err) => bail!("{what}: {err}"),
            }
            if start.elapsed().as_millis() as u64 > self.watchdog_ms {
                bail!("{what}: still running after {} ms (--sync-watchdog-ms); the GPU is hung or the kernel is very slow", self.watchdog_ms);
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// Translate the 8-byte arguments of a launch that point into ranges that moved (pointers
/// stored in device memory cannot be).
pub fn translate_pointer_args(args: &mut [u8], offsets: &[u64], sizes: &[u64], mem: &Placement) {
    if !mem.any_moved() {
        return;
    }
    for (o, s) in offsets.iter().zip(sizes) {
        let o = *o as usize;
        if *s == 8 && o + 8 <= args.len() {
            let v = u64::from_le_bytes(args[o..o + 8].try_into().expect("8 bytes"));
            args[o..o + 8].copy_from_slice(&mem.translate(v).to_le_bytes());
        }
    }
}

/// Call a launch entry point `$entry` through the call macro `$call` (`cu` or `hip`) with the
/// function, the grid, block and shared memory of a `fields::Geometry`, the stream and the
/// remaining arguments.
macro_rules! launch_call {
    ($call:ident, $api:expr, $entry:ident, $func:expr, $geo:expr, $stream:expr $(, $rest:expr)*) => {{
        let g: &$crate::replay::fields::Geometry = $geo;
        let (grid, block) = (g.grid, g.block);
        $call!(
            $api,
            $entry($func, grid[0], grid[1], grid[2], block[0], block[1], block[2], g.shared_mem, $stream $(, $rest)*)
        )
    }};
}
pub(crate) use launch_call;

/// Implement `crate::replay::placement::Vmm` for an entry-point table `$api` through its call
/// macro `$call` (`cu` or `hip`), naming the entry point of each operation (CUDA and HIP share
/// their signatures).
macro_rules! impl_vmm {
    ($api:ty, $call:ident, reserve: $reserve:ident, free_reservation: $afree:ident,
     create: $create:ident, release: $release:ident, map: $map:ident, unmap: $unmap:ident,
     set_access: $access:ident, alloc: $alloc:ident, free: $free:ident,
     synchronize: $sync:ident) => {
        impl $crate::replay::placement::Vmm for $api {
            fn reserve(
                &self,
                size: u64,
                align: u64,
                hint: u64,
            ) -> $crate::replay::backend::shared::Call<u64> {
                let mut got = 0u64;
                Ok($call!(
                    self,
                    $reserve(&mut got, size as usize, align as usize, hint, 0)
                )
                .map(|()| got))
            }
            fn free_reservation(
                &self,
                addr: u64,
                size: u64,
            ) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $afree(addr, size as usize)))
            }
            fn create(
                &self,
                size: u64,
                prop: &[u8],
                flags: u64,
            ) -> $crate::replay::backend::shared::Call<u64> {
                let mut h = 0u64;
                Ok($call!(self, $create(&mut h, size as usize, prop.as_ptr(), flags)).map(|()| h))
            }
            fn release(&self, handle: u64) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $release(handle)))
            }
            fn map(
                &self,
                addr: u64,
                size: u64,
                offset: u64,
                handle: u64,
            ) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(
                    self,
                    $map(addr, size as usize, offset as usize, handle, 0)
                ))
            }
            fn unmap(&self, addr: u64, size: u64) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $unmap(addr, size as usize)))
            }
            fn set_access(
                &self,
                addr: u64,
                size: u64,
                desc: &[u8],
                count: usize,
            ) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(
                    self,
                    $access(addr, size as usize, desc.as_ptr(), count)
                ))
            }
            fn alloc(&self, size: u64) -> $crate::replay::backend::shared::Call<u64> {
                let mut p = 0u64;
                Ok($call!(self, $alloc(&mut p, size as usize)).map(|()| p))
            }
            fn free(&self, ptr: u64) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $free(ptr)))
            }
            fn synchronize(&self) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $sync()))
            }
        }
    };
}
pub(crate) use impl_vmm;

/// Implement [`StreamSync`] for an entry-point table `$api` through its call macro `$call`,
/// naming the entry points; `$not_ready` is the API's "not ready" result of an event query.
macro_rules! impl_stream_sync {
    ($api:ty, $call:ident, synchronize: $sync:ident, create_event: $create:ident,
     record_event: $record:ident, query_event: $query:ident, not_ready: $not_ready:expr) => {
        impl $crate::replay::backend::shared::StreamSync for $api {
            fn synchronize_stream(&self, stream: H) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $sync(stream)))
            }
            fn create_event(&self) -> $crate::replay::backend::shared::Call<H> {
                let mut e: H = std::ptr::null_mut();
                Ok($call!(self, $create(&mut e, 2)).map(|()| e)) // no timing
            }
            fn record_event(
                &self,
                event: H,
                stream: H,
            ) -> $crate::replay::backend::shared::Call<()> {
                Ok($call!(self, $record(event, stream)))
            }
            fn query_event(&self, event: H) -> $crate::replay::backend::shared::Call<bool> {
                Ok(match $call!(self, $query(event)) {
                    Ok(()) => Ok(true),
                    Err(err) if err.code == $not_ready => Ok(false),
                    Err(err) => Err(err),
                })
            }
        }
    };
}
pub(crate) use impl_stream_sync;
