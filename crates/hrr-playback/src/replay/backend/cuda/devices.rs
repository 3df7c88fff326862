//! Several devices in one replay: the live devices opened for the recorded ones
//! ([`Opened`], chosen by `crate::replay::devices`), the recorded device ordinals mapped to live
//! device handles, and the current context followed per recorded thread. A capture that drove
//! several devices switched contexts (`cuCtxSetCurrent`, `cuCtxPushCurrent`/`PopCurrent`, a
//! `cuCtxCreate`), each thread on its own; replay keeps each recorded thread's stack of
//! contexts and, before an event, makes its thread's context current (and places memory on
//! that context's device). With one live device none of this runs: every recorded context is
//! the opened device's primary context, as before.

use std::cell::Cell;
use std::ffi::c_int;

use anyhow::{bail, Result};
use hrr_calls::cuda::Op;
use hrr_calls::shapes;

use super::driver::{cu, Api, H};
use super::Cuda;
use crate::replay::backend::{Event, Outcome};

/// A live device replay opened, with its primary context.
#[derive(Debug, Clone, Copy)]
pub(super) struct Opened {
    /// Its live ordinal.
    pub ordinal: i32,
    /// Its device handle.
    pub dev: c_int,
    /// Its primary context (retained once at open).
    pub primary: H,
}

