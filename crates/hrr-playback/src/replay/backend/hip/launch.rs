//! HIP kernel launches: `<<<>>>` launches bind their function by (code object, kernel name),
//! module launches through the recorded look-up; the recorded argument buffer (8-byte pointer
//! arguments translated when ranges moved) is passed as `extra`, cooperative launches as
//! argument pointers; a wait after it with `--sync-after-launch` or a watchdog.

use std::ffi::c_void;

use anyhow::Result;

use super::runtime::hip;
use super::Hip;
use crate::replay::backend::shared::{launch_call, launch_gate, translate_pointer_args};
use crate::replay::backend::{Event, Outcome};
use crate::replay::fields::{bytes, geometry, name, object, u, u64s};

impl Hip {
    /// A kernel launch; `module_launch`: recorded as `hipModuleLaunchKernel` (its function is a
    /// recorded handle).
    pub(super) fn launch(
        &mut self,
        ev: &Event,
        filter: Option<&str>,
        module_launch: bool,
    ) -> Result<Outcome> {
        let f = &ev.fields;
        if u(f, name::IN_CAPTURE).unwrap_or(0) != 0 {
            return Ok(Outcome::Skipped(
                "launch inside stream capture (graphs are not replayed)".into(),
            ));
        }
        let kernel = match launch_gate(f, filter) {
            Ok(k) => k,
            Err(not_launched) => return Ok(not_launched),
        };
        let func = if module_launch {
            self.handles.get(u(f, name::FUNCTION)?)?
        } else {
            self.function(object(f, name::CODE), &kernel)?
        };
        let stream = self.stream(ev)?;
        let mut args = bytes(f, name::ARGS).to_vec();
        let offs = u64s(f, name::ARG_OFFSETS);
        translate_pointer_args(&mut args, &offs, &u64s(f, name::ARG_SIZES), &self.mem);
        let geo = geometry(f)?;
        let api = &self.api;
        let result = if u(f, name::COOPERATIVE).unwrap_or(0) != 0 {
            let mut ptrs: Vec<*mut c_void> = offs
                .iter()
                .map(|&o| args[o as usize..].as_mut_ptr() as *mut c_void)
                .collect();
            launch_call!(
                hip,
                api,
                hipModuleLaunchCooperativeKernel,
                func,
                &geo,
                stream,
                ptrs.as_mut_ptr()
            )
        } else {
            let mut size = args.len();
            // Zeros past the arguments: a runtime that reads the whole kernarg segment from
            // the buffer (hidden arguments included) reads them rather than beyond it.
            args.resize(size + 1024, 0);
            let mut extra: [*mut c_void; 5] = [
                std::ptr::without_provenance_mut(1), // HIP_LAUNCH_PARAM_BUFFER_POINTER
                args.as_mut_ptr() as *mut c_void,
                std::ptr::without_provenance_mut(2), // HIP_LAUNCH_PARAM_BUFFER_SIZE
                &mut size as *mut usize as *mut c_void,
                std::ptr::without_provenance_mut(3), // HIP_LAUNCH_PARAM_END
            ];
            let params = std::ptr::null_mut();
            launch_call!(
                hip,
                api,
                hipModuleLaunchKernel,
                func,
                &geo,
                stream,
                params,
                extra.as_mut_ptr()
            )
        };
        let stream = (stream, || false);
        self.waiter
            .launched(&self.api, result, stream, &kernel, ev.seq)
    }
}
