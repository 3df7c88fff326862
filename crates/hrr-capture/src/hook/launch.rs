//! Launch recording shared by the APIs: what a launch call says ([`LaunchCall`]), the walk of
//! its `extra` array ([`extra_pairs`]), the packing of per-argument pointers into a thread's
//! kept argument buffer ([`pack_args_into`], [`with_bufs`]) and the `Launch` record written
//! from them in place ([`LaunchCall::view`]). Each API finds the kernel, its argument layout
//! and the argument bytes its own way.

use std::ffi::{c_uint, c_void};

use hrr_archive::ObjectId;
use hrr_calls::shapes::LaunchView;

/// What a launch call (or a CUDA graph kernel node) says, whichever API and entry point made it
/// (its launch attributes borrowed from the call's arguments).
pub struct LaunchCall<'a> {
    /// The function handle (HIP's runtime launches: the kernel's host stub).
    pub f: *mut c_void,
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem: c_uint,
    pub stream: *mut c_void,
    /// The launch attributes' bytes (`cuLaunchKernelEx`; else empty).
    pub attrs: &'a [u8],
    pub cooperative: bool,
}

impl LaunchCall<'_> {
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
            attrs: &[],
            cooperative,
        }
    }

    /// The `Launch` record of this launch of kernel `kernel` (in code object `code`) as a
    /// view: its argument bytes `args` (`known`: they are the arguments; else none recorded)
    /// laid out as `layout` (offset and size of each argument; empty when unknown), written
    /// where they are (the launch hot path: no owned record built).
    pub fn view<'a>(
        &'a self,
        kernel: &'a str,
        code: Option<ObjectId>,
        layout: &'a [(u32, u32)],
        (args, known): (&'a [u8], bool),
        in_capture: bool,
    ) -> LaunchView<'a> {
        LaunchView {
            function: self.f as u64,
            kernel,
            code,
            grid: self.grid,
            block: self.block,
            shared_mem: self.shared_mem,
            stream: self.stream as u64,
            args: if known { args } else { &[] },
            layout,
            attrs: self.attrs,
            cooperative: self.cooperative,
            in_capture,
            args_known: known,
        }
    }
}

/// The buffer of a launch record's argument bytes (the kernel's name, code object and layout
/// come from what each API remembers of the function). Kept per thread between launches, so
/// that recording a launch allocates nothing once it is large enough: a launch's record is
/// written from it in place ([`LaunchCall::view`]).
#[derive(Default)]
pub struct LaunchBufs {
    pub args: Vec<u8>,
}

thread_local! {
    // const-initialised: no first-use check at each of a launch's accesses
    static BUFS: std::cell::RefCell<LaunchBufs> = const {
        std::cell::RefCell::new(LaunchBufs { args: Vec::new() })
    };
}

/// `f` on this thread's kept launch buffers, left in place (a launch's record is prepared in
/// them before its call, then written from them).
pub fn with_bufs<R>(f: impl FnOnce(&mut LaunchBufs) -> R) -> R {
    BUFS.with(|b| f(&mut b.borrow_mut()))
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

/// Lay the arguments `params[i]` out at their offsets and sizes in `layout`, into `buf`
/// (cleared first): empty when there are none; `false` (the arguments are unknown) when
/// `params` is null. A null `params[i]` is left as zero bytes or, with `null_unknown`, makes
/// the arguments unknown.
///
/// # Safety
/// `params` is null or holds one pointer per argument, each null or readable for its size.
pub unsafe fn pack_args_into(
    buf: &mut Vec<u8>,
    layout: &[(u32, u32)],
    params: *mut *mut c_void,
    null_unknown: bool,
) -> bool {
    buf.clear();
    if layout.is_empty() {
        return true;
    }
    if params.is_null() {
        return false;
    }
    let total = layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0);
    buf.resize(total, 0);
    for (i, &(o, s)) in layout.iter().enumerate() {
        let src = *params.add(i) as *const u8;
        if src.is_null() {
            if null_unknown {
                return false;
            }
            continue;
        }
        copy_arg(src, buf.as_mut_ptr().add(o as usize), s as usize);
    }
    true
}

/// Copy one argument of `size` bytes from `src` to `dst`: the common sizes (pointers, integers,
/// floats) as one load and store each, not a call of `memcpy` (a kernel of 8 arguments made 8
/// calls a launch).
///
/// # Safety
/// `src` is readable and `dst` writable for `size` bytes.
#[inline(always)]
unsafe fn copy_arg(src: *const u8, dst: *mut u8, size: usize) {
    match size {
        8 => dst
            .cast::<u64>()
            .write_unaligned(src.cast::<u64>().read_unaligned()),
        4 => dst
            .cast::<u32>()
            .write_unaligned(src.cast::<u32>().read_unaligned()),
        _ => std::ptr::copy_nonoverlapping(src, dst, size),
    }
}
