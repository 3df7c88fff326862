//! The HIP hooks: one exported wrapper per recorded runtime entry point, each forwarding to the
//! real runtime and recording the call, plus the schema that names every call and field. A
//! call's record type is its index in the table + 1. Field names and classes follow the CUDA
//! side wherever the meaning is the same (`dptr`, `bytesize`, `dst`, `src`, `bytes`, `stream`,
//! `h2d_blob`, `d2h_blob`, `kernel`, `code`, `args`, `arg_offsets`, `arg_sizes`, `grid_x`, ...),
//! so `--info`, `--events` and replay read both alike.
//!
//! Recording rules: H2D sources are stored as blobs before the call, D2H results after it (async
//! copies: after synchronising the stream); module images and fat binaries as code objects;
//! launches carry the packed argument bytes (from `extra`, or laid out from the code object's
//! `amdhsa.kernels[].args`). Registrations are written when first used (see the module above).

#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use hrr_archive::schema::{CallClass, CallDef, FieldDef, FieldType, PayloadBuilder, Schema};
use hrr_archive::{CodeKind, ObjectId};

use super::{Dim3, HipError, HIP_ERROR_NOT_FOUND};
use crate::recorder::{self, guarded, note_unreplayable, Api, Recorder};

/// Opaque handle (`hipStream_t`, `hipEvent_t`, `hipModule_t`, `hipFunction_t`, ...).
pub type Handle = *mut c_void;
/// A device or host pointer.
pub type Ptr = *mut c_void;

/// HIP implementations that create or destroy allocations and handles: run and recorded under
/// the capture's ordering lock, so a reused address or handle value replays right across threads
/// (see `crate::hooks`). Blocking calls are left out.
const ORDERED_IMPLS: &[&str] = &[
    "malloc",
    "malloc_flags",
    "malloc_managed",
    "malloc_async",
    "malloc_pitch",
    "free",
    "free_async",
    "host_malloc",
    "host_ptr_only",
    "mem_address_reserve",
    "mem_range",
    "mem_create",
    "mem_release",
    "mem_map",
    "module_load",
    "module_load_data",
    "module_load_data_ex",
    "module_unload",
    "module_get_function",
    "stream_create",
    "stream_create_with_flags",
    "stream_create_with_priority",
    "stream_only",
    "event_create",
    "event_create_with_flags",
];

/// Table of hooked entry points, generated with their exported wrappers.
macro_rules! hip_hooks {
    ($( $name:ident => $imp:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => {
        /// Index of each hooked entry point.
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u16)]
        pub enum Hook { $($name),* }

        /// Exported names, by hook index.
        pub const NAMES: &[&CStr] = &[ $( match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) { Ok(c) => c, Err(_) => panic!() } ),* ];
        /// Implementation (and so field list) of each hook.
        pub const IMPLS: &[&str] = &[ $( stringify!($imp) ),* ];
        const COUNT: usize = NAMES.len();
        /// Real runtime entry points, resolved lazily.
        pub static REAL: [AtomicPtr<c_void>; COUNT] = [const { AtomicPtr::new(std::ptr::null_mut()) }; COUNT];

        /// Our wrappers' addresses, by hook index.
        pub fn wrapper(i: usize) -> *mut c_void {
            const W: &[*const ()] = &[ $( $name as *const () ),* ];
            W[i] as *mut c_void
        }

        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                let outer = DEPTH.with(|d| d.replace(d.get() + 1)) == 0;
                const ORDERED: bool = crate::hooks::contains(ORDERED_IMPLS, stringify!($imp));
                let r = if outer && recorder::active() {
                    if ORDERED {
                        recorder::ordered(|| $imp(Hook::$name, $($arg),*))
                    } else {
                        $imp(Hook::$name, $($arg),*)
                    }
                } else {
                    // Capture off, or the runtime calling its own export: only forward.
                    let p = real_ptr(Hook::$name as usize);
                    if p.is_null() {
                        <$ret as Missing>::missing()
                    } else {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> $ret>(p)($($arg),*)
                    }
                };
                DEPTH.with(|d| d.set(d.get() - 1));
                r
            }
        )*
    };
}

