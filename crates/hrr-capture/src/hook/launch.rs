//! Launch recording shared by the APIs: what a launch call says ([`LaunchCall`]), the walk of
//! its `extra` array ([`extra_pairs`]), the packing of per-argument pointers into the argument
//! buffer ([`pack_args`]) and the `Launch` record built from them ([`LaunchCall::record`]).
//! Each API finds the kernel, its argument layout and the argument bytes its own way.

use std::ffi::{c_uint, c_void};

use hrr_archive::ObjectId;
use hrr_calls::shapes::Launch;

/// What a launch call (or a CUDA graph kernel node) says, whichever API and entry point made it.
pub struct LaunchCall {
    /// The function handle (HIP's runtime launches: the kernel's host stub).
    pub f: *mut c_void,
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem: c_uint,
    pub stream: *mut c_void,
    /// The launch attributes' bytes (`cuLaunchKernelEx`; else empty).
    pub attrs: Vec<u8>,
    pub cooperative: bool,
}

impl LaunchCall {
    /// A launch given its grid and block as arguments (no launch attributes).
    pub fn grid(
        f: *mut c_void,
        grid: [c_uint; 3],
        block: [c_uint; 3],
        shared_mem: c_uint,
        stream: *mut c_void,
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

    /// The `Launch` record of this launch of kernel `kernel` (in code object `code`): its
    /// argument layout (offset and size of each argument; empty when unknown), its argument
    /// bytes (`None`: unknown) and whether its stream was capturing.
    pub fn record(
        self,
        kernel: String,
        code: Option<ObjectId>,
        layout: &[(u32, u32)],
        args: Option<Vec<u8>>,
        in_capture: bool,
    ) -> Launch {
        // (two exact-size collects: one allocation each, where `unzip` grows them push by push)
        let arg_offsets = layout.iter().map(|&(o, _)| o as u64).collect();
        let arg_sizes = layout.iter().map(|&(_, s)| s as u64).collect();
        Launch {
            function: self.f as u64,
            kernel,
            code,
            grid_x: self.grid[0],
            grid_y: self.grid[1],
            grid_z: self.grid[2],
            block_x: self.block[0],
            block_y: self.block[1],
            block_z: self.block[2],
            shared_mem: self.shared_mem,
            stream: self.stream as u64,
            args_known: args.is_some() as u8,
            args: args.unwrap_or_default(),
            arg_offsets,
            arg_sizes,
            attrs: self.attrs,
            cooperative: self.cooperative as u8,
            in_capture: in_capture as u8,
        }
    }
}

/// Hand each (key, value) pair of a launch's `extra` array to `each`, up to the terminating key
/// (0, or the API's `end`), 32 pairs at most; nothing when `extra` is null.
///
/// # Safety
/// `extra` is null or a key/value array as the launch call takes it.
pub unsafe fn extra_pairs(
    extra: *mut *mut c_void,
    end: usize,
    mut each: impl FnMut(usize, *mut c_void),
) {
    if extra.is_null() {
        return;
    }
    let mut i = 0;
    while i < 64 {
        match *extra.add(i) as usize {
            0 => break,
            key if key == end => break,
            key => each(key, *extra.add(i + 1)),
        }
        i += 2;
    }
}

/// Lay the arguments `params[i]` out at their offsets and sizes in `layout`: empty when there
/// are none, `None` when `params` is null. A null `params[i]` is left as zero bytes or, with
/// `null_unknown`, makes the arguments unknown (`None`).
///
/// # Safety
/// `params` is null or holds one pointer per argument, each null or readable for its size.
pub unsafe fn pack_args(
    layout: &[(u32, u32)],
    params: *mut *mut c_void,
    null_unknown: bool,
) -> Option<Vec<u8>> {
    if layout.is_empty() {
        return Some(Vec::new());
    }
    if params.is_null() {
        return None;
    }
    let total = layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0);
    let mut buf = vec![0u8; total];
    for (i, &(o, s)) in layout.iter().enumerate() {
        let src = *params.add(i) as *const u8;
        if src.is_null() {
            if null_unknown {
                return None;
            }
            continue;
        }
        std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr().add(o as usize), s as usize);
    }
    Some(buf)
}
