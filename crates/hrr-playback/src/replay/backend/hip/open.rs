//! Opening the HIP backend: load the runtime, initialise it, select device 0, read its name,
//! architecture and the runtime version, find the allocation properties and granularity VMM
//! placement needs (their layout changed in ROCm 6; without them placement is off), reserve
//! the recorded ranges; and the preflight notes of an archive against this device and runtime.

use hrr_archive::manifest::DeviceFacts;
use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::{bail, Result};

use super::memory::{allocation_prop, POLICY};
use super::runtime::{hip, HipApi};
use super::Hip;
use crate::replay::backend::shared::{Handles, Waiter};
use crate::replay::backend::Ops;
use crate::replay::options::Options;
use crate::replay::placement::Placement;

/// The allocation properties (and granularity) this runtime accepts, tried in the layout of
/// its version first; `Err`: why VMM is unavailable.
fn probe_vmm(
    api: &HipApi,
    dev: c_int,
    runtime_version: i32,
) -> Result<Result<([u8; 32], u64), String>> {
    let order = if runtime_version >= 60_000_000 {
        [false, true]
    } else {
        [true, false]
    };
    let mut last = None;
    for rocm5 in order {
        let prop = allocation_prop(dev, rocm5);
        let mut gran = 0usize;
        match hip!(
            api,
            hipMemGetAllocationGranularity(&mut gran, prop.as_ptr(), 0)
        ) {
            Ok(()) if gran > 0 => return Ok(Ok((prop, gran as u64))),
            Ok(()) => last = Some("granularity 0".to_string()),
            Err(e) => last = Some(e.to_string()),
        }
    }
    Ok(Err(format!(
        "virtual memory management unavailable ({})",
        last.unwrap_or_default()
    )))
}

impl Hip {
    /// Load the runtime, initialise it and select device 0; `ranges` are the recorded device
    /// address ranges, reserved before anything else.
    pub fn open(opts: &Options, ranges: &[(u64, u64)]) -> Result<Self> {
        if !opts.device_map.is_empty() {
            bail!("--device-map: not available for HIP archives yet (CUDA only)");
        }
        let api = HipApi::load(opts.runtime.as_deref())?;
        hip!(api, hipInit(0))?;
        let mut count = 0;
        hip!(api, hipGetDeviceCount(&mut count))?;
        if count < 1 {
            bail!("the HIP runtime {} sees no device", api.path);
        }
        let dev: c_int = 0;
        hip!(api, hipSetDevice(dev))?;
        let mut runtime_version = 0;
        let _ = hip!(api, hipRuntimeGetVersion(&mut runtime_version));
        let mut props = vec![0u8; 8192];
        let got = if api.hipGetDevicePropertiesR0600.is_some() {
            hip!(api, hipGetDevicePropertiesR0600(props.as_mut_ptr(), dev))
        } else {
            hip!(api, hipGetDeviceProperties(props.as_mut_ptr(), dev))
        };
        let (mut device_name, mut arch) = (String::new(), String::new());
        if got.is_ok() {
            device_name = std::ffi::CStr::from_bytes_until_nul(&props[..256])
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            arch = hrr_calls::hip::find_arch_name(&props).unwrap_or_default();
        }
        let mut name = [0 as std::ffi::c_char; 256];
        if hip!(api, hipDeviceGetName(name.as_mut_ptr(), 255, dev)).is_ok() {
            // SAFETY: NUL-terminated by the runtime within 255 bytes.
            device_name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
        }
        let vmm = if opts.no_placement {
            Err("--no-placement".to_string())
        } else {
            probe_vmm(&api, dev, runtime_version)?
        };
        let mut mem = match vmm {
            Ok((prop, gran)) => Placement::new(POLICY, dev, Some(prop), gran),
            Err(why) => {
                let mut m = Placement::new(POLICY, dev, None, 4096);
                m.refuse(why);
                m
            }
        };
        mem.prereserve(&api, ranges)?;
        Ok(Hip {
            api,
            dev,
            device_name,
            arch,
            runtime_version,
            mem,
            module_of_code: HashMap::new(),
            functions: HashMap::new(),
            handles: Handles::default(),
            waiter: Waiter::new(opts.sync_after_launch, opts.sync_watchdog_ms),
            timer: crate::replay::backend::timer::Timer::new(opts.timing),
            pending_d2h: HashMap::new(),
            ops: Ops::default(),
            deferred: Default::default(),
            graphs: Default::default(),
        })
    }

    /// Notes (never refusals: loading the code objects decides) on an archive captured on
    /// another architecture or a newer runtime.
    pub(super) fn check_archive(&self, meta: Option<&serde_json::Value>) {
        let Some(meta) = meta else { return };
        let base = |a: &str| a.split(':').next().unwrap_or("").to_string();
        let facts = DeviceFacts::from_metadata(Some(meta));
        if let Some(arch) = facts.architecture.as_deref() {
            if !self.arch.is_empty() && base(arch) != base(&self.arch) {
                // A fat binary may hold code for this GPU too: loading the code objects decides.
                eprintln!("[HRR] Note: the archive was captured on {arch}; this device is {}. Code objects without code for it will fail to load.", self.arch);
            }
        }
        if let Some(recorded) = meta["runtime_version"].as_i64() {
            let (then, now) = (
                recorded / 10_000_000,
                self.runtime_version as i64 / 10_000_000,
            );
            if now > 0 && then > now {
                eprintln!(
                    "[HRR] Note: the archive was captured with HIP {recorded}; this runtime is {}.",
                    self.runtime_version
                );
            }
        }
    }
}
