//! Launches: the packed argument buffer, from `extra` or laid out with the driver's parameter
//! info, with the kernel's name and code object (the record built by the APIs' shared
//! [`crate::hook::launch`]). Graph kernel nodes (`graph/nodes.rs`) record their parameters
//! through the same [`launch_fields`]. What capture knows of a launched function (name, code
//! object, argument layout) a thread remembers between launches ([`remember_kernel`], read by
//! [`with_kernel`]), until any handle is defined again.

#![allow(clippy::missing_safety_doc)]

use super::Call;
use crate::api::cuda::calls::args;
use std::ffi::c_void;

use hrr_calls::cuda::ffi::{CUresult, Handle, LAUNCH_ATTR_BYTES};
use hrr_calls::shapes::{Launch, LaunchTemplate, LaunchView};

use super::code::bind_unseen_function;
use crate::api::cuda::calls::Export;
use crate::api::cuda::hostmem::{self, Target};
use crate::api::cuda::state;
use crate::api::cuda::state::ParamLayout;
use crate::api::cuda::API;
use crate::hook::args::bytes_at;
pub(super) use crate::hook::launch::LaunchCall;
use crate::hook::launch::{extra_pairs, pack_args_into, with_bufs, LaunchBufs};
use crate::hook::ApiExport;
use crate::recorder::Recorder;
use hrr_archive::ObjectId;

/// The argument buffer handed over in `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
unsafe fn extra_buffer<'a>(extra: *mut *mut c_void) -> Option<&'a [u8]> {
    let (mut buf, mut size) = (std::ptr::null::<u8>(), 0usize);
    extra_pairs(extra, 0, |key, value| match key {
        1 => buf = value as *const u8,
        2 => size = *(value as *const usize),
        _ => {}
    });
    (!buf.is_null()).then(|| std::slice::from_raw_parts(buf, size))
}

/// What a launch's record holds that is known before its call, beside its packed arguments
/// (prepared in this thread's kept launch buffers): the slot where this thread remembers the
/// function (name, code object, argument layout: [`with_kernel`]), whether the layout was known,
/// and whether its stream is being captured into a graph.
pub(super) struct Prepared {
    f: u64,
    slot: usize,
    known: bool,
    in_capture: bool,
}

/// What a launch needs of what capture knows of a function, as a thread last found it: the
/// function, the generation of that knowledge ([`state::kernels_generation`]), its name, code
/// object and argument layout. Launches of the kernels a thread launched before read the
/// state's lock-guarded maps once, not at every launch, and their records take the name and
/// layout from here (no copy, no reference count touched).
struct KnownKernel {
    f: u64,
    generation: u64,
    name: String,
    code: Option<ObjectId>,
    layout: Option<ParamLayout>,
    /// What every launch record of the function holds beside the launch's own values.
    template: LaunchTemplate,
}

/// Functions a thread remembers, by handle (direct-mapped: a slot holds the last function
/// launched of those that map to it).
const KNOWN_KERNELS: usize = 64;

thread_local! {
    static LAUNCHED: std::cell::RefCell<[Option<KnownKernel>; KNOWN_KERNELS]> =
        const { std::cell::RefCell::new([const { None }; KNOWN_KERNELS]) };
}

impl KnownKernel {
    /// Whether this is what capture knows of `f` as of `generation`.
    fn holds(&self, f: u64, generation: u64) -> bool {
        self.f == f && self.generation == generation
    }
}

/// The slot where a thread remembers function `f`.
fn slot_of(f: u64) -> usize {
    (f >> 4) as usize % KNOWN_KERNELS
}

/// Remember function `f` in its slot, from the state as of `generation` (a function capture
/// never saw looked up is bound first: `bind_unseen_function`); returns the slot.
unsafe fn remember_kernel(f: u64, generation: u64) -> usize {
    let slot = slot_of(f);
    bind_unseen_function(f as Handle);
    LAUNCHED.with(|known| {
        let mut known = known.borrow_mut();
        // the slot's buffers are reused: a loop alternating kernels allocates nothing
        let (mut name, mut template) = known[slot]
            .take()
            .map(|k| (k.name, k.template))
            .unwrap_or_default();
        name.clear();
        let (code, layout) = state::with(|st| {
            let code = st.kernels.get(&f).and_then(|k| {
                name.push_str(&k.name);
                k.code
            });
            (code, st.param_layout(f))
        });
        template.set(f, &name, code, layout.as_deref().unwrap_or(&[]));
        known[slot] = Some(KnownKernel {
            f,
            generation,
            name,
            code,
            layout,
            template,
        });
    });
    slot
}

/// `each` on what this thread remembers of `p`'s function (in the slot `prepare` filled; filled
/// again should it hold another function by then, which no recorded call between the two does).
fn with_kernel<R>(p: &Prepared, each: impl FnOnce(&KnownKernel) -> R) -> R {
    let mut each = Some(each);
    let hit = LAUNCHED.with(|known| {
        let known = known.borrow();
        let k = known[p.slot].as_ref().filter(|k| k.f == p.f)?;
        Some(each.take().expect("called once")(k))
    });
    if let Some(r) = hit {
        return r;
    }
    // SAFETY: `p.f` is the function handle the program passed to its launch.
    let slot = unsafe { remember_kernel(p.f, state::kernels_generation()) };
    LAUNCHED.with(|known| {
        let known = known.borrow();
        let k = known[slot].as_ref().expect("just remembered");
        each.take().expect("called once")(k)
    })
}

