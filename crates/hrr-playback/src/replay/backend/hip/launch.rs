//! HIP kernel launches: `<<<>>>` launches bind their function by (code object, kernel name),
//! module launches through the recorded look-up; the recorded argument buffer (8-byte pointer
//! arguments translated when ranges moved) is passed as `extra`, cooperative launches as
//! argument pointers; timed with `--timing`; a wait after it with `--sync-after-launch` or a
//! watchdog.

use std::ffi::c_void;

use anyhow::Result;
use hrr_calls::shapes::Launch;

use super::runtime::hip;
use super::Hip;
use crate::replay::backend::shared::{launch_call, launch_gate, translate_pointer_args};
use crate::replay::backend::{Event, Outcome};

impl Hip {
    /// A kernel launch (`Launch`); `module_launch`: recorded as `hipModuleLaunchKernel` (its function is a
    /// recorded handle).
    pub(super) fn launch(
        &mut self,
        ev: &Event,
        filter: Option<&str>,
        module_launch: bool,
    ) -> Result<Outcome> {
        let mut l: Launch = ev.launch()?;
        if let Err(not_launched) = launch_gate(&l, filter) {
            return Ok(not_launched);
        }
        let func = if module_launch {
            self.handles.get(l.function)?
        } else {
            self.function(l.code, &l.kernel)?
        };
        let stream = self.stream(l.stream)?;
        let mut args = std::mem::take(&mut l.args);
        let offs = &l.arg_offsets;
        translate_pointer_args(&mut args, offs, &l.arg_sizes, &self.mem);
        // inside a stream capture the launch is captured, not run: not timed, not waited for
        let capturing = self.is_capturing(stream);
        let timed = self.timer.start(&self.api, stream, capturing)?;
        let api = &self.api;
        let result = if l.cooperative != 0 {
            let mut ptrs: Vec<*mut c_void> = offs
                .iter()
                .map(|&o| args[o as usize..].as_mut_ptr() as *mut c_void)
                .collect();
            launch_call!(
                hip,
                api,
                hipModuleLaunchCooperativeKernel,
                func,
                &l,
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
                &l,
                stream,
                params,
                extra.as_mut_ptr()
            )
        };
        if result.is_ok() {
            self.timer.stop(&self.api, stream, timed, &l.kernel)?;
        }
        let stream = (stream, || capturing);
        self.waiter
            .launched(&self.api, result, stream, &l.kernel, ev.seq)
    }
}
