//! Launches: the kernel named by its registration or module look-up, its argument bytes from
//! `extra` or laid out from the code object's metadata (the record built by the APIs' shared
//! [`crate::hook::launch`]); `<<<>>>`'s pushed configuration.

use crate::api::hip::calls::args;
use std::ffi::{c_char, c_void};

use hrr_calls::hip::ffi::{Dim3, Handle, HipError, Ptr};
use hrr_calls::shapes::{CallConfiguration, EventRecord};

use super::rec;
use crate::api::hip::calls::Export;
use crate::api::hip::loader::runtime_symbol;
use crate::api::hip::state::{self, KernelRef};
use crate::hook::args::cstr;
use crate::hook::launch::{extra_pairs, pack_args_into, with_bufs, LaunchCall};
use crate::hook::record_written;
use crate::hook::ApiExport;

/// A launch of `f` given its grid and block as `Dim3`s (not cooperative).
fn launch_of(
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    shared_mem: u32,
    stream: Handle,
) -> LaunchCall<'static> {
    LaunchCall::grid(
        f as Handle,
        [grid.x, grid.y, grid.z],
        [block.x, block.y, block.z],
        shared_mem,
        stream,
        false,
    )
}

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER`, `_BUFFER_SIZE`, `_END`.
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;
const PARAM_END: usize = 3;

/// The argument buffer handed over in `extra`, if any.
unsafe fn extra_buffer<'a>(extra: *mut Ptr) -> Option<&'a [u8]> {
    let (mut buf, mut size) = (std::ptr::null::<u8>(), None);
    extra_pairs(extra, PARAM_END, |key, value| match key {
        PARAM_BUFFER_POINTER => buf = value as *const u8,
        PARAM_BUFFER_SIZE => {
            let s = value as *const usize;
            if !s.is_null() {
                size = Some(*s);
            }
        }
        _ => {}
    });
    match (buf.is_null(), size) {
        (false, Some(n)) if n <= u16::MAX as usize * 64 => Some(std::slice::from_raw_parts(buf, n)),
        _ => None,
    }
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
    let f = l.f as u64;
    let module_function = matches!(
        h.base_name(),
        "hipModuleLaunchKernel" | "hipExtModuleLaunchKernel" | "hipHccModuleLaunchKernel"
    );
    let k = if module_function {
        state::kernel_of_function(f)
    } else {
        state::kernel_of_host_function(f)
    };
    let k = k.unwrap_or_else(|| KernelRef {
        name: runtime_kernel_name(f, l.stream).unwrap_or_default().into(),
        code: None,
        layout: Err("its registration or module load was not seen".into()),
    });
    let in_capture = state::is_capturing(l.stream as u64);
    // `extra`'s buffer written from where it is, per-argument pointers packed into this
    // thread's kept launch buffer first
    with_bufs(|bufs| {
        let packed: Result<&[u8], String> = match extra_buffer(extra) {
            Some(b) => Ok(b),
            None => match &k.layout {
                Ok(layout) if pack_args_into(&mut bufs.args, layout, args, true) => Ok(&bufs.args),
                Ok(_) => Err("argument pointers missing".to_string()),
                Err(e) => Err(e.clone()),
            },
        };
        record_written(Export::api(), h.id(), Some(r), |rc, p| {
            if let Err(why) = &packed {
                rc.note_unreplayable(
                    h.base_name(),
                    &format!("argument layout unknown for kernel `{}`: {why}", k.name),
                );
            }
            let layout = k.layout.as_deref().unwrap_or(&[]);
            let args = (packed.as_deref().unwrap_or(&[]), packed.is_ok());
            l.view(&k.name, k.code, layout, args, in_capture).write(p)
        });
    });
}

/// `<<<>>>` first pushes the configuration; the kernel's host stub runs (and calls
/// `hipLaunchKernel`, recorded with the configuration) only when that succeeded. So only a
/// failed push is recorded: it is the launch that never happened.
pub unsafe fn push_call_configuration(h: Export, a: args::PushCallConfiguration, r: HipError) {
    let args::PushCallConfiguration {
        grid,
        block,
        shmem,
        stream,
    } = a;
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
}

pub unsafe fn launch_kernel(h: Export, a: args::LaunchKernel, r: HipError) {
    let l = launch_of(a.f, a.grid, a.block, a.shmem as u32, a.stream);
    record_launch(h, r, l, a.args, std::ptr::null_mut());
}

pub unsafe fn launch_cooperative(h: Export, a: args::LaunchCooperativeKernel, r: HipError) {
    let l = launch_of(a.f, a.grid, a.block, a.shmem, a.stream);
    let l = LaunchCall {
        cooperative: true,
        ..l
    };
    record_launch(h, r, l, a.args, std::ptr::null_mut());
}

/// The start and stop events a `hipExt*` launch (status `r`) records around its kernel on
/// `stream`, as the `hipEventRecord` events they stand for: the start's before the launch's
/// event (`launch` records it), the stop's after, so replay records them where the program's
/// waits and timings expect them.
unsafe fn with_events(
    r: HipError,
    (start, stop, stream): (Handle, Handle, Handle),
    launch: impl FnOnce(),
) {
    let record = |e: Handle| {
        if r == 0 && !e.is_null() {
            rec(Export::hipEventRecord, 0, |_| EventRecord {
                event: e as u64,
                stream: stream as u64,
            });
        }
    };
    record(start);
    launch();
    record(stop);
}

pub unsafe fn ext_launch_kernel(h: Export, a: args::ExtLaunchKernel, r: HipError) {
    let l = launch_of(a.f, a.grid, a.block, a.shmem as u32, a.stream);
    with_events(r, (a.start, a.stop, a.stream), || {
        record_launch(h, r, l, a.args, std::ptr::null_mut())
    });
}

pub unsafe fn module_launch_kernel(h: Export, a: args::ModuleLaunchKernel, r: HipError) {
    let args::ModuleLaunchKernel {
        f,
        gx,
        gy,
        gz,
        bx,
        by,
        bz,
        shmem,
        stream,
        params,
        extra,
    } = a;
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
        launch_of(f, grid, block, shmem, stream),
        params,
        extra,
    );
}

/// Record a launch of the module function of `$a`, a row whose sizes are in work-items, after
/// the call `$r` returned ([`module_launch_in_work_items`]).
macro_rules! in_work_items {
    ($h:expr, $r:expr, $a:expr) => {
        module_launch_in_work_items(
            $h,
            $r,
            $a.f,
            ([$a.gx, $a.gy, $a.gz], [$a.bx, $a.by, $a.bz]),
            ($a.shmem, $a.stream),
            ($a.params, $a.extra),
        )
    };
}

/// `hipExtModuleLaunchKernel`: a module function launched with its sizes in work-items, between
/// its start and stop events.
pub unsafe fn ext_module_launch_kernel(h: Export, a: args::ExtModuleLaunchKernel, r: HipError) {
    with_events(r, (a.start, a.stop, a.stream), || in_work_items!(h, r, a));
}

/// `hipHccModuleLaunchKernel`, the deprecated name of `hipExtModuleLaunchKernel` (no flags).
pub unsafe fn hcc_module_launch_kernel(h: Export, a: args::HccModuleLaunchKernel, r: HipError) {
    with_events(r, (a.start, a.stop, a.stream), || in_work_items!(h, r, a));
}

/// Record a module launch given its global size in work-items and its work-group size: as a
/// launch of `global / local` work-groups. A global size that is not a multiple of the
/// work-group size (the last work-group partial) is recorded with that work-group whole, and
/// the launch noted as not reproducible exactly (replay would run the extra work-items).
unsafe fn module_launch_in_work_items(
    h: Export,
    r: HipError,
    f: Handle,
    (global, local): ([u32; 3], [u32; 3]),
    (shmem, stream): (usize, Handle),
    (params, extra): (*mut Ptr, *mut Ptr),
) {
    let groups = |i: usize| {
        global[i]
            .checked_div(local[i])
            .map_or(0, |_| global[i].div_ceil(local[i]))
    };
    let grid = Dim3 {
        x: groups(0),
        y: groups(1),
        z: groups(2),
    };
    let block = Dim3 {
        x: local[0],
        y: local[1],
        z: local[2],
    };
    if r == 0 && (0..3).any(|i| local[i] != 0 && global[i] % local[i] != 0) {
        let why = format!(
            "a partial work-group (global size {global:?} is not a multiple of {local:?}): replay launches it whole"
        );
        crate::recorder::note_unreplayable_now(&crate::api::hip::API, h.base_name(), &why);
    }
    let shmem = u32::try_from(shmem).unwrap_or(u32::MAX);
    record_launch(
        h,
        r,
        launch_of(f, grid, block, shmem, stream),
        params,
        extra,
    );
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
        let mut buf = Vec::new();
        let layout = [(0, 4), (8, 8), (16, 4)];
        assert!(unsafe { pack_args_into(&mut buf, &layout, ptrs.as_mut_ptr(), true) });
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
        assert_eq!(unsafe { extra_buffer(extra.as_mut_ptr()) }, Some(&buf[..]));
        let null = std::ptr::null_mut();
        assert!(!unsafe { pack_args_into(&mut buf, &[(0, 4)], null, true) });
    }
}