thread_local! {
    /// HIP calls this thread is inside: calls the runtime makes to its own exports while
    /// serving the application's call are forwarded, not recorded.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

hip_hooks! {
    hipInit => init(flags: c_uint) -> HipError;
    hipDriverGetVersion => version_out(v: *mut c_int) -> HipError;
    hipRuntimeGetVersion => version_out(v: *mut c_int) -> HipError;
    hipGetDeviceCount => device_count(count: *mut c_int) -> HipError;
    hipSetDevice => device_only(dev: c_int) -> HipError;
    hipGetDevice => device_out(dev: *mut c_int) -> HipError;
    hipDeviceGet => device_get(dev: *mut c_int, ordinal: c_int) -> HipError;
    hipDeviceGetName => device_get_name(name: *mut c_char, len: c_int, dev: c_int) -> HipError;
    hipDeviceTotalMem => device_total_mem(bytes: *mut usize, dev: c_int) -> HipError;
    hipDeviceGetAttribute => device_get_attribute(v: *mut c_int, attrib: c_int, dev: c_int) -> HipError;
    hipGetDeviceProperties => get_device_properties(prop: *mut u8, dev: c_int) -> HipError;
    hipGetDevicePropertiesR0600 => get_device_properties(prop: *mut u8, dev: c_int) -> HipError;
    hipDeviceSynchronize => device_synchronize() -> HipError;
    hipDeviceReset => device_reset() -> HipError;
    hipMalloc => malloc(ptr: *mut Ptr, size: usize) -> HipError;
    hipExtMallocWithFlags => malloc_flags(ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError;
    hipMallocManaged => malloc_managed(ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError;
    hipMallocAsync => malloc_async(ptr: *mut Ptr, size: usize, stream: Handle) -> HipError;
    hipMallocPitch => malloc_pitch(ptr: *mut Ptr, pitch: *mut usize, width: usize, height: usize) -> HipError;
    hipFree => free(ptr: Ptr) -> HipError;
    hipFreeAsync => free_async(ptr: Ptr, stream: Handle) -> HipError;
    hipHostMalloc => host_malloc(ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError;
    hipHostFree => host_ptr_only(ptr: Ptr) -> HipError;
    hipHostRegister => host_register(ptr: Ptr, size: usize, flags: c_uint) -> HipError;
    hipHostUnregister => host_ptr_only(ptr: Ptr) -> HipError;
    hipHostGetDevicePointer => host_get_device_pointer(dptr: *mut Ptr, ptr: Ptr, flags: c_uint) -> HipError;
    hipMemAddressReserve => mem_address_reserve(ptr: *mut Ptr, size: usize, align: usize, addr: Ptr, flags: u64) -> HipError;
    hipMemAddressFree => mem_range(ptr: Ptr, size: usize) -> HipError;
    hipMemCreate => mem_create(handle: *mut u64, size: usize, prop: *const u8, flags: u64) -> HipError;
    hipMemRelease => mem_release(handle: u64) -> HipError;
    hipMemMap => mem_map(ptr: Ptr, size: usize, offset: usize, handle: u64, flags: u64) -> HipError;
    hipMemUnmap => mem_range(ptr: Ptr, size: usize) -> HipError;
    hipMemSetAccess => mem_set_access(ptr: Ptr, size: usize, desc: *const u8, count: usize) -> HipError;
    hipMemcpy => memcpy(dst: Ptr, src: Ptr, n: usize, kind: c_int) -> HipError;
    hipMemcpyAsync => memcpy_async(dst: Ptr, src: Ptr, n: usize, kind: c_int, stream: Handle) -> HipError;
    hipMemcpyWithStream => memcpy_async(dst: Ptr, src: Ptr, n: usize, kind: c_int, stream: Handle) -> HipError;
    hipMemcpyHtoD => memcpy_htod(dst: Ptr, src: Ptr, n: usize) -> HipError;
    hipMemcpyHtoDAsync => memcpy_htod_async(dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError;
    hipMemcpyDtoH => memcpy_dtoh(dst: Ptr, src: Ptr, n: usize) -> HipError;
    hipMemcpyDtoHAsync => memcpy_dtoh_async(dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError;
    hipMemcpyDtoD => memcpy_dtod(dst: Ptr, src: Ptr, n: usize) -> HipError;
    hipMemcpyDtoDAsync => memcpy_dtod_async(dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError;
    hipMemset => memset(dst: Ptr, v: c_int, n: usize) -> HipError;
    hipMemsetAsync => memset_async(dst: Ptr, v: c_int, n: usize, stream: Handle) -> HipError;
    hipMemsetD8 => memset_d8(dst: Ptr, v: u8, n: usize) -> HipError;
    hipMemsetD8Async => memset_d8_async(dst: Ptr, v: u8, n: usize, stream: Handle) -> HipError;
    hipMemsetD16 => memset_d16(dst: Ptr, v: u16, n: usize) -> HipError;
    hipMemsetD16Async => memset_d16_async(dst: Ptr, v: u16, n: usize, stream: Handle) -> HipError;
    hipMemsetD32 => memset_d32(dst: Ptr, v: c_int, n: usize) -> HipError;
    hipMemsetD32Async => memset_d32_async(dst: Ptr, v: c_int, n: usize, stream: Handle) -> HipError;
    hipMemcpyToSymbol => memcpy_to_symbol(symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int) -> HipError;
    hipMemcpyToSymbolAsync => memcpy_to_symbol_async(symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) -> HipError;
    hipMemcpyFromSymbol => memcpy_from_symbol(dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int) -> HipError;
    hipMemcpyFromSymbolAsync => memcpy_from_symbol_async(dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) -> HipError;
    hipGetSymbolAddress => get_symbol_address(dptr: *mut Ptr, symbol: Ptr) -> HipError;
    __hipRegisterFatBinary => register_fat_binary(data: *const c_void) -> *mut Ptr;
    __hipRegisterFunction => register_function(modules: *mut Ptr, host_function: *const c_void, device_function: *mut c_char, device_name: *const c_char, thread_limit: c_uint, tid: *mut c_void, bid: *mut c_void, block: *mut Dim3, grid: *mut Dim3, wsize: *mut c_int) -> ();
    __hipRegisterVar => register_var(modules: *mut Ptr, var: *mut c_void, host_var: *mut c_char, device_var: *const c_char, ext: c_int, size: usize, constant: c_int, global: c_int) -> ();
    __hipUnregisterFatBinary => unregister_fat_binary(modules: *mut Ptr) -> ();
    hipModuleLoad => module_load(m: *mut Handle, fname: *const c_char) -> HipError;
    hipModuleLoadData => module_load_data(m: *mut Handle, image: *const c_void) -> HipError;
    hipModuleLoadDataEx => module_load_data_ex(m: *mut Handle, image: *const c_void, n: c_uint, opts: *mut c_int, vals: *mut Ptr) -> HipError;
    hipModuleUnload => module_unload(m: Handle) -> HipError;
    hipModuleGetFunction => module_get_function(f: *mut Handle, m: Handle, name: *const c_char) -> HipError;
    hipModuleGetGlobal => module_get_global(dptr: *mut Ptr, bytes: *mut usize, m: Handle, name: *const c_char) -> HipError;
    __hipPushCallConfiguration => push_call_configuration(grid: Dim3, block: Dim3, shmem: usize, stream: Handle) -> HipError;
    hipLaunchKernel => launch_kernel(f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: usize, stream: Handle) -> HipError;
    hipLaunchCooperativeKernel => launch_cooperative(f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: c_uint, stream: Handle) -> HipError;
    hipExtLaunchKernel => ext_launch_kernel(f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: usize, stream: Handle, start: Handle, stop: Handle, flags: c_int) -> HipError;
    hipModuleLaunchKernel => module_launch_kernel(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut Ptr, extra: *mut Ptr) -> HipError;
    hipStreamCreate => stream_create(s: *mut Handle) -> HipError;
    hipStreamCreateWithFlags => stream_create_with_flags(s: *mut Handle, flags: c_uint) -> HipError;
    hipStreamCreateWithPriority => stream_create_with_priority(s: *mut Handle, flags: c_uint, prio: c_int) -> HipError;
    hipStreamDestroy => stream_only(s: Handle) -> HipError;
    hipStreamSynchronize => stream_synchronize(s: Handle) -> HipError;
    hipStreamWaitEvent => stream_wait_event(s: Handle, e: Handle, flags: c_uint) -> HipError;
    hipEventCreate => event_create(e: *mut Handle) -> HipError;
    hipEventCreateWithFlags => event_create_with_flags(e: *mut Handle, flags: c_uint) -> HipError;
    hipEventRecord => event_record(e: Handle, s: Handle) -> HipError;
    hipEventSynchronize => event_only(e: Handle) -> HipError;
    hipEventDestroy => event_only(e: Handle) -> HipError;
    hipStreamBeginCapture => stream_begin_capture(s: Handle, mode: c_int) -> HipError;
    hipStreamEndCapture => stream_end_capture(s: Handle, g: *mut Handle) -> HipError;
    hipGraphLaunch => graph_launch(exec: Handle, s: Handle) -> HipError;
    hipLaunchHostFunc => launch_host_func(s: Handle, func: Ptr, data: Ptr) -> HipError;
}

/// The hook exporting `name`, if any (no allocation: used inside `dlsym`).
pub fn find(name: &[u8]) -> Option<usize> {
    NAMES.iter().position(|n| n.to_bytes() == name)
}

/// Record type of a hook.
pub fn call_id(h: Hook) -> u16 {
    h as u16 + 1
}

/// The real entry point of hook `i`, resolved from the runtime on first use.
pub fn real_ptr(i: usize) -> *mut c_void {
    let p = REAL[i].load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    let p = super::runtime_symbol(NAMES[i]);
    if !p.is_null() {
        REAL[i].store(p, Ordering::Release);
    }
    p
}

/// Set hook `i`'s real entry point to what the runtime handed out (through `dlsym`).
pub fn set_real(i: usize, p: *mut c_void) {
    if !p.is_null() {
        REAL[i].store(p, Ordering::Release);
    }
}

/// What a hook returns when the real entry point is missing.
trait Missing {
    fn missing() -> Self;
}
impl Missing for HipError {
    fn missing() -> Self {
        HIP_ERROR_NOT_FOUND
    }
}
impl<T> Missing for *mut T {
    fn missing() -> Self {
        std::ptr::null_mut()
    }
}
impl Missing for () {
    fn missing() -> Self {}
}

macro_rules! real {
    ($h:expr, fn($($t:ty),* $(,)?) -> $ret:ty) => {{
        let p = real_ptr($h as usize);
        if p.is_null() {
            return <$ret as Missing>::missing();
        }
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($t),*) -> $ret>(p)
    }};
    ($h:expr, fn($($t:ty),* $(,)?)) => {
        real!($h, fn($($t),*) -> HipError)
    };
}

unsafe fn out<T: Copy + Default>(p: *const T) -> T {
    if p.is_null() {
        T::default()
    } else {
        *p
    }
}

unsafe fn out_ptr(p: *const Ptr) -> u64 {
    if p.is_null() {
        0
    } else {
        *p as u64
    }
}

unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Run `f` (bookkeeping and recording) when capture is on, inside the reentrancy guard.
fn on_record(f: impl FnOnce()) {
    if recorder::active() {
        guarded(f);
    }
}

/// Write hook `h`'s event: its result, then what `fill` appends. Takes no lock of this module.
fn emit(h: Hook, r: HipError, fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder)) {
    recorder::record_api(Api::Hip, call_id(h), |rc, p| {
        p.i32(r);
        fill(rc, p);
    });
}

/// Record with the hook's id, inside the reentrancy guard.
fn rec(h: Hook, r: HipError, fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder)) {
    on_record(|| emit(h, r, fill));
}

/// Store a host buffer the call is about to read.
unsafe fn host_blob(ptr: *const c_void, n: usize) -> Option<ObjectId> {
    if !recorder::active() || ptr.is_null() {
        return None;
    }
    guarded(|| recorder::put_host_blob_api(Api::Hip, ptr, n)).flatten()
}

// ---------------------------------------------------------------------------------------------
// Field lists: a hook's payload is `result` (when the call returns a status) then these fields.

/// Directions of a copy, as recorded in `direction` (the CUDA side's values).
pub mod direction {
    /// Device to device.
    pub const D2D: u8 = 0;
    /// Host to device.
    pub const H2D: u8 = 1;
    /// Device to host.
    pub const D2H: u8 = 2;
    /// Host to host.
    pub const H2H: u8 = 3;
}

/// Calls that return no status (their payload has no `result`).
fn has_result(imp: &str) -> bool {
    !matches!(
        imp,
        "register_fat_binary" | "register_function" | "register_var" | "unregister_fat_binary"
    )
}

fn fields(imp: &str) -> (CallClass, &'static [(&'static str, FieldType)]) {
    use FieldType::*;
    const LAUNCH: &[(&str, FieldType)] = &[
        ("function", Handle),
        ("kernel", Str),
        ("code", Code),
        ("grid_x", U32),
        ("grid_y", U32),
        ("grid_z", U32),
        ("block_x", U32),
        ("block_y", U32),
        ("block_z", U32),
        ("shared_mem", U32),
        ("stream", Handle),
        ("args", Bytes),
        ("arg_offsets", U64s),
        ("arg_sizes", U64s),
        ("attrs", Bytes),
        ("cooperative", U8),
        ("in_capture", U8),
        ("args_known", U8),
    ];
    const MEMSET: &[(&str, FieldType)] = &[
        ("dst", Ptr),
        ("value", U32),
        ("element_bytes", U32),
        ("count", U64),
        ("stream", Handle),
    ];
    const COPY: &[(&str, FieldType)] = &[
        ("dst", Ptr),
        ("src", Ptr),
        ("bytes", U64),
        ("kind", I32),
        ("stream", Handle),
        ("direction", U8),
        ("h2d_blob", Blob),
        ("d2h_blob", Blob),
    ];
    match imp {
        "init" => (CallClass::Other, &[("flags", U32)]),
        "version_out" => (CallClass::Other, &[("version", I32)]),
        "device_count" => (CallClass::Other, &[("count", I32)]),
        "device_only" | "device_out" => (CallClass::Other, &[("device", I32)]),
        "device_get" => (CallClass::Other, &[("device", I32), ("ordinal", I32)]),
        "device_get_name" => (CallClass::Other, &[("name", Str), ("device", I32)]),
        "device_total_mem" => (CallClass::Other, &[("bytes", U64), ("device", I32)]),
        "device_get_attribute" => (
            CallClass::Other,
            &[("value", I32), ("attrib", I32), ("device", I32)],
        ),
        "get_device_properties" => (
            CallClass::Other,
            &[("device", I32), ("name", Str), ("gcn_arch_name", Str)],
        ),
        "device_synchronize" | "device_reset" => (CallClass::Other, &[]),
        "malloc" => (CallClass::Other, &[("dptr", Ptr), ("bytesize", U64)]),
        "malloc_flags" | "malloc_managed" => (
            CallClass::Other,
            &[("dptr", Ptr), ("bytesize", U64), ("flags", U32)],
        ),
        "malloc_async" => (
            CallClass::Other,
            &[("dptr", Ptr), ("bytesize", U64), ("stream", Handle)],
        ),
        "malloc_pitch" => (
            CallClass::Other,
            &[
                ("dptr", Ptr),
                ("pitch", U64),
                ("width", U64),
                ("height", U64),
            ],
        ),
        "free" => (CallClass::Other, &[("dptr", Ptr)]),
        "free_async" => (CallClass::Other, &[("dptr", Ptr), ("stream", Handle)]),
        "host_malloc" => (
            CallClass::Other,
            &[("host_ptr", Ptr), ("bytesize", U64), ("flags", U32)],
        ),
        "host_ptr_only" => (CallClass::Other, &[("host_ptr", Ptr)]),
        "host_register" => (
            CallClass::Other,
            &[
                ("host_ptr", Ptr),
                ("bytesize", U64),
                ("flags", U32),
                ("contents", Blob),
            ],
        ),
        "host_get_device_pointer" => (
            CallClass::Other,
            &[("dptr", Ptr), ("host_ptr", Ptr), ("flags", U32)],
        ),
        "mem_address_reserve" => (
            CallClass::Other,
            &[
                ("ptr", Ptr),
                ("size", U64),
                ("alignment", U64),
                ("addr", Ptr),
                ("flags", U64),
            ],
        ),
        "mem_range" => (CallClass::Other, &[("ptr", Ptr), ("size", U64)]),
        "mem_create" => (
            CallClass::Other,
            &[
                ("handle", Handle),
                ("size", U64),
                ("prop", Bytes),
                ("flags", U64),
            ],
        ),
        "mem_release" => (CallClass::Other, &[("handle", Handle)]),
        "mem_map" => (
            CallClass::Other,
            &[
                ("ptr", Ptr),
                ("size", U64),
                ("offset", U64),
                ("handle", Handle),
                ("flags", U64),
            ],
        ),
        "mem_set_access" => (
            CallClass::Other,
            &[("ptr", Ptr), ("size", U64), ("desc", Bytes), ("count", U64)],
        ),
        "memcpy" | "memcpy_async" => (CallClass::D2h, COPY),
        "memcpy_htod" | "memcpy_htod_async" => (
            CallClass::H2d,
            &[
                ("dst", Ptr),
                ("src", Ptr),
                ("bytes", U64),
                ("stream", Handle),
                ("h2d_blob", Blob),
            ],
        ),
        "memcpy_dtoh" | "memcpy_dtoh_async" => (
            CallClass::D2h,
            &[
                ("dst", Ptr),
                ("src", Ptr),
                ("bytes", U64),
                ("stream", Handle),
                ("d2h_blob", Blob),
            ],
        ),
        "memcpy_dtod" | "memcpy_dtod_async" => (
            CallClass::Other,
            &[
                ("dst", Ptr),
                ("src", Ptr),
                ("bytes", U64),
                ("stream", Handle),
            ],
        ),
        "memset" | "memset_async" | "memset_d8" | "memset_d8_async" | "memset_d16"
        | "memset_d16_async" | "memset_d32" | "memset_d32_async" => (CallClass::Other, MEMSET),
        "memcpy_to_symbol" | "memcpy_to_symbol_async" => (
            CallClass::H2d,
            &[
                ("symbol", Ptr),
                ("name", Str),
                ("code", Code),
                ("src", Ptr),
                ("bytes", U64),
                ("offset", U64),
                ("kind", I32),
                ("stream", Handle),
                ("direction", U8),
                ("h2d_blob", Blob),
            ],
        ),
        "memcpy_from_symbol" | "memcpy_from_symbol_async" => (
            CallClass::D2h,
            &[
                ("dst", Ptr),
                ("symbol", Ptr),
                ("name", Str),
                ("code", Code),
                ("bytes", U64),
                ("offset", U64),
                ("kind", I32),
                ("stream", Handle),
                ("direction", U8),
                ("d2h_blob", Blob),
            ],
        ),
        "get_symbol_address" => (
            CallClass::Other,
            &[
                ("dptr", Ptr),
                ("symbol", Ptr),
                ("name", Str),
                ("code", Code),
            ],
        ),
        "register_fat_binary" => (
            CallClass::Other,
            &[("modules", Handle), ("code", Code), ("bytes", U64)],
        ),
        "register_function" => (
            CallClass::Other,
            &[("modules", Handle), ("host_function", Ptr), ("name", Str)],
        ),
        "register_var" => (
            CallClass::Other,
            &[
                ("modules", Handle),
                ("host_var", Ptr),
                ("name", Str),
                ("bytes", U64),
                ("constant", I32),
            ],
        ),
        "unregister_fat_binary" => (CallClass::Other, &[("modules", Handle)]),
        "module_load" | "module_load_data" | "module_load_data_ex" => {
            (CallClass::Other, &[("module", Handle), ("code", Code)])
        }
        "module_unload" => (CallClass::Other, &[("module", Handle)]),
        "module_get_function" => (
            CallClass::Other,
            &[("function", Handle), ("module", Handle), ("name", Str)],
        ),
        "module_get_global" => (
            CallClass::Other,
            &[
                ("dptr", Ptr),
                ("bytes", U64),
                ("owner", Handle),
                ("name", Str),
            ],
        ),
        "push_call_configuration" => (
            CallClass::Other,
            &[
                ("grid_x", U32),
                ("grid_y", U32),
                ("grid_z", U32),
                ("block_x", U32),
                ("block_y", U32),
                ("block_z", U32),
                ("shared_mem", U64),
                ("stream", Handle),
            ],
        ),
        "launch_kernel" | "launch_cooperative" | "ext_launch_kernel" | "module_launch_kernel" => {
            (CallClass::Launch, LAUNCH)
        }
        "stream_create" | "stream_create_with_flags" => {
            (CallClass::Other, &[("stream", Handle), ("flags", U32)])
        }
        "stream_create_with_priority" => (
            CallClass::Other,
            &[("stream", Handle), ("flags", U32), ("priority", I32)],
        ),
        "stream_only" | "stream_synchronize" => (CallClass::Other, &[("stream", Handle)]),
        "stream_wait_event" => (
            CallClass::Other,
            &[("stream", Handle), ("event", Handle), ("flags", U32)],
        ),
        "event_create" | "event_create_with_flags" => {
            (CallClass::Other, &[("event", Handle), ("flags", U32)])
        }
        "event_record" => (CallClass::Other, &[("event", Handle), ("stream", Handle)]),
        "event_only" => (CallClass::Other, &[("event", Handle)]),
        "stream_begin_capture" => (CallClass::Other, &[("stream", Handle), ("mode", I32)]),
        "stream_end_capture" => (CallClass::Other, &[("stream", Handle), ("graph", Handle)]),
        "graph_launch" => (
            CallClass::GraphLaunch,
            &[("exec", Handle), ("stream", Handle)],
        ),
        "launch_host_func" => (
            CallClass::Other,
            &[("stream", Handle), ("func", Ptr), ("data", Ptr)],
        ),
        _ => (CallClass::Other, &[]),
    }
}

/// HIP version the recorder was written against (`HIP_VERSION` of ROCm 6.2: major × 10⁷ +
/// minor × 10⁵ + patch); the calls recorded exist from ROCm 5.2 on.
pub const API_VERSION: u64 = 60_200_000;

/// The schema record describing every call this recorder writes.
pub fn schema() -> Schema {
    let calls = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (class, list) = fields(IMPLS[i]);
            let mut f = Vec::new();
            if has_result(IMPLS[i]) {
                f.push(FieldDef {
                    name: "result".into(),
                    ty: FieldType::Result,
                });
            }
            f.extend(list.iter().map(|(n, t)| FieldDef {
                name: (*n).into(),
                ty: *t,
            }));
            CallDef {
                id: i as u16 + 1,
                name: name.to_string_lossy().into_owned(),
                class,
                fields: f,
            }
        })
        .collect();
    Schema::new("hip", API_VERSION, calls)
}

