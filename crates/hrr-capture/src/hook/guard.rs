//! The one reentrancy guard: a thread inside a wrapper is inside the hook until the wrapper
//! returns. Calls made meanwhile — the runtime calling its own exports while serving the
//! application's call, the recorder asking the driver something — reach their wrappers nested
//! and are forwarded, never recorded. Also the cross-thread ordering lock, and `catch`, which
//! keeps panics from crossing the FFI boundary.

use std::cell::Cell;
use std::sync::Mutex;

use crate::recorder;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Proof that this thread entered a hook to record; leaving it (drop) leaves the hook.
pub struct Inside(());

impl Drop for Inside {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Enter the hook to record, unless capture is off or this thread is already inside one.
#[inline]
pub fn enter() -> Option<Inside> {
    if !recorder::active() {
        return None;
    }
    DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        if n == 0 {
            Some(Inside(()))
        } else {
            d.set(n);
            None
        }
    })
}

/// Is this thread inside a hook?
pub fn inside() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Run `f`, turning a panic into `None` (nothing unwinds into the application).
pub fn catch<R>(f: impl FnOnce() -> R) -> Option<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// Serialises the calls that create or destroy what later calls refer to (allocations, handles):
/// each such call runs and is recorded under this lock, so the recorded order of a free and an
/// allocation (or a destroy and a create) on two threads is the order the driver saw, and a
/// reused address or handle value maps to the right object at replay. Blocking calls never take
/// it.
static ORDER: Mutex<()> = Mutex::new(());

/// Run `f` (the real call and its recording) under the ordering lock when `ordered`.
#[inline]
pub fn ordered<R>(ordered: bool, f: impl FnOnce() -> R) -> R {
    if !ordered || !recorder::active() {
        return f();
    }
    let _order = ORDER.lock().unwrap_or_else(|e| e.into_inner());
    f()
}
