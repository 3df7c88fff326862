//! CUDA kernel launches: the recorded argument buffer (8-byte pointer arguments translated when
//! ranges moved) passed as `extra`, through `cuLaunchKernel`, `cuLaunchKernelEx` (launch
//! attributes) or `cuLaunchCooperativeKernel` (argument pointers); a wait after it with
//! `--sync-after-launch` or a watchdog.

use std::ffi::c_void;

use anyhow::Result;

use super::driver::{cu, LaunchConfig};
use super::Cuda;
use crate::replay::backend::shared::{launch_call, launch_gate, translate_pointer_args};
use crate::replay::backend::{Event, Outcome};
use crate::replay::fields::{bytes, geometry, name, u, u64s};

impl Cuda {
    /// A kernel launch; `ex`: recorded as `cuLaunchKernelEx`.
    pub(super) fn launch(&mut self, ev: &Event, filter: Option<&str>, ex: bool) -> Result<Outcome> {
        let f = &ev.fields;
        let kernel = match launch_gate(f, filter) {
            Ok(k) => k,
            Err(not_launched) => return Ok(not_launched),
        };
        let func = self.handles.get(u(f, name::FUNCTION)?)?;
        let stream = self.stream(ev)?;
        let mut args = bytes(f, name::ARGS).to_vec();
        let offs = u64s(f, name::ARG_OFFSETS);
        translate_pointer_args(&mut args, &offs, &u64s(f, name::ARG_SIZES), &self.mem);
        let geo = geometry(f)?;
        let mut size = args.len();
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            args.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            &mut size as *mut usize as *mut c_void,
            std::ptr::null_mut(),
        ];
        let attrs = bytes(f, name::ATTRS);
        let api = &self.api;
        let result = if u(f, name::COOPERATIVE).unwrap_or(0) != 0 {
            let mut ptrs: Vec<*mut c_void> = offs
                .iter()
                .map(|&o| unsafe { args.as_mut_ptr().add(o as usize) } as *mut c_void)
                .collect();
            launch_call!(
                cu,
                api,
                cuLaunchCooperativeKernel,
                func,
                &geo,
                stream,
                ptrs.as_mut_ptr()
            )
        } else if !attrs.is_empty() || ex {
            let cfg = LaunchConfig {
                grid: geo.grid,
                block: geo.block,
                shared_mem: geo.shared_mem,
                stream,
                attrs: attrs.as_ptr(),
                num_attrs: (attrs.len() / 72) as u32,
            };
            cu!(
                api,
                cuLaunchKernelEx(&cfg, func, std::ptr::null_mut(), extra.as_mut_ptr())
            )
        } else {
            let params = std::ptr::null_mut();
            launch_call!(
                cu,
                api,
                cuLaunchKernel,
                func,
                &geo,
                stream,
                params,
                extra.as_mut_ptr()
            )
        };
        let stream = (stream, || self.api.is_capturing(stream));
        self.waiter
            .launched(&self.api, result, stream, &kernel, ev.seq)
    }
}