// ---------------------------------------------------------------------------------------------
// Init and devices.

unsafe fn init(h: Hook, flags: c_uint) -> HipError {
    let r = real!(h, fn(c_uint))(flags);
    rec(h, r, |_, p| {
        p.u32(flags);
    });
    r
}

unsafe fn version_out(h: Hook, v: *mut c_int) -> HipError {
    let r = real!(h, fn(*mut c_int))(v);
    rec(h, r, |_, p| {
        p.i32(out(v));
    });
    r
}

unsafe fn device_count(h: Hook, count: *mut c_int) -> HipError {
    let r = real!(h, fn(*mut c_int))(count);
    rec(h, r, |_, p| {
        p.i32(out(count));
    });
    r
}

unsafe fn device_only(h: Hook, dev: c_int) -> HipError {
    let r = real!(h, fn(c_int))(dev);
    rec(h, r, |_, p| {
        p.i32(dev);
    });
    r
}

unsafe fn device_out(h: Hook, dev: *mut c_int) -> HipError {
    let r = real!(h, fn(*mut c_int))(dev);
    rec(h, r, |_, p| {
        p.i32(out(dev));
    });
    r
}

unsafe fn device_get(h: Hook, dev: *mut c_int, ordinal: c_int) -> HipError {
    let r = real!(h, fn(*mut c_int, c_int))(dev, ordinal);
    rec(h, r, |_, p| {
        p.i32(out(dev)).i32(ordinal);
    });
    r
}

