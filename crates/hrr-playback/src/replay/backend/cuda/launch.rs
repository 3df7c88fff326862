//! CUDA kernel launches: the recorded argument buffer (8-byte pointer arguments translated when
//! ranges moved, texture/surface object values and tensor maps substituted where replay's differ), through
//! `cuLaunchKernel` and `cuLaunchCooperativeKernel` as argument pointers into it, or
//! `cuLaunchKernelEx` (launch attributes) as `extra`; a wait after it with
//! `--sync-after-launch` or a watchdog; with `--perturb`, after a noise kernel (`noise.rs`).

use std::ffi::c_void;

use anyhow::{anyhow, Result};
use hrr_calls::cuda::ffi::{LaunchConfig, LAUNCH_ATTR_BYTES};
use hrr_calls::shapes::Launch;

use super::driver::{cu, packed_args_extra};
use super::Cuda;
use crate::replay::backend::shared::{launch_call, launch_gate};
use crate::replay::backend::{Event, Outcome};

impl Cuda {
    /// A kernel launch (`Launch`); `ex`: recorded as `cuLaunchKernelEx`. The shape goes back
    /// into the event afterwards, so that it is freed with it by the thread that decoded it,
    /// not here between two launches.
    pub(super) fn launch(&mut self, ev: &Event, filter: Option<&str>, ex: bool) -> Result<Outcome> {
        if let Some(done) = self.batched(ev)? {
            return Ok(done); // in a run launched as prepared graphs (`batch.rs`)
        }
        let mut l: Launch = ev.launch()?;
        let r = self.launch_shape((ev.per_thread, ev.seq), &mut l, filter, ex);
        *ev.launch.borrow_mut() = Some(l);
        r
    }

    /// Launch `l`, recorded at event `seq` through an entry point with per-thread default
    /// stream semantics or not.
    pub(super) fn launch_shape(
        &mut self,
        (per_thread, seq): (bool, u64),
        l: &mut Launch,
        filter: Option<&str>,
        ex: bool,
    ) -> Result<Outcome> {
        if let Err(not_launched) = launch_gate(l, filter) {
            return Ok(not_launched);
        }
        let func = self.handles.get(l.function).map_err(|_| {
            anyhow!(
                "kernel `{}`: function handle 0x{:x} is not bound in this archive (capture saw no look-up of it and could not find its module)",
                l.kernel,
                l.function
            )
        })?;
        let func = self.replaced_function(&l.kernel, func);
        let stream = super::stream_of(&self.handles, per_thread, l.stream)?;
        let args = &mut l.args;
        let offs = &l.arg_offsets;
        // Texture/surface object values and tensor maps, found in the recorded bytes (see
        // `arrays.rs`: an 8-byte scalar equal to a live recorded object value is rewritten too).
        self.objects.rewrite(args, offs, &l.arg_sizes, &self.mem);
        let mut ptrs = std::mem::take(&mut self.arg_ptrs);
        ptrs.clear();
        // SAFETY (of the `add`s): every recorded offset lies inside the argument buffer (the
        // shape's reader checks them).
        ptrs.extend(
            offs.iter()
                .map(|&o| unsafe { args.as_mut_ptr().add(o as usize) } as *mut c_void),
        );
        let mut size = args.len();
        let mut extra = packed_args_extra(args.as_ptr(), &mut size);
        let capturing = self.capturing(stream);
        // the noise kernel is loaded in the first device's context
        let first = self.current == 0;
        if let Some(Ok(n)) = self
            .noise
            .as_mut()
            .filter(|_| l.cooperative == 0 && !capturing && first)
        {
            n.before_launch(&self.api)?;
        }
        let timed = self.timer.start(&self.api, stream, capturing)?;
        let attrs = &l.attrs;
        let api = &self.api;
        let result = if l.cooperative != 0 {
            launch_call!(
                cu,
                api,
                cuLaunchCooperativeKernel,
                func,
                l,
                stream,
                ptrs.as_mut_ptr()
            )
        } else if !attrs.is_empty() || ex {
            let cfg = LaunchConfig {
                grid: [l.grid_x, l.grid_y, l.grid_z],
                block: [l.block_x, l.block_y, l.block_z],
                shared_mem: l.shared_mem,
                stream,
                attrs: attrs.as_ptr(),
                num_attrs: (attrs.len() / LAUNCH_ATTR_BYTES) as u32,
            };
            cu!(
                api,
                cuLaunchKernelEx(&cfg, func, std::ptr::null_mut(), extra.as_mut_ptr())
            )
        } else {
            // Argument pointers into the buffer, as the program's runtime passes them (the
            // driver's faster path; `extra` is for calls that were recorded with it).
            launch_call!(
                cu,
                api,
                cuLaunchKernel,
                func,
                l,
                stream,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut()
            )
        };
        self.arg_ptrs = ptrs;
        if result.is_ok() {
            self.timer.stop(&self.api, stream, timed, &l.kernel)?;
        }
        let stream = (stream, || capturing);
        self.waiter
            .launched(&self.api, result, stream, &l.kernel, seq)
    }
}
