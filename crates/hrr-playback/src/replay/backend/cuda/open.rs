//! Opening the CUDA backend: load the driver, initialise it, choose the device (the one the
//! capture's device maps to, `crate::replay::devices`; refused there before any event
//! replays), make its primary context current, read the device's name, compute capability and
//! VMM granularity, reserve the recorded ranges; the preflight checks of an archive against
//! this device and driver; the recorded device look-ups and context retains, replayed on it.

use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::{bail, Result};
use hrr_calls::shapes;

use super::arrays::Objects;
use super::driver::{cu, Api, H};
use super::memory::{device_prop, POLICY};
use super::Cuda;
use crate::replay::backend::shared::{Handles, Waiter};
use crate::replay::backend::{Event, Ops, Outcome};
use hrr_archive::manifest::DeviceFacts;

use crate::replay::devices::choose;
use crate::replay::host_ranges::HostRanges;
use crate::replay::options::Options;
use crate::replay::placement::Placement;

impl Cuda {
    /// Load the driver, initialise it and make the primary context of the device the
    /// capture's device ordinals (`devices`, of its successful `cuDeviceGet` calls) map to
    /// current. `ranges` are the recorded device address ranges, reserved before anything
    /// else but outside the host addresses held for host memory (`host_held`).
    pub fn open(
        opts: &Options,
        ranges: &[(u64, u64)],
        devices: &[i32],
        mut host_held: HostRanges,
    ) -> Result<Self> {
        let api = Api::load(opts.runtime.as_deref())?;
        cu!(api, cuInit(0))?;
        let mut count: c_int = 0;
        cu!(api, cuDeviceGetCount(&mut count))?;
        let chosen = choose(devices, &opts.device_map, count)?;
        let opened = super::devices::open_all(&api, &chosen.live_devices())?;
        let (dev, ctx) = (opened[0].dev, opened[0].primary);
        let mut name = [0 as std::ffi::c_char; 256];
        cu!(api, cuDeviceGetName(name.as_mut_ptr(), 255, dev))?;
        // SAFETY: NUL-terminated by the driver within 255 bytes.
        let device_name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let cc_of = |dev: c_int| -> Result<(i32, i32)> {
            let (mut major, mut minor) = (0, 0);
            cu!(api, cuDeviceGetAttribute(&mut major, 75, dev))?;
            cu!(api, cuDeviceGetAttribute(&mut minor, 76, dev))?;
            Ok((major, minor))
        };
        let (major, minor) = cc_of(dev)?;
        for o in &opened[1..] {
            let other = cc_of(o.dev)?;
            if other != (major, minor) {
                bail!("[HRR] Architecture mismatch: device {} is compute capability {}.{} and device {} is {major}.{minor}; the devices an archive replays on must be of one architecture.", o.ordinal, other.0, other.1, opened[0].ordinal);
            }
        }
        let prop = device_prop(dev);
        let mut gran = 0usize;
        if cu!(
            api,
            cuMemGetAllocationGranularity(&mut gran, prop.as_ptr(), 0)
        )
        .is_err()
            || gran == 0
        {
            gran = 2 << 20;
        }
        let placement = (!opts.no_placement).then_some(prop);
        let mut mem = Placement::new(POLICY, dev, placement, gran as u64);
        mem.share_with(&opened.iter().map(|o| o.dev).collect::<Vec<_>>());
        // device memory first: host blocks inside the chunks it needs are let go (the driver
        // reserves only whole chunks at an address)
        host_held.give_up_meeting(&mem.spans_to_reserve(ranges));
        let noise = opts
            .perturb
            .then(|| super::noise::Noise::new(&api, dev).map_err(|e| format!("{e:#}")));
        let mut cuda = Cuda {
            mem,
            api,
            dev,
            chosen,
            primary: ctx,
            opened,
            current: 0,
            contexts: HashMap::new(),
            modules_elsewhere: HashMap::new(),
            code_paths: HashMap::new(),
            device_name,
            cc: (major, minor),
            module_of_code: HashMap::new(),
            library_of_code: HashMap::new(),
            handles: Handles::default(),
            graphs: HashMap::new(),
            execs: HashMap::new(),
            node_graphs: Default::default(),
            waiter: Waiter::new(opts.sync_after_launch, opts.sync_watchdog_ms),
            graph_host: Vec::new(),
            objects: Objects::default(),
            pending_d2h: HashMap::new(),
            spare_d2h: Vec::new(),
            arg_ptrs: Vec::new(),
            ring: Default::default(),
            ops: Ops::default(),
            timer: crate::replay::backend::timer::Timer::new(opts.timing),
            replaced: HashMap::new(),
            batches: Default::default(),
            pinned_sources: Vec::new(),
            host: Default::default(),
            host_held,
            host_in_reservation: None,
            deferred: Default::default(),
            graph_mem: Default::default(),
            captures: 0,
            noise,
            fill_fresh: opts.fill_fresh,
        };
        cuda.mem.prereserve(&cuda.api, ranges)?;
        Ok(cuda)
    }