unsafe fn device_get_name(h: Hook, name: *mut c_char, len: c_int, dev: c_int) -> HipError {
    let r = real!(h, fn(*mut c_char, c_int, c_int))(name, len, dev);
    rec(h, r, |_, p| {
        let s = if r == 0 && len > 0 {
            cstr(name)
        } else {
            String::new()
        };
        p.str(&s).i32(dev);
    });
    r
}

unsafe fn device_total_mem(h: Hook, bytes: *mut usize, dev: c_int) -> HipError {
    let r = real!(h, fn(*mut usize, c_int))(bytes, dev);
    rec(h, r, |_, p| {
        p.u64(out(bytes) as u64).i32(dev);
    });
    r
}

unsafe fn device_get_attribute(h: Hook, v: *mut c_int, attrib: c_int, dev: c_int) -> HipError {
    let r = real!(h, fn(*mut c_int, c_int, c_int))(v, attrib, dev);
    rec(h, r, |_, p| {
        p.i32(out(v)).i32(attrib).i32(dev);
    });
    r
}

/// Bytes of `hipDeviceProp_t` read back: the whole struct of ROCm 5 (792 bytes; `name` first,
/// `gcnArchName` at 396), and of the ROCm 6 layout (`hipGetDevicePropertiesR0600`, 1472 bytes).
const PROPS_READ: usize = 792;
const PROPS_READ_R0600: usize = 1472;

unsafe fn get_device_properties(h: Hook, prop: *mut u8, dev: c_int) -> HipError {
    let r = real!(h, fn(*mut u8, c_int))(prop, dev);
    rec(h, r, |_, p| {
        let (mut name, mut arch) = (String::new(), String::new());
        if r == 0 && !prop.is_null() {
            let n = if h == Hook::hipGetDevicePropertiesR0600 {
                PROPS_READ_R0600
            } else {
                PROPS_READ
            };
            let b = std::slice::from_raw_parts(prop, n);
            name = CStr::from_bytes_until_nul(&b[..256])
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            arch = super::device::find_arch_name(b).unwrap_or_default();
        }
        p.i32(dev).str(&name).str(&arch);
    });
    r
}

unsafe fn device_synchronize(h: Hook) -> HipError {
    let r = real!(h, fn())();
    rec(h, r, |_, _| {});
    recorder::flush_soft();
    r
}

unsafe fn device_reset(h: Hook) -> HipError {
    let r = real!(h, fn())();
    rec(h, r, |rc, _| {
        note_unreplayable(
            rc,
            "hipDeviceReset",
            "replay keeps its allocations and code loaded across a device reset",
        );
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Memory.

fn note_device(ptr: u64, size: u64) {
    on_record(|| super::note_device(ptr, size));
}

unsafe fn malloc(h: Hook, ptr: *mut Ptr, size: usize) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize))(ptr, size);
    let d = out_ptr(ptr);
    if r == 0 {
        note_device(d, size as u64);
    }
    rec(h, r, |_, p| {
        p.u64(d).u64(size as u64);
    });
    r
}

unsafe fn malloc_flags(h: Hook, ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize, c_uint))(ptr, size, flags);
    let d = out_ptr(ptr);
    if r == 0 {
        note_device(d, size as u64);
    }
    rec(h, r, |_, p| {
        p.u64(d).u64(size as u64).u32(flags);
    });
    r
}

unsafe fn malloc_managed(h: Hook, ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize, c_uint))(ptr, size, flags);
    let d = out_ptr(ptr);
    if r == 0 {
        note_device(d, size as u64);
    }
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "hipMallocManaged",
            "managed memory is not placed; host-side accesses are not recorded",
        );
        p.u64(d).u64(size as u64).u32(flags);
    });
    r
}

unsafe fn malloc_async(h: Hook, ptr: *mut Ptr, size: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize, Handle))(ptr, size, stream);
    let d = out_ptr(ptr);
    if r == 0 {
        note_device(d, size as u64);
    }
    rec(h, r, |_, p| {
        p.u64(d).u64(size as u64).u64(stream as u64);
    });
    r
}

