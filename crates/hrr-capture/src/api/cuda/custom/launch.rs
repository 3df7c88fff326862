//! Launches: the packed argument buffer, from `extra` or laid out with the driver's parameter info, with the kernel's name and code object. Graph kernel nodes (`graph/nodes.rs`) record their parameters through the same [`launch_fields`].

#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_uint, c_void};

use hrr_calls::cuda::ffi::{CUresult, Handle, LaunchConfig, LAUNCH_ATTR_BYTES};
use hrr_calls::shapes::*;

use super::code::bind_unseen_function;
use super::rec;
use crate::api::cuda::calls::Export;
use crate::api::cuda::state;
use crate::hook::args::bytes_at;
use crate::recorder::Recorder;

/// What a launch call (or a graph kernel node) says, whichever entry point made it.
pub(super) struct LaunchCall {
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    stream: Handle,
    attrs: Vec<u8>,
    cooperative: bool,
}

impl LaunchCall {
    /// A launch given its grid and block as arguments (no launch attributes).
    pub(super) fn grid(
        f: Handle,
        grid: [c_uint; 3],
        block: [c_uint; 3],
        shared_mem: c_uint,
        stream: Handle,
        cooperative: bool,
    ) -> Self {
        LaunchCall {
            f,
            grid,
            block,
            shared_mem,
            stream,
            attrs: Vec::new(),
            cooperative,
        }
    }
}

/// The argument buffer handed over in `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
unsafe fn extra_buffer(extra: *mut *mut c_void) -> Option<Vec<u8>> {
    if extra.is_null() {
        return None;
    }
    let (mut buf, mut size) = (std::ptr::null::<u8>(), 0usize);
    let mut i = 0;
    while i < 64 {
        match *extra.add(i) as usize {
            0 => break,
            1 => buf = *extra.add(i + 1) as *const u8,
            2 => size = *(*extra.add(i + 1) as *const usize),
            _ => {}
        }
        i += 2;
    }
    (!buf.is_null()).then(|| std::slice::from_raw_parts(buf, size).to_vec())
}

/// Lay the arguments `params[i]` out at their offsets.
unsafe fn pack(layout: &[(u32, u32)], params: *mut *mut c_void) -> Vec<u8> {
    let total = layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0);
    let mut buf = vec![0u8; total];
    for (i, &(o, s)) in layout.iter().enumerate() {
        let src = *params.add(i) as *const u8;
        if !src.is_null() {
            std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr().add(o as usize), s as usize);
        }
    }
    buf
}

unsafe fn record_launch(
    h: Export,
    r: CUresult,
    l: LaunchCall,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) {
    bind_unseen_function(l.f);
    rec(h, r, |rc| {
        launch_fields(rc, "cuLaunchKernel", l, params, extra)
    });
}

/// The `Launch` record of launch `l` with arguments `params` or `extra` (`call`: the call named
/// in a note when the argument layout is unknown).
pub(super) unsafe fn launch_fields(
    rc: &mut Recorder,
    call: &str,
    l: LaunchCall,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Launch {
    {
        let f = l.f as u64;
        let (info, layout, in_capture) = state::with(|st| {
            let info = st.kernels.get(&f).cloned().unwrap_or_default();
            (
                info,
                st.param_layout(f),
                st.capturing.contains(&(l.stream as u64)),
            )
        });
        let (arg_offsets, arg_sizes) = layout
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .map(|&(o, s)| (o as u64, s as u64))
            .unzip();
        let args = match (extra_buffer(extra), &layout) {
            (Some(b), _) => Some(b),
            (None, Some(l)) if !params.is_null() || l.is_empty() => Some(pack(l, params)),
            _ => None,
        };
        if args.is_none() {
            rc.note_unreplayable(
                call,
                &format!("argument layout unknown for kernel `{}`", info.name),
            );
        }
        Launch {
            function: f,
            kernel: info.name,
            code: info.code,
            grid_x: l.grid[0],
            grid_y: l.grid[1],
            grid_z: l.grid[2],
            block_x: l.block[0],
            block_y: l.block[1],
            block_z: l.block[2],
            shared_mem: l.shared_mem,
            stream: l.stream as u64,
            args_known: args.is_some() as u8,
            args: args.unwrap_or_default(),
            arg_offsets,
            arg_sizes,
            attrs: l.attrs,
            cooperative: l.cooperative as u8,
            in_capture: in_capture as u8,
        }
    }
}

pub unsafe fn launch_kernel(
    h: Export,
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shmem: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let l = LaunchCall::grid(f, [gx, gy, gz], [bx, by, bz], shmem, stream, false);
    record_launch(h, r, l, params, extra);
    r
}

pub unsafe fn launch_kernel_ex(
    h: Export,
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    if let Some(c) = config.as_ref() {
        let l = LaunchCall {
            f,
            grid: c.grid,
            block: c.block,
            shared_mem: c.shared_mem,
            stream: c.stream,
            attrs: bytes_at(c.attrs, c.num_attrs.min(64) as usize * LAUNCH_ATTR_BYTES).to_vec(),
            cooperative: false,
        };
        record_launch(h, r, l, params, extra);
    }
    r
}

pub unsafe fn launch_cooperative(
    h: Export,
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shmem: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    call: impl FnOnce() -> CUresult,
) -> CUresult {
    let r = call();
    let l = LaunchCall::grid(f, [gx, gy, gz], [bx, by, bz], shmem, stream, true);
    record_launch(h, r, l, params, std::ptr::null_mut());
    r
}