thread_local! {
    /// The context current on this replay thread, as replay last made it (null: not known).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// Note that `ctx` is current on this thread now.
pub(super) fn note_current(ctx: H) {
    CURRENT.with(|c| c.set(ctx as usize));
}

/// Open each live device of `lives` (the first made current): its handle and its primary
/// context.
pub(super) fn open_all(api: &Api, lives: &[i32]) -> Result<Vec<Opened>> {
    let mut opened = Vec::with_capacity(lives.len());
    for &ordinal in lives {
        let mut dev: c_int = 0;
        cu!(api, cuDeviceGet(&mut dev, ordinal))?;
        let mut primary: H = std::ptr::null_mut();
        cu!(api, cuDevicePrimaryCtxRetain(&mut primary, dev))?;
        opened.push(Opened {
            ordinal,
            dev,
            primary,
        });
    }
    cu!(api, cuCtxSetCurrent(opened[0].primary))?;
    note_current(opened[0].primary);
    Ok(opened)
}

/// Rewrite the `CUmemLocation` at the start of `location` (type, then id): a device location's
/// id is a recorded device ordinal, replaced by `live` of it; host and NUMA-node locations (a
/// NUMA node's id is no device) are kept as recorded.
pub(super) fn remap_location(location: &mut [u8], live: impl Fn(i32) -> c_int) {
    const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
    let Some((ty, id)) = location.get_mut(..8).map(|l| l.split_at_mut(4)) else {
        return;
    };
    if i32::from_le_bytes((&*ty).try_into().expect("4 bytes")) == CU_MEM_LOCATION_TYPE_DEVICE {
        let rec = i32::from_le_bytes((&*id).try_into().expect("4 bytes"));
        id.copy_from_slice(&live(rec).to_le_bytes());
    }
}

impl Cuda {
    /// Replay drives several live devices.
    pub(super) fn several_devices(&self) -> bool {
        self.opened.len() > 1
    }

    /// The opened device recorded device `rec` replays on (the current one for a device the
    /// capture opened no context on).
    fn opened_for(&self, rec: i32) -> Opened {
        let live = self.chosen.live_of(rec);
        self.opened
            .iter()
            .find(|o| Some(o.ordinal) == live)
            .copied()
            .unwrap_or(self.opened[self.current])
    }

    /// The primary context (retained at open) of the live device recorded device `rec`
    /// replays on (see [`Cuda::opened_for`]).
    pub(super) fn primary_of(&self, rec: i32) -> H {
        self.opened_for(rec).primary
    }

    /// Rewrite the `CUmemLocation` at the start of `location` for this machine
    /// ([`remap_location`]).
    pub(super) fn map_location(&self, location: &mut [u8]) {
        remap_location(location, |rec| self.live_device(rec));
    }

    /// The live device handle of recorded device `rec` (see [`Cuda::opened_for`]).
    pub(super) fn live_device(&self, rec: i32) -> c_int {
        self.opened_for(rec).dev
    }

    /// Before an event of a capture on several devices: make the event's thread's context
    /// current (when it is not already), and place memory on its device from now on.
    pub(super) fn follow_context(&mut self, ev: &Event) -> Result<()> {
        let want = self
            .contexts
            .get(&ev.thread)
            .and_then(|s| s.last().copied())
            .unwrap_or(self.opened[0].primary);
        if CURRENT.with(Cell::get) != want as usize {
            cu!(self.api, cuCtxSetCurrent(want))?;
            note_current(want);
        }
        if want != self.primary {
            let Some(i) = self.opened.iter().position(|o| o.primary == want) else {
                bail!("a context replay did not open became current");
            };
            self.current = i;
            self.primary = want;
            self.dev = self.opened[i].dev;
            self.mem.set_device(self.dev);
        }
        Ok(())
    }

    /// `cuCtxSetCurrent`, `cuCtxPushCurrent`, `cuCtxPopCurrent`: the recorded thread's stack of
    /// contexts changes (a null context set pops). On one device nothing changes.
    pub(super) fn select_context(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        if !self.several_devices() {
            return Ok(Outcome::Done);
        }
        let live = match op {
            Op::CtxPopCurrent => None,
            _ => match ev.read::<shapes::Ctx>()?.ctx {
                0 => None,
                rec => Some(self.handles.get(rec)?),
            },
        };
        let stack = self.contexts.entry(ev.thread).or_default();
        match (op, live) {
            (Op::CtxPushCurrent, Some(c)) => stack.push(c),
            (Op::CtxSetCurrent, Some(c)) => match stack.last_mut() {
                Some(top) => *top = c,
                None => stack.push(c),
            },
            _ => {
                stack.pop();
            }
        }
        Ok(Outcome::Done)
    }

    /// A context the recorded thread of `ev` created is current on it now (`cuCtxCreate`).
    pub(super) fn push_created(&mut self, ev: &Event, live: H) {
        if self.several_devices() {
            self.contexts.entry(ev.thread).or_default().push(live);
        }
    }

    /// Wait for every opened device (the final wait), the first device's context current
    /// after.
    pub(super) fn synchronize_all(&mut self) -> Result<()> {
        if !self.several_devices() {
            cu!(self.api, cuCtxSynchronize())?;
            return Ok(());
        }
        for o in self.opened.clone() {
            cu!(self.api, cuCtxSetCurrent(o.primary))?;
            cu!(self.api, cuCtxSynchronize())?;
        }
        let first = self.opened[0];
        cu!(self.api, cuCtxSetCurrent(first.primary))?;
        note_current(first.primary);
        self.current = 0;
        self.primary = first.primary;
        self.dev = first.dev;
        self.mem.set_device(first.dev);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_device_locations_are_remapped() {
        let loc = |ty: i32, id: i32| [ty.to_le_bytes(), id.to_le_bytes()].concat();
        let swap = |rec: i32| 1 - rec;
        let mut device = loc(1, 0);
        remap_location(&mut device, swap);
        assert_eq!(device, loc(1, 1));
        for ty in [2, 3, 4] {
            // host, host NUMA node 0, the current thread's NUMA node
            let mut host = loc(ty, 0);
            remap_location(&mut host, swap);
            assert_eq!(host, loc(ty, 0), "type {ty}");
        }
        let mut short = vec![1u8, 0, 0, 0];
        remap_location(&mut short, swap);
        assert_eq!(short, [1, 0, 0, 0]);
    }

    #[test]
    fn the_current_context_is_noted_per_thread() {
        note_current(0x10 as H);
        assert_eq!(CURRENT.with(Cell::get), 0x10);
        std::thread::spawn(|| assert_eq!(CURRENT.with(Cell::get), 0))
            .join()
            .unwrap();
    }
}