unsafe fn malloc_pitch(
    h: Hook,
    ptr: *mut Ptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
) -> HipError {
    let r = real!(h, fn(*mut Ptr, *mut usize, usize, usize))(ptr, pitch, width, height);
    let (d, pt) = (out_ptr(ptr), out(pitch) as u64);
    if r == 0 {
        note_device(d, pt.saturating_mul(height as u64));
    }
    rec(h, r, |_, p| {
        p.u64(d).u64(pt).u64(width as u64).u64(height as u64);
    });
    r
}

unsafe fn free(h: Hook, ptr: Ptr) -> HipError {
    let r = real!(h, fn(Ptr))(ptr);
    if r == 0 {
        on_record(|| super::forget_device(ptr as u64));
    }
    rec(h, r, |_, p| {
        p.u64(ptr as u64);
    });
    r
}

unsafe fn free_async(h: Hook, ptr: Ptr, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, Handle))(ptr, stream);
    if r == 0 {
        on_record(|| super::forget_device(ptr as u64));
    }
    rec(h, r, |_, p| {
        p.u64(ptr as u64).u64(stream as u64);
    });
    r
}

unsafe fn host_malloc(h: Hook, ptr: *mut Ptr, size: usize, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize, c_uint))(ptr, size, flags);
    rec(h, r, |_, p| {
        p.u64(out_ptr(ptr)).u64(size as u64).u32(flags);
    });
    r
}

unsafe fn host_ptr_only(h: Hook, ptr: Ptr) -> HipError {
    let r = real!(h, fn(Ptr))(ptr);
    rec(h, r, |_, p| {
        p.u64(ptr as u64);
    });
    r
}

unsafe fn host_register(h: Hook, ptr: Ptr, size: usize, flags: c_uint) -> HipError {
    let blob = host_blob(ptr, size);
    let r = real!(h, fn(Ptr, usize, c_uint))(ptr, size, flags);
    rec(h, r, |_, p| {
        p.u64(ptr as u64).u64(size as u64).u32(flags).object(blob);
    });
    r
}

unsafe fn host_get_device_pointer(h: Hook, dptr: *mut Ptr, ptr: Ptr, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Ptr, Ptr, c_uint))(dptr, ptr, flags);
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "hipHostGetDevicePointer",
            "mapped host memory is read by kernels but its later host-side writes are not recorded",
        );
        p.u64(out_ptr(dptr)).u64(ptr as u64).u32(flags);
    });
    r
}

unsafe fn mem_address_reserve(
    h: Hook,
    ptr: *mut Ptr,
    size: usize,
    align: usize,
    addr: Ptr,
    flags: u64,
) -> HipError {
    let r = real!(h, fn(*mut Ptr, usize, usize, Ptr, u64))(ptr, size, align, addr, flags);
    rec(h, r, |_, p| {
        p.u64(out_ptr(ptr))
            .u64(size as u64)
            .u64(align as u64)
            .u64(addr as u64)
            .u64(flags);
    });
    r
}

unsafe fn mem_range(h: Hook, ptr: Ptr, size: usize) -> HipError {
    let r = real!(h, fn(Ptr, usize))(ptr, size);
    if r == 0 && h == Hook::hipMemUnmap {
        on_record(|| super::forget_device(ptr as u64));
    }
    rec(h, r, |_, p| {
        p.u64(ptr as u64).u64(size as u64);
    });
    r
}

/// `sizeof(hipMemAllocationProp)`.
const MEM_PROP_BYTES: usize = 32;
/// `sizeof(hipMemAccessDesc)`.
const ACCESS_DESC_BYTES: usize = 12;

unsafe fn mem_create(
    h: Hook,
    handle: *mut u64,
    size: usize,
    prop: *const u8,
    flags: u64,
) -> HipError {
    let r = real!(h, fn(*mut u64, usize, *const u8, u64))(handle, size, prop, flags);
    rec(h, r, |_, p| {
        let b = if prop.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(prop, MEM_PROP_BYTES)
        };
        p.u64(out(handle)).u64(size as u64).bytes(b).u64(flags);
    });
    r
}

unsafe fn mem_release(h: Hook, handle: u64) -> HipError {
    let r = real!(h, fn(u64))(handle);
    rec(h, r, |_, p| {
        p.u64(handle);
    });
    r
}

unsafe fn mem_map(
    h: Hook,
    ptr: Ptr,
    size: usize,
    offset: usize,
    handle: u64,
    flags: u64,
) -> HipError {
    let r = real!(h, fn(Ptr, usize, usize, u64, u64))(ptr, size, offset, handle, flags);
    if r == 0 {
        note_device(ptr as u64, size as u64);
    }
    rec(h, r, |_, p| {
        p.u64(ptr as u64)
            .u64(size as u64)
            .u64(offset as u64)
            .u64(handle)
            .u64(flags);
    });
    r
}

unsafe fn mem_set_access(
    h: Hook,
    ptr: Ptr,
    size: usize,
    desc: *const u8,
    count: usize,
) -> HipError {
    let r = real!(h, fn(Ptr, usize, *const u8, usize))(ptr, size, desc, count);
    rec(h, r, |_, p| {
        let n = count.min(64) * ACCESS_DESC_BYTES;
        let b = if desc.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(desc, n)
        };
        p.u64(ptr as u64)
            .u64(size as u64)
            .bytes(b)
            .u64(count as u64);
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Copies and memsets.

/// Wait for `stream` so an async D2H result can be read (the recorder's own call, unrecorded).
unsafe fn sync_stream(stream: Handle) -> HipError {
    let p = real_ptr(Hook::hipStreamSynchronize as usize);
    if p.is_null() {
        return HIP_ERROR_NOT_FOUND;
    }
    let f = std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Handle) -> HipError>(p);
    f(stream)
}

/// Store the bytes a D2H copy produced (after waiting for `stream` when the copy is async).
unsafe fn result_blob(r: HipError, dst: Ptr, n: usize, stream: Option<Handle>) -> Option<ObjectId> {
    if r != 0 || !recorder::active() {
        return None;
    }
    if let Some(s) = stream {
        if sync_stream(s) != 0 {
            return None;
        }
    }
    host_blob(dst, n)
}

/// `hipMemcpyKind` → direction; `hipMemcpyDefault` (4) from the recorded device ranges.
fn direction_of(kind: c_int, dst: Ptr, src: Ptr) -> u8 {
    match kind {
        0 => direction::H2H,
        1 => direction::H2D,
        2 => direction::D2H,
        3 => direction::D2D,
        _ => {
            let (mut dd, mut sd) = (true, true);
            on_record(|| {
                dd = super::is_device(dst as u64);
                sd = super::is_device(src as u64);
            });
            match (sd, dd) {
                (true, true) => direction::D2D,
                (false, true) => direction::H2D,
                (true, false) => direction::D2H,
                (false, false) => direction::H2H,
            }
        }
    }
}

unsafe fn generic_copy(
    h: Hook,
    dst: Ptr,
    src: Ptr,
    n: usize,
    kind: c_int,
    stream: Option<Handle>,
) -> HipError {
    let dir = if recorder::active() {
        direction_of(kind, dst, src)
    } else {
        direction::D2D
    };
    let h2d = if dir == direction::H2D {
        host_blob(src, n)
    } else {
        None
    };
    let r = match stream {
        Some(s) => real!(h, fn(Ptr, Ptr, usize, c_int, Handle))(dst, src, n, kind, s),
        None => real!(h, fn(Ptr, Ptr, usize, c_int))(dst, src, n, kind),
    };
    let d2h = if dir == direction::D2H {
        result_blob(r, dst, n, stream)
    } else {
        None
    };
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .i32(kind)
            .u64(stream.unwrap_or(std::ptr::null_mut()) as u64)
            .u8(dir)
            .object(h2d)
            .object(d2h);
    });
    if stream.is_none() {
        recorder::flush_soft();
    }
    r
}

unsafe fn memcpy(h: Hook, dst: Ptr, src: Ptr, n: usize, kind: c_int) -> HipError {
    generic_copy(h, dst, src, n, kind, None)
}

