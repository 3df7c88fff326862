//! Program code inside graphs: a host node (`cuGraphAddHostNode`), or a host function enqueued
//! inside a stream capture (`cuLaunchHostFunc`, which becomes one), runs at every launch and may
//! change the host memory the graph's D2H copies wrote just before (NVIDIA's simpleCudaGraphs
//! prints its result there, then resets it to 0). Replay runs no program code, so what it can
//! compare is what the device wrote.
//!
//! So when such a function follows D2H copies into host memory (the nodes it depends on, or the
//! copies issued earlier in the same capture), capture hands the driver [`before_host_code`]
//! in its place: it keeps the bytes of those regions, then calls the program's function. After
//! the launch, `graph/` records a region's kept bytes (the first kept this launch), not what the
//! program's code left there. A function following no such copy is handed over unchanged.
//! Generic `cuGraphAddNode` host nodes are not wrapped.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

/// A host function as CUDA calls it.
pub type HostFn = unsafe extern "C" fn(*mut c_void);

/// The most bytes kept by one host function call; larger regions are not kept (their recorded
/// result is then what the program's code left, as before).
const MAX_KEPT: u64 = 256 << 20;

/// A program's host function and the D2H regions `(ptr, len)` it follows.
struct Wrapped {
    func: HostFn,
    data: *mut c_void,
    regions: Vec<(u64, u64)>,
}

/// Bytes of D2H regions `(ptr, len)` as they were before program code ran.
type Kept = HashMap<(u64, u64), Vec<u8>>;

/// What was kept during the current launch.
static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

fn kept() -> MutexGuard<'static, Option<Kept>> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep the bytes of the regions the program's function follows (the first kept this launch
/// wins), then call it.
unsafe extern "C" fn before_host_code(p: *mut c_void) {
    // SAFETY: `p` is a `Wrapped` that [`wrap`] leaked; it is never freed.
    let w = &*(p as *const Wrapped);
    {
        let mut k = kept();
        let k = k.get_or_insert_with(HashMap::new);
        for &(ptr, len) in &w.regions {
            if len <= MAX_KEPT && ptr != 0 {
                k.entry((ptr, len)).or_insert_with(|| {
                    std::slice::from_raw_parts(ptr as *const u8, len as usize).to_vec()
                });
            }
        }
    }
    (w.func)(w.data);
}

/// The function and data to hand the driver for the program's `(func, data)` following D2H
/// `regions`: the program's own when there are none. The wrapper is leaked: the driver may call
/// it at every launch of every instantiation, for as long as the process lives.
pub fn wrap(func: u64, data: u64, regions: Vec<(u64, u64)>) -> (u64, u64) {
    if regions.is_empty() || func == 0 {
        return (func, data);
    }
    // SAFETY: `func` is the program's host function pointer, as it passed it to the driver.
    let func: HostFn = unsafe { std::mem::transmute::<usize, HostFn>(func as usize) };
    let w = Box::into_raw(Box::new(Wrapped {
        func,
        data: data as *mut c_void,
        regions,
    }));
    (before_host_code as *const () as usize as u64, w as u64)
}

/// Before a launch: forget what earlier launches kept of `regions`.
pub fn forget(regions: impl IntoIterator<Item = (u64, u64)>) {
    if let Some(k) = kept().as_mut() {
        for r in regions {
            k.remove(&r);
        }
    }
}

/// After a launch: the bytes of region `(ptr, len)` kept before program code ran, if any.
pub fn take(region: (u64, u64)) -> Option<Vec<u8>> {
    kept().as_mut()?.remove(&region)
}

#[cfg(test)]
mod tests {
    use super::*;

    static mut CALLS: u32 = 0;

    unsafe extern "C" fn reset(p: *mut c_void) {
        CALLS += 1;
        (p as *mut u64).write(0);
    }

    #[test]
    fn the_bytes_before_program_code_are_kept_once_per_launch() {
        let mut result: u64 = 0x1234;
        let at = &mut result as *mut u64 as u64;
        let region = (at, 8);
        let (f, d) = wrap(reset as *const () as usize as u64, at, vec![region]);
        assert_ne!(f, reset as *const () as usize as u64);
        let f: HostFn = unsafe { std::mem::transmute::<usize, HostFn>(f as usize) };
        forget([region]);
        unsafe { f(d as *mut c_void) };
        assert_eq!(result, 0, "the program's function ran");
        unsafe { (at as *mut u64).write(0x5678) };
        unsafe { f(d as *mut c_void) }; // a second host node of the same launch
        assert_eq!(take(region), Some(0x1234u64.to_le_bytes().to_vec()));
        assert_eq!(take(region), None);
        assert_eq!(unsafe { CALLS }, 2);
        // no regions: the program's own function
        assert_eq!(wrap(7, 9, Vec::new()), (7, 9));
    }
}