    /// Refuse archives from another compute capability or a newer driver.
    pub(super) fn check_archive(&self, meta: Option<&serde_json::Value>) -> Result<()> {
        // the facts of the device the capture used (the first listed when none says its ordinal)
        let facts = DeviceFacts::of_device(meta, i64::from(self.chosen.recorded[0]));
        if let Some(cc) = facts.architecture.as_deref() {
            let here = format!("{}.{}", self.cc.0, self.cc.1);
            if cc != here {
                let name = facts.name.as_deref().unwrap_or("unknown device");
                bail!("[HRR] Architecture mismatch: the archive was captured on compute capability {cc} ({name}); this device is {here} ({}). Replay on a GPU of the same architecture.", self.device_name);
            }
        }
        if let Some(recorded) = facts.driver_version_number() {
            let mut v = 0;
            cu!(self.api, cuDriverGetVersion(&mut v))?;
            if recorded > v as u64 {
                bail!("[HRR] Driver too old: the archive was captured with CUDA driver {recorded}; this driver is {v}. Replay with a driver at least as new.");
            }
        }
        Ok(())
    }

    /// `cuDeviceGet`: nothing to do (the recorded device handle is its ordinal, mapped where a
    /// call names a device). A device the capture only looked up need not exist here.
    pub(super) fn device_get(&mut self, ev: &Event) -> Result<Outcome> {
        ev.read::<shapes::DeviceGet>()?;
        Ok(Outcome::Done)
    }

    /// `cuDevicePrimaryCtxRetain` / `cuCtxCreate` (`created`: current on its thread now): the
    /// primary context of the live device the recorded one maps to. Both read as `PrimaryCtx`
    /// (`CtxCreate` has its fields, and its flags).
    pub(super) fn retain_context(&mut self, ev: &Event, created: bool) -> Result<Outcome> {
        let s = ev.read::<shapes::PrimaryCtx>()?;
        let mut ctx: H = std::ptr::null_mut();
        cu!(
            self.api,
            cuDevicePrimaryCtxRetain(&mut ctx, self.live_device(s.device))
        )?;
        self.handles.insert(s.ctx, ctx);
        if created {
            self.push_created(ev, ctx);
        }
        Ok(Outcome::Done)
    }

    /// `cuCtxEnablePeerAccess` (`enable`) / `cuCtxDisablePeerAccess`: from the current context to
    /// the recorded peer's live one. Replayed on one device (`--device-map` putting recorded
    /// devices together) the peer is the current context itself: nothing to do. Access already
    /// enabled (704) or not enabled (705) is the state asked for.
    pub(super) fn peer_access(&mut self, ev: &Event, enable: bool) -> Result<Outcome> {
        let (rec, flags) = match enable {
            true => {
                let s = ev.read::<shapes::PeerAccess>()?;
                (s.ctx, s.flags)
            }
            false => (ev.read::<shapes::Ctx>()?.ctx, 0),
        };
        let peer = self.handles.get(rec)?;
        let mut current: H = std::ptr::null_mut();
        cu!(self.api, cuCtxGetCurrent(&mut current))?;
        if peer == current {
            return Ok(Outcome::Done);
        }
        let r = match enable {
            true => cu!(self.api, cuCtxEnablePeerAccess(peer, flags)),
            false => cu!(self.api, cuCtxDisablePeerAccess(peer)),
        };
        match r {
            Err(e) if e.code != 704 && e.code != 705 => Err(e.into()),
            _ => Ok(Outcome::Done),
        }
    }
}