unsafe fn memcpy_async(
    h: Hook,
    dst: Ptr,
    src: Ptr,
    n: usize,
    kind: c_int,
    stream: Handle,
) -> HipError {
    generic_copy(h, dst, src, n, kind, Some(stream))
}

unsafe fn memcpy_htod(h: Hook, dst: Ptr, src: Ptr, n: usize) -> HipError {
    let blob = host_blob(src, n);
    let r = real!(h, fn(Ptr, Ptr, usize))(dst, src, n);
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .u64(0)
            .object(blob);
    });
    r
}

unsafe fn memcpy_htod_async(h: Hook, dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError {
    let blob = host_blob(src, n);
    let r = real!(h, fn(Ptr, Ptr, usize, Handle))(dst, src, n, stream);
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .u64(stream as u64)
            .object(blob);
    });
    r
}

unsafe fn memcpy_dtoh(h: Hook, dst: Ptr, src: Ptr, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, Ptr, usize))(dst, src, n);
    let blob = result_blob(r, dst, n, None);
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .u64(0)
            .object(blob);
    });
    recorder::flush_soft();
    r
}

unsafe fn memcpy_dtoh_async(h: Hook, dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, Ptr, usize, Handle))(dst, src, n, stream);
    let blob = result_blob(r, dst, n, Some(stream));
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .u64(stream as u64)
            .object(blob);
    });
    r
}

unsafe fn memcpy_dtod(h: Hook, dst: Ptr, src: Ptr, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, Ptr, usize))(dst, src, n);
    rec(h, r, |_, p| {
        p.u64(dst as u64).u64(src as u64).u64(n as u64).u64(0);
    });
    r
}

unsafe fn memcpy_dtod_async(h: Hook, dst: Ptr, src: Ptr, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, Ptr, usize, Handle))(dst, src, n, stream);
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src as u64)
            .u64(n as u64)
            .u64(stream as u64);
    });
    r
}

fn memset_fields(p: &mut PayloadBuilder, dst: Ptr, v: u32, elem: u32, n: usize, stream: Handle) {
    p.u64(dst as u64)
        .u32(v)
        .u32(elem)
        .u64(n as u64)
        .u64(stream as u64);
}

unsafe fn memset(h: Hook, dst: Ptr, v: c_int, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, c_int, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u8 as u32, 1, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_async(h: Hook, dst: Ptr, v: c_int, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, c_int, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u8 as u32, 1, n, stream)
    });
    r
}

unsafe fn memset_d8(h: Hook, dst: Ptr, v: u8, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, u8, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u32, 1, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d8_async(h: Hook, dst: Ptr, v: u8, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, u8, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v as u32, 1, n, stream));
    r
}

unsafe fn memset_d16(h: Hook, dst: Ptr, v: u16, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, u16, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u32, 2, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d16_async(h: Hook, dst: Ptr, v: u16, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, u16, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v as u32, 2, n, stream));
    r
}