/// Prepare the record of launch `l` with arguments `params` or `extra` (before its call: the
/// arguments are what host-visible memory tracking matches, [`submit_launch`]).
pub(super) unsafe fn prepare(
    l: &LaunchCall,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Prepared {
    let f = l.f as u64;
    let stream = l.stream as u64;
    let in_capture = state::any_capturing() && state::with(|st| st.is_capturing(stream));
    let pack =
        |bufs: &mut LaunchBufs, k: &KnownKernel| match (extra_buffer(extra), k.layout.as_deref()) {
            (Some(b), _) => {
                bufs.args.clear();
                bufs.args.extend_from_slice(b);
                true
            }
            (None, Some(layout)) => pack_args_into(&mut bufs.args, layout, params, false),
            (None, None) => false,
        };
    let generation = state::kernels_generation();
    let slot = slot_of(f);
    let mut p = Prepared {
        f,
        slot,
        known: false,
        in_capture,
    };
    // a function this thread launched before: one look at its slot
    let hit = with_bufs(|bufs| {
        LAUNCHED.with(|known| {
            let known = known.borrow();
            let k = known[slot].as_ref().filter(|k| k.holds(f, generation))?;
            Some(pack(bufs, k))
        })
    });
    p.known = match hit {
        Some(known) => known,
        None => {
            p.slot = remember_kernel(f, generation);
            with_bufs(|bufs| with_kernel(&p, |k| pack(bufs, k)))
        }
    };
    p
}

/// Launch `l`, prepared as `p`, is about to be made: the host-visible memory its arguments
/// point into is read for host writes and taken as written by it ([`hostmem::submit`]);
/// nothing when no such memory is tracked (the common case: one atomic load), nor for a launch
/// into a stream being captured (it runs later, in a graph).
#[inline(always)]
fn submit_launch(l: &LaunchCall, p: &Prepared) {
    if hostmem::tracking() {
        submit_tracked(l, p);
    }
}

/// [`submit_launch`] while host-visible memory is tracked.
#[inline(never)]
fn submit_tracked(l: &LaunchCall, p: &Prepared) {
    if p.in_capture {
        return hostmem::submit(Target::Nothing);
    }
    with_bufs(|bufs| {
        hostmem::submit(Target::Launch {
            args: p.known.then_some(&bufs.args[..]),
            stream: l.stream as u64,
        })
    });
}

/// Make launch `l` (`call`) and record it: prepared, submitted to the tracker of host-visible
/// memory, called, recorded.
unsafe fn launch_and_record(
    h: Export,
    l: LaunchCall,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    call: impl Call,
) -> CUresult {
    let p = prepare(&l, params, extra);
    submit_launch(&l, &p);
    let r = call();
    // written from this thread's kept buffers, where `prepare` left the arguments, and its
    // memory of the function
    with_bufs(|bufs| {
        crate::hook::record_written(&API, h.id(), Some(r), |rc, payload| {
            with_kernel(&p, |k| {
                launch_view(rc, "cuLaunchKernel", &l, &p, bufs, k).write_from(&k.template, payload)
            })
        })
    });
    r
}

/// The `Launch` record of launch `l` as `p` prepared it, a view of this thread's kept buffers
/// `bufs` and its memory of the function `k` (`call`: the call named in a note when the
/// argument layout is unknown: its arguments are not recorded and replay cannot make it).
#[inline]
fn launch_view<'a>(
    rc: &mut Recorder,
    call: &str,
    l: &'a LaunchCall,
    p: &'a Prepared,
    bufs: &'a LaunchBufs,
    k: &'a KnownKernel,
) -> LaunchView<'a> {
    if !p.known {
        let why = format!("argument layout unknown for kernel `{}`", k.name);
        rc.note_unreplayable(call, &why);
    }
    let layout = k.layout.as_deref().unwrap_or(&[]);
    let args = (&bufs.args[..], p.known);
    l.view(&k.name, k.code, layout, args, p.in_capture)
}

/// The owned `Launch` record of launch `l` as `p` prepared it (a graph kernel node's).
pub(super) fn launch_fields(rc: &mut Recorder, call: &str, l: LaunchCall, p: Prepared) -> Launch {
    with_bufs(|bufs| with_kernel(&p, |k| launch_view(rc, call, &l, &p, bufs, k).to_launch()))
}

pub unsafe fn launch_kernel(h: Export, a: args::LaunchKernel, call: impl Call) -> CUresult {
    let (grid, block) = ([a.gx, a.gy, a.gz], [a.bx, a.by, a.bz]);
    let l = LaunchCall::grid(a.f, grid, block, a.shmem, a.stream, false);
    launch_and_record(h, l, a.params, a.extra, call)
}

pub unsafe fn launch_kernel_ex(h: Export, a: args::LaunchKernelEx, call: impl Call) -> CUresult {
    let Some(c) = a.config.as_ref() else {
        return call();
    };
    let l = LaunchCall {
        f: a.f,
        grid: c.grid,
        block: c.block,
        shared_mem: c.shared_mem,
        stream: c.stream,
        attrs: bytes_at(c.attrs, c.num_attrs.min(64) as usize * LAUNCH_ATTR_BYTES),
        cooperative: false,
    };
    launch_and_record(h, l, a.params, a.extra, call)
}

pub unsafe fn launch_cooperative(
    h: Export,
    a: args::LaunchCooperativeKernel,
    call: impl Call,
) -> CUresult {
    let (grid, block) = ([a.gx, a.gy, a.gz], [a.bx, a.by, a.bz]);
    let l = LaunchCall::grid(a.f, grid, block, a.shmem, a.stream, true);
    launch_and_record(h, l, a.params, std::ptr::null_mut(), call)
}
