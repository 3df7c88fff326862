//! Counting forwarders. A driver entry point capture hands out without recording it (a query,
//! a call no table row covers) is handed out as a trampoline that counts its calls and jumps to
//! the real function, registers and stack untouched. So the manifest's `passthrough_calls`
//! lists the unrecorded calls the program really made, with how often, instead of every symbol
//! cudart looks up at start-up; a call that changes state and is missing from the tables shows
//! up there.
//!
//! A fixed pool of [`SLOTS`] trampolines; beyond it, the real function is handed out uncounted.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

/// Trampolines in the pool.
pub const SLOTS: usize = 1024;

static TARGET: [AtomicPtr<c_void>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static CALLS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Name of each slot in use, by slot.
static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

seq_macro::seq!(N in 0..1024 {
    /// A trampoline: count, then jump to the slot's target.
    #[allow(clippy::erasing_op, clippy::identity_op)]
    #[unsafe(naked)]
    unsafe extern "C" fn fwd~N() {
        core::arch::naked_asm!(
            "lock inc qword ptr [rip + {calls} + {off}]",
            "jmp qword ptr [rip + {target} + {off}]",
            calls = sym CALLS,
            target = sym TARGET,
            off = const N * 8,
        )
    }
});

static STUBS: [unsafe extern "C" fn(); SLOTS] = seq_macro::seq!(N in 0..1024 { [ #(fwd~N,)* ] });

/// The counting forwarder of `real` (the entry point `name`), or `real` itself when the pool
/// is full. The same entry point asked again gets the same forwarder.
pub fn forwarder(name: &str, real: *mut c_void) -> *mut c_void {
    if real.is_null() {
        return real;
    }
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = names
        .iter()
        .enumerate()
        .position(|(i, n)| n == name && TARGET[i].load(Ordering::Acquire) == real)
    {
        return STUBS[i] as *mut c_void;
    }
    let i = names.len();
    if i == SLOTS {
        return real;
    }
    TARGET[i].store(real, Ordering::Release);
    names.push(name.to_string());
    STUBS[i] as *mut c_void
}

/// Entry points called through a forwarder, with their call counts (those never called are
/// left out).
pub fn called() -> Vec<(String, u64)> {
    let names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let mut out: Vec<(String, u64)> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let c = CALLS[i].load(Ordering::Relaxed);
        if c == 0 {
            continue;
        }
        match out.iter_mut().find(|(m, _)| m == n) {
            Some((_, total)) => *total += c,
            None => out.push((n.clone(), c)),
        }
    }
    out
}

/// Forget the counts (a fork child counts its own calls). Async-signal-safe.
pub fn reset_counts() {
    for c in &CALLS {
        c.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn add(a: u64, b: u64) -> u64 {
        a + b
    }

    #[test]
    fn a_forwarder_counts_and_forwards_arguments_and_result() {
        let p = forwarder("test_add", add as *mut c_void);
        assert_ne!(p, add as *mut c_void);
        assert_eq!(forwarder("test_add", add as *mut c_void), p, "reused");
        // SAFETY: the forwarder has `add`'s signature.
        let f: extern "C" fn(u64, u64) -> u64 = unsafe { std::mem::transmute(p) };
        assert_eq!(f(40, 2), 42);
        assert_eq!(f(1, 2), 3);
        let c = called();
        assert!(c.contains(&("test_add".to_string(), 2)), "{c:?}");
    }
}