unsafe fn memset_d32(h: Hook, dst: Ptr, v: c_int, n: usize) -> HipError {
    let r = real!(h, fn(Ptr, c_int, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u32, 4, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d32_async(h: Hook, dst: Ptr, v: c_int, n: usize, stream: Handle) -> HipError {
    let r = real!(h, fn(Ptr, c_int, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v as u32, 4, n, stream));
    r
}

// ---------------------------------------------------------------------------------------------
// `__device__` variables.

/// Name and code object of a registered variable (`None` when it was never seen registered).
fn symbol_of(symbol: Ptr) -> Option<(std::sync::Arc<str>, Option<ObjectId>)> {
    let mut s = None;
    on_record(|| s = super::symbol(symbol as u64));
    s
}

fn note_unknown_symbol(rc: &mut Recorder, call: &str, known: bool) {
    if !known {
        note_unreplayable(
            rc,
            call,
            "a variable whose registration was not seen (its name and code object are unknown)",
        );
    }
}

unsafe fn to_symbol(
    h: Hook,
    symbol: Ptr,
    src: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
    stream: Option<Handle>,
) -> HipError {
    let dir = if kind == 3
        || (kind == 4 && recorder::active() && {
            let mut d = false;
            on_record(|| d = super::is_device(src as u64));
            d
        }) {
        direction::D2D
    } else {
        direction::H2D
    };
    let blob = if dir == direction::H2D {
        host_blob(src, n)
    } else {
        None
    };
    let sym = symbol_of(symbol);
    let r = match stream {
        Some(s) => {
            real!(h, fn(Ptr, Ptr, usize, usize, c_int, Handle))(symbol, src, n, offset, kind, s)
        }
        None => real!(h, fn(Ptr, Ptr, usize, usize, c_int))(symbol, src, n, offset, kind),
    };
    rec(h, r, |rc, p| {
        note_unknown_symbol(rc, "hipMemcpyToSymbol", sym.is_some());
        let (name, code) = sym.clone().unwrap_or_else(|| ("".into(), None));
        p.u64(symbol as u64)
            .str(&name)
            .object(code)
            .u64(src as u64)
            .u64(n as u64)
            .u64(offset as u64)
            .i32(kind)
            .u64(stream.unwrap_or(std::ptr::null_mut()) as u64)
            .u8(dir)
            .object(blob);
    });
    r
}

unsafe fn memcpy_to_symbol(
    h: Hook,
    symbol: Ptr,
    src: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
) -> HipError {
    to_symbol(h, symbol, src, n, offset, kind, None)
}

unsafe fn memcpy_to_symbol_async(
    h: Hook,
    symbol: Ptr,
    src: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
    stream: Handle,
) -> HipError {
    to_symbol(h, symbol, src, n, offset, kind, Some(stream))
}

unsafe fn from_symbol(
    h: Hook,
    dst: Ptr,
    symbol: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
    stream: Option<Handle>,
) -> HipError {
    let dir = if kind == 3
        || (kind == 4 && recorder::active() && {
            let mut d = false;
            on_record(|| d = super::is_device(dst as u64));
            d
        }) {
        direction::D2D
    } else {
        direction::D2H
    };
    let sym = symbol_of(symbol);
    let r = match stream {
        Some(s) => {
            real!(h, fn(Ptr, Ptr, usize, usize, c_int, Handle))(dst, symbol, n, offset, kind, s)
        }
        None => real!(h, fn(Ptr, Ptr, usize, usize, c_int))(dst, symbol, n, offset, kind),
    };
    let blob = if dir == direction::D2H {
        result_blob(r, dst, n, stream)
    } else {
        None
    };
    rec(h, r, |rc, p| {
        note_unknown_symbol(rc, "hipMemcpyFromSymbol", sym.is_some());
        let (name, code) = sym.clone().unwrap_or_else(|| ("".into(), None));
        p.u64(dst as u64)
            .u64(symbol as u64)
            .str(&name)
            .object(code)
            .u64(n as u64)
            .u64(offset as u64)
            .i32(kind)
            .u64(stream.unwrap_or(std::ptr::null_mut()) as u64)
            .u8(dir)
            .object(blob);
    });
    r
}

unsafe fn memcpy_from_symbol(
    h: Hook,
    dst: Ptr,
    symbol: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
) -> HipError {
    from_symbol(h, dst, symbol, n, offset, kind, None)
}

unsafe fn memcpy_from_symbol_async(
    h: Hook,
    dst: Ptr,
    symbol: Ptr,
    n: usize,
    offset: usize,
    kind: c_int,
    stream: Handle,
) -> HipError {
    from_symbol(h, dst, symbol, n, offset, kind, Some(stream))
}

unsafe fn get_symbol_address(h: Hook, dptr: *mut Ptr, symbol: Ptr) -> HipError {
    let r = real!(h, fn(*mut Ptr, Ptr))(dptr, symbol);
    let sym = symbol_of(symbol);
    rec(h, r, |rc, p| {
        note_unknown_symbol(rc, "hipGetSymbolAddress", sym.is_some());
        let (name, code) = sym.clone().unwrap_or_else(|| ("".into(), None));
        p.u64(out_ptr(dptr))
            .u64(symbol as u64)
            .str(&name)
            .object(code);
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Registration (remembered now, written when first used) and modules.

unsafe fn register_fat_binary(h: Hook, data: *const c_void) -> *mut Ptr {
    let handle = real!(h, fn(*const c_void) -> *mut Ptr)(data);
    if !handle.is_null() {
        on_record(|| super::note_fat_binary(handle as u64, data));
    }
    handle
}

unsafe fn register_function(
    h: Hook,
    modules: *mut Ptr,
    host_function: *const c_void,
    device_function: *mut c_char,
    device_name: *const c_char,
    thread_limit: c_uint,
    tid: *mut c_void,
    bid: *mut c_void,
    block: *mut Dim3,
    grid: *mut Dim3,
    wsize: *mut c_int,
) {
    real!(
        h,
        fn(
            *mut Ptr,
            *const c_void,
            *mut c_char,
            *const c_char,
            c_uint,
            *mut c_void,
            *mut c_void,
            *mut Dim3,
            *mut Dim3,
            *mut c_int,
        ) -> ()
    )(
        modules,
        host_function,
        device_function,
        device_name,
        thread_limit,
        tid,
        bid,
        block,
        grid,
        wsize,
    );
    on_record(|| {
        let name = if device_name.is_null() {
            cstr(device_function)
        } else {
            cstr(device_name)
        };
        super::note_function(modules as u64, host_function as u64, &name);
    });
}

unsafe fn register_var(
    h: Hook,
    modules: *mut Ptr,
    var: *mut c_void,
    host_var: *mut c_char,
    device_var: *const c_char,
    ext: c_int,
    size: usize,
    constant: c_int,
    global: c_int,
) {
    real!(
        h,
        fn(*mut Ptr, *mut c_void, *mut c_char, *const c_char, c_int, usize, c_int, c_int) -> ()
    )(
        modules, var, host_var, device_var, ext, size, constant, global,
    );
    on_record(|| {
        let name = if device_var.is_null() {
            cstr(host_var)
        } else {
            cstr(device_var)
        };
        super::note_variable(modules as u64, var as u64, &name);
    });
}

unsafe fn unregister_fat_binary(h: Hook, modules: *mut Ptr) {
    on_record(|| super::forget_fat_binary(modules as u64));
    real!(h, fn(*mut Ptr) -> ())(modules);
}

/// Store the module image at `image` as a code object; returns it and the image's bytes.
unsafe fn store_image(image: *const c_void) -> (Option<ObjectId>, Option<&'static [u8]>) {
    if !recorder::active() {
        return (None, None);
    }
    let Some((ptr, len)) = super::code_object::identify(image as *const u8) else {
        return (None, None);
    };
    let bytes = std::slice::from_raw_parts(ptr, len);
    let code = guarded(|| recorder::put_code_api(Api::Hip, bytes, CodeKind::Hsaco)).flatten();
    (code, Some(bytes))
}

unsafe fn module_load(h: Hook, m: *mut Handle, fname: *const c_char) -> HipError {
    let file = if recorder::active() && !fname.is_null() {
        let path = std::ffi::OsStr::from_encoded_bytes_unchecked(CStr::from_ptr(fname).to_bytes());
        std::fs::read(path).ok()
    } else {
        None
    };
    let code = file
        .as_deref()
        .and_then(|b| guarded(|| recorder::put_code_api(Api::Hip, b, CodeKind::Hsaco)).flatten());
    let r = real!(h, fn(*mut Handle, *const c_char))(m, fname);
    let module = out_ptr(m);
    on_record(|| {
        if r == 0 {
            super::note_module(module, code, file.as_deref());
        }
        emit(h, r, |_, p| {
            p.u64(module).object(code);
        });
    });
    r
}

unsafe fn module_load_data(h: Hook, m: *mut Handle, image: *const c_void) -> HipError {
    let (code, bytes) = store_image(image);
    let r = real!(h, fn(*mut Handle, *const c_void))(m, image);
    let module = out_ptr(m);
    on_record(|| {
        if r == 0 {
            super::note_module(module, code, bytes);
        }
        emit(h, r, |_, p| {
            p.u64(module).object(code);
        });
    });
    r
}

unsafe fn module_load_data_ex(
    h: Hook,
    m: *mut Handle,
    image: *const c_void,
    n: c_uint,
    opts: *mut c_int,
    vals: *mut Ptr,
) -> HipError {
    let (code, bytes) = store_image(image);
    let r = real!(
        h,
        fn(*mut Handle, *const c_void, c_uint, *mut c_int, *mut Ptr)
    )(m, image, n, opts, vals);
    let module = out_ptr(m);
    on_record(|| {
        if r == 0 {
            super::note_module(module, code, bytes);
        }
        emit(h, r, |_, p| {
            p.u64(module).object(code);
        });
    });
    r
}

unsafe fn module_unload(h: Hook, m: Handle) -> HipError {
    let r = real!(h, fn(Handle))(m);
    on_record(|| {
        if r == 0 {
            super::forget_module(m as u64);
        }
        emit(h, r, |_, p| {
            p.u64(m as u64);
        });
    });
    r
}

unsafe fn module_get_function(h: Hook, f: *mut Handle, m: Handle, name: *const c_char) -> HipError {
    let r = real!(h, fn(*mut Handle, Handle, *const c_char))(f, m, name);
    let function = out_ptr(f);
    on_record(|| {
        let name = cstr(name);
        if r == 0 {
            super::note_module_function(function, m as u64, &name);
        }
        emit(h, r, |_, p| {
            p.u64(function).u64(m as u64).str(&name);
        });
    });
    r
}

unsafe fn module_get_global(
    h: Hook,
    dptr: *mut Ptr,
    bytes: *mut usize,
    m: Handle,
    name: *const c_char,
) -> HipError {
    let r = real!(h, fn(*mut Ptr, *mut usize, Handle, *const c_char))(dptr, bytes, m, name);
    rec(h, r, |_, p| {
        p.u64(out_ptr(dptr))
            .u64(out(bytes) as u64)
            .u64(m as u64)
            .str(&cstr(name));
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Launches.

struct Launch {
    f: u64,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    stream: Handle,
    cooperative: bool,
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
    let p = super::runtime_symbol(c"hipKernelNameRefByPtr");
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

/// Record a launch of `kernel` whose arguments are `args` (pointers per argument) or `extra`.
unsafe fn record_launch(h: Hook, r: HipError, l: &Launch, args: *mut Ptr, extra: *mut Ptr) {
    on_record(|| {
        let k = if h == Hook::hipModuleLaunchKernel {
            super::kernel_of_function(l.f)
        } else {
            super::kernel_of_host_function(l.f)
        };
        let k = k.unwrap_or_else(|| super::KernelRef {
            name: runtime_kernel_name(l.f, l.stream)
                .unwrap_or_default()
                .into(),
            code: None,
            layout: Err("its registration or module load was not seen".into()),
        });
        let layout = k.layout.as_deref().unwrap_or(&[]);
        let (offs, sizes): (Vec<u64>, Vec<u64>) =
            layout.iter().map(|&(o, s)| (o as u64, s as u64)).unzip();
        let packed = match extra_buffer(extra) {
            Some(b) => Ok(b),
            None => match &k.layout {
                Ok(layout) => pack(layout, args).ok_or_else(|| "argument pointers missing".into()),
                Err(e) => Err(e.clone()),
            },
        };
        let in_capture = super::is_capturing(l.stream as u64);
        let name = NAMES[h as usize].to_string_lossy();
        emit(h, r, |rc, p| {
            if let Err(why) = &packed {
                note_unreplayable(
                    rc,
                    &name,
                    &format!("argument layout unknown for kernel `{}`: {why}", k.name),
                );
            }
            p.u64(l.f).str(&k.name).object(k.code);
            for v in l.grid.iter().chain(&l.block) {
                p.u32(*v);
            }
            p.u32(l.shared_mem)
                .u64(l.stream as u64)
                .bytes(packed.as_deref().unwrap_or(&[]))
                .u64s(&offs)
                .u64s(&sizes)
                .bytes(&[]);
            p.u8(l.cooperative as u8)
                .u8(in_capture as u8)
                .u8(packed.is_ok() as u8);
        });
    });
}

/// `<<<>>>` first pushes the configuration; the kernel's host stub runs (and calls
/// `hipLaunchKernel`, recorded with the configuration) only when that succeeded. So only a
/// failed push is recorded: it is the launch that never happened.
unsafe fn push_call_configuration(
    h: Hook,
    grid: Dim3,
    block: Dim3,
    shmem: usize,
    stream: Handle,
) -> HipError {
    let r = real!(h, fn(Dim3, Dim3, usize, Handle))(grid, block, shmem, stream);
    if r != 0 {
        rec(h, r, |_, p| {
            for v in [grid.x, grid.y, grid.z, block.x, block.y, block.z] {
                p.u32(v);
            }
            p.u64(shmem as u64).u64(stream as u64);
        });
    }
    r
}

unsafe fn launch_kernel(
    h: Hook,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: usize,
    stream: Handle,
) -> HipError {
    let r = real!(h, fn(*const c_void, Dim3, Dim3, *mut Ptr, usize, Handle))(
        f, grid, block, args, shmem, stream,
    );
    let l = Launch {
        f: f as u64,
        grid: [grid.x, grid.y, grid.z],
        block: [block.x, block.y, block.z],
        shared_mem: shmem as u32,
        stream,
        cooperative: false,
    };
    record_launch(h, r, &l, args, std::ptr::null_mut());
    r
}

unsafe fn launch_cooperative(
    h: Hook,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: c_uint,
    stream: Handle,
) -> HipError {
    let r = real!(h, fn(*const c_void, Dim3, Dim3, *mut Ptr, c_uint, Handle))(
        f, grid, block, args, shmem, stream,
    );
    let l = Launch {
        f: f as u64,
        grid: [grid.x, grid.y, grid.z],
        block: [block.x, block.y, block.z],
        shared_mem: shmem,
        stream,
        cooperative: true,
    };
    record_launch(h, r, &l, args, std::ptr::null_mut());
    r
}

unsafe fn ext_launch_kernel(
    h: Hook,
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut Ptr,
    shmem: usize,
    stream: Handle,
    start: Handle,
    stop: Handle,
    flags: c_int,
) -> HipError {
    let r = real!(
        h,
        fn(*const c_void, Dim3, Dim3, *mut Ptr, usize, Handle, Handle, Handle, c_int)
    )(f, grid, block, args, shmem, stream, start, stop, flags);
    let l = Launch {
        f: f as u64,
        grid: [grid.x, grid.y, grid.z],
        block: [block.x, block.y, block.z],
        shared_mem: shmem as u32,
        stream,
        cooperative: false,
    };
    record_launch(h, r, &l, args, std::ptr::null_mut());
    r
}

unsafe fn module_launch_kernel(
    h: Hook,
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
) -> HipError {
    let r = real!(
        h,
        fn(
            Handle,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            Handle,
            *mut Ptr,
            *mut Ptr,
        )
    )(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
    let l = Launch {
        f: f as u64,
        grid: [gx, gy, gz],
        block: [bx, by, bz],
        shared_mem: shmem,
        stream,
        cooperative: false,
    };
    record_launch(h, r, &l, params, extra);
    r
}

// ---------------------------------------------------------------------------------------------
// Streams, events, graphs.

unsafe fn stream_create(h: Hook, s: *mut Handle) -> HipError {
    let r = real!(h, fn(*mut Handle))(s);
    rec(h, r, |_, p| {
        p.u64(out_ptr(s)).u32(0);
    });
    r
}

unsafe fn stream_create_with_flags(h: Hook, s: *mut Handle, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Handle, c_uint))(s, flags);
    rec(h, r, |_, p| {
        p.u64(out_ptr(s)).u32(flags);
    });
    r
}

unsafe fn stream_create_with_priority(
    h: Hook,
    s: *mut Handle,
    flags: c_uint,
    prio: c_int,
) -> HipError {
    let r = real!(h, fn(*mut Handle, c_uint, c_int))(s, flags, prio);
    rec(h, r, |_, p| {
        p.u64(out_ptr(s)).u32(flags).i32(prio);
    });
    r
}

unsafe fn stream_only(h: Hook, s: Handle) -> HipError {
    let r = real!(h, fn(Handle))(s);
    rec(h, r, |_, p| {
        p.u64(s as u64);
    });
    r
}

unsafe fn stream_synchronize(h: Hook, s: Handle) -> HipError {
    let r = real!(h, fn(Handle))(s);
    rec(h, r, |_, p| {
        p.u64(s as u64);
    });
    recorder::flush_soft();
    r
}

unsafe fn stream_wait_event(h: Hook, s: Handle, e: Handle, flags: c_uint) -> HipError {
    let r = real!(h, fn(Handle, Handle, c_uint))(s, e, flags);
    rec(h, r, |_, p| {
        p.u64(s as u64).u64(e as u64).u32(flags);
    });
    r
}

unsafe fn event_create(h: Hook, e: *mut Handle) -> HipError {
    let r = real!(h, fn(*mut Handle))(e);
    rec(h, r, |_, p| {
        p.u64(out_ptr(e)).u32(0);
    });
    r
}

unsafe fn event_create_with_flags(h: Hook, e: *mut Handle, flags: c_uint) -> HipError {
    let r = real!(h, fn(*mut Handle, c_uint))(e, flags);
    rec(h, r, |_, p| {
        p.u64(out_ptr(e)).u32(flags);
    });
    r
}

unsafe fn event_record(h: Hook, e: Handle, s: Handle) -> HipError {
    let r = real!(h, fn(Handle, Handle))(e, s);
    rec(h, r, |_, p| {
        p.u64(e as u64).u64(s as u64);
    });
    r
}

unsafe fn event_only(h: Hook, e: Handle) -> HipError {
    let r = real!(h, fn(Handle))(e);
    rec(h, r, |_, p| {
        p.u64(e as u64);
    });
    r
}

const GRAPHS_UNREPLAYED: &str = "HIP graphs and stream capture are recorded but not replayed yet";

unsafe fn stream_begin_capture(h: Hook, s: Handle, mode: c_int) -> HipError {
    let r = real!(h, fn(Handle, c_int))(s, mode);
    on_record(|| {
        if r == 0 {
            super::set_capturing(s as u64, true);
        }
        emit(h, r, |rc, p| {
            note_unreplayable(rc, "hipStreamBeginCapture", GRAPHS_UNREPLAYED);
            p.u64(s as u64).i32(mode);
        });
    });
    r
}

unsafe fn stream_end_capture(h: Hook, s: Handle, g: *mut Handle) -> HipError {
    let r = real!(h, fn(Handle, *mut Handle))(s, g);
    on_record(|| {
        super::set_capturing(s as u64, false);
        emit(h, r, |_, p| {
            p.u64(s as u64).u64(out_ptr(g));
        });
    });
    r
}

unsafe fn graph_launch(h: Hook, exec: Handle, s: Handle) -> HipError {
    let r = real!(h, fn(Handle, Handle))(exec, s);
    rec(h, r, |rc, p| {
        note_unreplayable(rc, "hipGraphLaunch", GRAPHS_UNREPLAYED);
        p.u64(exec as u64).u64(s as u64);
    });
    r
}

unsafe fn launch_host_func(h: Hook, s: Handle, func: Ptr, data: Ptr) -> HipError {
    let r = real!(h, fn(Handle, Ptr, Ptr))(s, func, data);
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "hipLaunchHostFunc",
            "host callbacks run application code that is not in the archive",
        );
        p.u64(s as u64).u64(func as u64).u64(data as u64);
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_has_a_field_list_and_unique_names() {
        let s = schema();
        assert_eq!(s.api, "hip");
        for (i, imp) in IMPLS.iter().enumerate() {
            let (_, list) = fields(imp);
            let call = &s.calls[i];
            assert_eq!(
                call.fields.len(),
                list.len() + has_result(imp) as usize,
                "{}",
                call.name
            );
            if *imp != "device_synchronize" && *imp != "device_reset" {
                assert!(!list.is_empty(), "{} has no fields", call.name);
            }
        }
        let mut names: Vec<_> = NAMES.iter().collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), NAMES.len());
        assert_eq!(find(b"hipMalloc"), Some(Hook::hipMalloc as usize));
        assert_eq!(find(b"cuMemAlloc"), None);
    }

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
