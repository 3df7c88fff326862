//! Launches: the kernel named by its registration or module look-up, its argument bytes from
//! `extra` or laid out from the code object's metadata; `<<<>>>`'s pushed configuration.

use std::ffi::{c_char, c_int, c_uint, c_void};

use hrr_calls::hip::ffi::{Dim3, Handle, HipError, Ptr};
use hrr_calls::shapes::{CallConfiguration, Launch};

use super::rec;
use crate::api::hip::calls::Export;
use crate::api::hip::loader::runtime_symbol;
use crate::api::hip::state::{self, KernelRef};
use crate::hook::args::cstr;
use crate::hook::ApiExport;

/// What a launch call says, whichever entry point made it.
struct LaunchCall {
    f: u64,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    stream: Handle,
    cooperative: bool,
}

impl LaunchCall {
    fn of(f: u64, grid: Dim3, block: Dim3, shared_mem: u32, stream: Handle) -> Self {
        LaunchCall {
            f,
            grid: [grid.x, grid.y, grid.z],
            block: [block.x, block.y, block.z],
            shared_mem,
            stream,
            cooperative: false,
        }
    }
}

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER`, `_BUFFER_SIZE`, `_END`.
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;
const PARAM_END: usize = 3;

/// The argument buffer handed over in `extra`, if any.
unsafe fn extra_buffer(extra: *mut Ptr) -> Option<Vec<u8>> {
    if extra.is_null() {
        return None;
    }
    let (mut buf, mut size) = (std::ptr::null::<u8>(), None);
    let mut i = 0;
    while i < 64 {
        match *extra.add(i) as usize {
            0 | PARAM_END => break,
            PARAM_BUFFER_POINTER => buf = *extra.add(i + 1) as *const u8,
            PARAM_BUFFER_SIZE => {
                let s = *extra.add(i + 1) as *const usize;
                if !s.is_null() {
                    size = Some(*s);
                }
            }
            _ => {}
        }
        i += 2;
    }
    match (buf.is_null(), size) {
        (false, Some(n)) if n <= u16::MAX as usize * 64 => {
            Some(std::slice::from_raw_parts(buf, n).to_vec())
        }
        _ => None,
    }
}

/// Lay the arguments `args[i]` out at their offsets.
unsafe fn pack(layout: &[(u32, u32)], args: *mut Ptr) -> Option<Vec<u8>> {
    if layout.is_empty() {
        return Some(Vec::new());
    }
    if args.is_null() {
        return None;
    }
    let total = layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0);
    let mut buf = vec![0u8; total];
    for (i, &(o, s)) in layout.iter().enumerate() {
        let src = *args.add(i) as *const u8;
        if src.is_null() {
            return None;
        }
        std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr().add(o as usize), s as usize);
    }
    Some(buf)
}

/// Name of a kernel the recorder did not see registered, asked of the runtime.
unsafe fn runtime_kernel_name(f: u64, stream: Handle) -> Option<String> {
    let p = runtime_symbol(c"hipKernelNameRefByPtr");
    if p.is_null() {
        return None;
    }
    let g = std::mem::transmute::<
        *mut c_void,
        unsafe extern "C" fn(*const c_void, Handle) -> *const c_char,
    >(p);
    let name = g(f as *const c_void, stream);
    (!name.is_null()).then(|| cstr(name))
}

/// Record a launch whose arguments are `args` (pointers per argument) or `extra`.
unsafe fn record_launch(h: Export, r: HipError, l: LaunchCall, args: *mut Ptr, extra: *mut Ptr) {
    let k = if h == Export::hipModuleLaunchKernel {
        state::kernel_of_function(l.f)
    } else {
        state::kernel_of_host_function(l.f)
    };
    let k = k.unwrap_or_else(|| KernelRef {
        name: runtime_kernel_name(l.f, l.stream)
            .unwrap_or_default()
            .into(),
        code: None,
        layout: Err("its registration or module load was not seen".into()),
    });
    let layout = k.layout.as_deref().unwrap_or(&[]);
    let (arg_offsets, arg_sizes) = layout.iter().map(|&(o, s)| (o as u64, s as u64)).unzip();
    let packed = match extra_buffer(extra) {
        Some(b) => Ok(b),
        None => match &k.layout {
            Ok(layout) => pack(layout, args).ok_or_else(|| "argument pointers missing".to_string()),
            Err(e) => Err(e.clone()),
        },
    };
    let in_capture = state::is_capturing(l.stream as u64);
    rec(h, r, |rc| {
        if let Err(why) = &packed {
            rc.note_unreplayable(
                h.base_name(),
                &format!("argument layout unknown for kernel `{}`: {why}", k.name),
            );
        }
        Launch {
            function: l.f,
            kernel: k.name.to_string(),
            code: k.code,
            grid_x: l.grid[0],
            grid_y: l.grid[1],
            grid_z: l.grid[2],
            block_x: l.block[0],
            block_y: l.block[1],
            block_z: l.block[2],
            shared_mem: l.shared_mem,
            stream: l.stream as u64,
            args_known: packed.is_ok() as u8,
            args: packed.unwrap_or_default(),
            arg_offsets,
            arg_sizes,
            attrs: Vec::new(),
            cooperative: l.cooperative as u8,
            in_capture: in_capture as u8,
        }
    });
}

/// `<<<>>>` first pushes the configuration; the kernel's host stub runs (and calls
/// `hipLaunchKernel`, recorded with the configuration) only when that succeeded. So only a
/// failed push is recorded: it is the launch that never happened.
pub unsafe fn push_call_configuration(
    h: Export,
    grid: Dim3,
    block: Dim3,
    shmem: usize,
    stream: Handle,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    if r != 0 {
        rec(h, r, |_| CallConfiguration {
            grid_x: grid.x,
            grid_y: grid.y,
            grid_z: grid.z,
            block_x: block.x,
            block_y: block.y,
            block_z: block.z,
            shared_mem: shmem as u64,
            stream: stream as u64,
        });
    }
    r
}

pub unsafe fn launch_kernel(
    h: Export,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: usize,
    stream: Handle,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    record_launch(
        h,
        r,
        LaunchCall::of(f as u64, grid, block, shmem as u32, stream),
        args,
        std::ptr::null_mut(),
    );
    r
}

pub unsafe fn launch_cooperative(
    h: Export,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: c_uint,
    stream: Handle,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    let l = LaunchCall {
        cooperative: true,
        ..LaunchCall::of(f as u64, grid, block, shmem, stream)
    };
    record_launch(h, r, l, args, std::ptr::null_mut());
    r
}

pub unsafe fn ext_launch_kernel(
    h: Export,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: usize,
    stream: Handle,
    _start: Handle,
    _stop: Handle,
    _flags: c_int,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    record_launch(
        h,
        r,
        LaunchCall::of(f as u64, grid, block, shmem as u32, stream),
        args,
        std::ptr::null_mut(),
    );
    r
}

pub unsafe fn module_launch_kernel(
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
    params: *mut Ptr,
    extra: *mut Ptr,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    let (grid, block) = (
        Dim3 {
            x: gx,
            y: gy,
            z: gz,
        },
        Dim3 {
            x: bx,
            y: by,
            z: bz,
        },
    );
    record_launch(
        h,
        r,
        LaunchCall::of(f as u64, grid, block, shmem, stream),
        params,
        extra,
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_packed_at_their_offsets_and_extra_is_read() {
        let (a, x, n) = (2.5f32, 0x7000_0000_1000u64, 7i32);
        let mut ptrs: [Ptr; 3] = [
            &a as *const f32 as Ptr,
            &x as *const u64 as Ptr,
            &n as *const i32 as Ptr,
        ];
        let buf = unsafe { pack(&[(0, 4), (8, 8), (16, 4)], ptrs.as_mut_ptr()) }.unwrap();
        assert_eq!(buf.len(), 20);
        assert_eq!(&buf[0..4], &a.to_le_bytes());
        assert_eq!(&buf[8..16], &x.to_le_bytes());
        assert_eq!(&buf[16..20], &n.to_le_bytes());
        let mut size = buf.len();
        let mut extra: [Ptr; 5] = [
            PARAM_BUFFER_POINTER as Ptr,
            buf.as_ptr() as Ptr,
            PARAM_BUFFER_SIZE as Ptr,
            &mut size as *mut usize as Ptr,
            PARAM_END as Ptr,
        ];
        assert_eq!(unsafe { extra_buffer(extra.as_mut_ptr()) }, Some(buf));
        assert_eq!(unsafe { pack(&[(0, 4)], std::ptr::null_mut()) }, None);
    }
}
