//! The hooks: one exported wrapper per recorded driver entry point (every ABI variant: `_v2`,
//! `_ptsz`, `_ptds`), each forwarding to the real driver and recording the call, plus the
//! schema that names every call and field. A call's record type is its index in the table + 1.
//!
//! Recording rules (see FORMAT.md and the README): H2D sources are stored as blobs before the
//! call; D2H results after it (async copies: after synchronising the stream); code images as
//! code objects; launches carry the packed argument buffer sized by the driver's parameter info.

#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ushort, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use hrr_archive::schema::{CallClass, CallDef, FieldDef, FieldType, PayloadBuilder, Schema};
use hrr_archive::CodeKind;

use crate::ffi::{self, CUresult, Handle, CUDA_ERROR_NOT_FOUND};
use crate::recorder::{self, guarded, note_unreplayable, record, KernelInfo, Recorder};

/// Table of hooked entry points, generated with their exported wrappers.
macro_rules! hooks {
    ($( $name:ident => $imp:ident ( $($arg:ident : $ty:ty),* ); )*) => {
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
        /// Real driver entry points, resolved lazily.
        pub static REAL: [AtomicPtr<c_void>; COUNT] = [const { AtomicPtr::new(std::ptr::null_mut()) }; COUNT];

        /// Our wrappers' addresses, by hook index.
        pub fn wrapper(i: usize) -> *mut c_void {
            const W: &[*const ()] = &[ $( $name as *const () ),* ];
            W[i] as *mut c_void
        }

        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
                const ORDERED: bool = ordered_impl(stringify!($imp));
                if ORDERED {
                    recorder::ordered(|| $imp(Hook::$name, $($arg),*))
                } else {
                    $imp(Hook::$name, $($arg),*)
                }
            }
        )*
    };
}

hooks! {
    cuInit => init(flags: c_uint);
    cuDriverGetVersion => driver_get_version(v: *mut c_int);
    cuDeviceGet => device_get(dev: *mut c_int, ordinal: c_int);
    cuDeviceGetCount => device_get_count(count: *mut c_int);
    cuDeviceGetName => device_get_name(name: *mut c_char, len: c_int, dev: c_int);
    cuDeviceTotalMem_v2 => device_total_mem(bytes: *mut usize, dev: c_int);
    cuDeviceGetAttribute => device_get_attribute(v: *mut c_int, attrib: c_int, dev: c_int);
    cuDeviceGetUuid => device_get_uuid(uuid: *mut u8, dev: c_int);
    cuDeviceGetUuid_v2 => device_get_uuid(uuid: *mut u8, dev: c_int);
    cuDevicePrimaryCtxRetain => primary_ctx_retain(ctx: *mut Handle, dev: c_int);
    cuDevicePrimaryCtxRelease_v2 => device_only(dev: c_int);
    cuDevicePrimaryCtxReset_v2 => device_only(dev: c_int);
    cuCtxCreate_v2 => ctx_create(ctx: *mut Handle, flags: c_uint, dev: c_int);
    cuCtxDestroy_v2 => ctx_only(ctx: Handle);
    cuCtxSetCurrent => ctx_only(ctx: Handle);
    cuCtxPushCurrent_v2 => ctx_only(ctx: Handle);
    cuCtxPopCurrent_v2 => ctx_pop(ctx: *mut Handle);
    cuCtxSynchronize => ctx_synchronize();
    cuCtxSynchronize_v2 => ctx_synchronize_v2(ctx: Handle);
    cuMemAlloc_v2 => mem_alloc(dptr: *mut u64, size: usize);
    cuMemAllocPitch_v2 => mem_alloc_pitch(dptr: *mut u64, pitch: *mut usize, width: usize, height: usize, elem: c_uint);
    cuMemAllocManaged => mem_alloc_managed(dptr: *mut u64, size: usize, flags: c_uint);
    cuMemFree_v2 => mem_free(dptr: u64);
    cuMemAllocAsync => mem_alloc_async(dptr: *mut u64, size: usize, stream: Handle);
    cuMemAllocAsync_ptsz => mem_alloc_async(dptr: *mut u64, size: usize, stream: Handle);
    cuMemAllocFromPoolAsync => mem_alloc_from_pool_async(dptr: *mut u64, size: usize, pool: Handle, stream: Handle);
    cuMemAllocFromPoolAsync_ptsz => mem_alloc_from_pool_async(dptr: *mut u64, size: usize, pool: Handle, stream: Handle);
    cuMemFreeAsync => mem_free_async(dptr: u64, stream: Handle);
    cuMemFreeAsync_ptsz => mem_free_async(dptr: u64, stream: Handle);
    cuMemHostAlloc => mem_host_alloc(pp: *mut *mut c_void, size: usize, flags: c_uint);
    cuMemAllocHost_v2 => mem_alloc_host(pp: *mut *mut c_void, size: usize);
    cuMemFreeHost => host_ptr_only(p: *mut c_void);
    cuMemHostRegister_v2 => mem_host_register(p: *mut c_void, size: usize, flags: c_uint);
    cuMemHostUnregister => host_ptr_only(p: *mut c_void);
    cuMemHostGetDevicePointer_v2 => mem_host_get_device_pointer(dptr: *mut u64, p: *mut c_void, flags: c_uint);
    cuMemAddressReserve => mem_address_reserve(ptr: *mut u64, size: usize, align: usize, addr: u64, flags: u64);
    cuMemAddressFree => mem_range(ptr: u64, size: usize);
    cuMemCreate => mem_create(handle: *mut u64, size: usize, prop: *const u8, flags: u64);
    cuMemRelease => mem_release(handle: u64);
    cuMemMap => mem_map(ptr: u64, size: usize, offset: usize, handle: u64, flags: u64);
    cuMemUnmap => mem_range(ptr: u64, size: usize);
    cuMemSetAccess => mem_set_access(ptr: u64, size: usize, desc: *const u8, count: usize);
    cuMemcpyHtoD_v2 => memcpy_htod(dst: u64, src: *const c_void, n: usize);
    cuMemcpyHtoD_v2_ptds => memcpy_htod(dst: u64, src: *const c_void, n: usize);
    cuMemcpyHtoDAsync_v2 => memcpy_htod_async(dst: u64, src: *const c_void, n: usize, stream: Handle);
    cuMemcpyHtoDAsync_v2_ptsz => memcpy_htod_async(dst: u64, src: *const c_void, n: usize, stream: Handle);
    cuMemcpyDtoH_v2 => memcpy_dtoh(dst: *mut c_void, src: u64, n: usize);
    cuMemcpyDtoH_v2_ptds => memcpy_dtoh(dst: *mut c_void, src: u64, n: usize);
    cuMemcpyDtoHAsync_v2 => memcpy_dtoh_async(dst: *mut c_void, src: u64, n: usize, stream: Handle);
    cuMemcpyDtoHAsync_v2_ptsz => memcpy_dtoh_async(dst: *mut c_void, src: u64, n: usize, stream: Handle);
    cuMemcpyDtoD_v2 => memcpy_dtod(dst: u64, src: u64, n: usize);
    cuMemcpyDtoD_v2_ptds => memcpy_dtod(dst: u64, src: u64, n: usize);
    cuMemcpyDtoDAsync_v2 => memcpy_dtod_async(dst: u64, src: u64, n: usize, stream: Handle);
    cuMemcpyDtoDAsync_v2_ptsz => memcpy_dtod_async(dst: u64, src: u64, n: usize, stream: Handle);
    cuMemcpy => memcpy(dst: u64, src: u64, n: usize);
    cuMemcpy_ptds => memcpy(dst: u64, src: u64, n: usize);
    cuMemcpyAsync => memcpy_async(dst: u64, src: u64, n: usize, stream: Handle);
    cuMemcpyAsync_ptsz => memcpy_async(dst: u64, src: u64, n: usize, stream: Handle);
    cuMemsetD8_v2 => memset_d8(dst: u64, v: c_uchar, n: usize);
    cuMemsetD8_v2_ptds => memset_d8(dst: u64, v: c_uchar, n: usize);
    cuMemsetD16_v2 => memset_d16(dst: u64, v: c_ushort, n: usize);
    cuMemsetD32_v2 => memset_d32(dst: u64, v: c_uint, n: usize);
    cuMemsetD32_v2_ptds => memset_d32(dst: u64, v: c_uint, n: usize);
    cuMemsetD8Async => memset_d8_async(dst: u64, v: c_uchar, n: usize, stream: Handle);
    cuMemsetD8Async_ptsz => memset_d8_async(dst: u64, v: c_uchar, n: usize, stream: Handle);
    cuMemsetD16Async => memset_d16_async(dst: u64, v: c_ushort, n: usize, stream: Handle);
    cuMemsetD32Async => memset_d32_async(dst: u64, v: c_uint, n: usize, stream: Handle);
    cuMemsetD32Async_ptsz => memset_d32_async(dst: u64, v: c_uint, n: usize, stream: Handle);
    cuModuleLoad => module_load(m: *mut Handle, fname: *const c_char);
    cuModuleLoadData => module_load_data(m: *mut Handle, image: *const c_void);
    cuModuleLoadDataEx => module_load_data_ex(m: *mut Handle, image: *const c_void, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void);
    cuModuleLoadFatBinary => module_load_data(m: *mut Handle, image: *const c_void);
    cuModuleUnload => module_only(m: Handle);
    cuModuleGetFunction => module_get_function(f: *mut Handle, m: Handle, name: *const c_char);
    cuModuleGetGlobal_v2 => module_get_global(dptr: *mut u64, bytes: *mut usize, m: Handle, name: *const c_char);
    cuLibraryLoadData => library_load_data(lib: *mut Handle, code: *const c_void, jo: *mut c_int, jv: *mut *mut c_void, njo: c_uint, lo: *mut c_int, lv: *mut *mut c_void, nlo: c_uint);
    cuLibraryLoadFromFile => library_load_from_file(lib: *mut Handle, fname: *const c_char, jo: *mut c_int, jv: *mut *mut c_void, njo: c_uint, lo: *mut c_int, lv: *mut *mut c_void, nlo: c_uint);
    cuLibraryUnload => library_only(lib: Handle);
    cuLibraryGetKernel => library_get_kernel(k: *mut Handle, lib: Handle, name: *const c_char);
    cuLibraryGetModule => library_get_module(m: *mut Handle, lib: Handle);
    cuLibraryGetGlobal => library_get_global(dptr: *mut u64, bytes: *mut usize, lib: Handle, name: *const c_char);
    cuKernelGetFunction => kernel_get_function(f: *mut Handle, k: Handle);
    cuFuncSetAttribute => func_set_attribute(f: Handle, attrib: c_int, value: c_int);
    cuKernelSetAttribute => kernel_set_attribute(attrib: c_int, value: c_int, k: Handle, dev: c_int);
    cuFuncSetCacheConfig => func_set_cache_config(f: Handle, config: c_int);
    cuLaunchKernel => launch_kernel(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchKernel_ptsz => launch_kernel(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchKernelEx => launch_kernel_ex(config: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchKernelEx_ptsz => launch_kernel_ex(config: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    cuLaunchCooperativeKernel => launch_cooperative(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void);
    cuLaunchCooperativeKernel_ptsz => launch_cooperative(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void);
    cuStreamCreate => stream_create(s: *mut Handle, flags: c_uint);
    cuStreamCreateWithPriority => stream_create_with_priority(s: *mut Handle, flags: c_uint, prio: c_int);
    cuStreamDestroy_v2 => stream_only(s: Handle);
    cuStreamSynchronize => stream_synchronize(s: Handle);
    cuStreamSynchronize_ptsz => stream_synchronize(s: Handle);
    cuStreamWaitEvent => stream_wait_event(s: Handle, e: Handle, flags: c_uint);
    cuStreamWaitEvent_ptsz => stream_wait_event(s: Handle, e: Handle, flags: c_uint);
    cuEventCreate => event_create(e: *mut Handle, flags: c_uint);
    cuEventRecord => event_record(e: Handle, s: Handle);
    cuEventRecord_ptsz => event_record(e: Handle, s: Handle);
    cuEventRecordWithFlags => event_record_with_flags(e: Handle, s: Handle, flags: c_uint);
    cuEventRecordWithFlags_ptsz => event_record_with_flags(e: Handle, s: Handle, flags: c_uint);
    cuEventSynchronize => event_only(e: Handle);
    cuEventDestroy_v2 => event_destroy(e: Handle);
    cuStreamBeginCapture_v2 => stream_begin_capture(s: Handle, mode: c_int);
    cuStreamBeginCapture_v2_ptsz => stream_begin_capture(s: Handle, mode: c_int);
    cuStreamEndCapture => stream_end_capture(s: Handle, g: *mut Handle);
    cuStreamEndCapture_ptsz => stream_end_capture(s: Handle, g: *mut Handle);
    cuGraphInstantiateWithFlags => graph_instantiate(exec: *mut Handle, g: Handle, flags: u64);
    cuGraphLaunch => graph_launch(exec: Handle, s: Handle);
    cuGraphLaunch_ptsz => graph_launch(exec: Handle, s: Handle);
    cuGraphDestroy => graph_only(g: Handle);
    cuGraphExecDestroy => graph_only(g: Handle);
    cuLaunchHostFunc => launch_host_func(s: Handle, func: *mut c_void, data: *mut c_void);
    cuLaunchHostFunc_ptsz => launch_host_func(s: Handle, func: *mut c_void, data: *mut c_void);
    cuGraphInstantiate_v2 => graph_instantiate_v2(exec: *mut Handle, g: Handle, err_node: *mut Handle, log: *mut c_char, log_size: usize);
    cuGraphInstantiateWithParams => graph_instantiate_params(exec: *mut Handle, g: Handle, params: *mut GraphInstantiateParams);
    cuGraphInstantiateWithParams_ptsz => graph_instantiate_params(exec: *mut Handle, g: Handle, params: *mut GraphInstantiateParams);
}

/// Calls that create or destroy allocations and handles: run under [`recorder::ordered`] so
/// their recorded order is the driver's. (Blocking calls stay out: a wait must never hold it.)
const fn ordered_impl(imp: &str) -> bool {
    contains(ORDERED, imp)
}

/// CUDA implementations run under the ordering lock.
const ORDERED: &[&str] = &[
    "primary_ctx_retain",
    "ctx_create",
    "ctx_only",
    "mem_alloc",
    "mem_alloc_pitch",
    "mem_alloc_managed",
    "mem_free",
    "mem_alloc_async",
    "mem_alloc_from_pool_async",
    "mem_free_async",
    "mem_host_alloc",
    "mem_alloc_host",
    "host_ptr_only",
    "mem_address_reserve",
    "mem_range",
    "mem_create",
    "mem_release",
    "mem_map",
    "module_load",
    "module_load_data",
    "module_load_data_ex",
    "module_only",
    "module_get_function",
    "module_get_global",
    "library_load_data",
    "library_load_from_file",
    "library_only",
    "library_get_kernel",
    "library_get_module",
    "library_get_global",
    "kernel_get_function",
    "stream_create",
    "stream_create_with_priority",
    "stream_only",
    "event_create",
    "event_destroy",
    "graph_instantiate",
    "graph_instantiate_v2",
    "graph_instantiate_params",
    "graph_only",
];

/// Is `s` in `list`? (const, so the wrappers decide at compile time.)
pub const fn contains(list: &[&str], s: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if const_eq(list[i], s) {
            return true;
        }
        i += 1;
    }
    false
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The hook exporting `name`, if any (no allocation: used inside `dlsym`).
pub fn find(name: &[u8]) -> Option<usize> {
    NAMES.iter().position(|n| n.to_bytes() == name)
}

/// Record type of a hook.
pub fn call_id(h: Hook) -> u16 {
    h as u16 + 1
}

/// The real entry point of hook `i`, resolved from the driver on first use.
pub fn real_ptr(i: usize) -> *mut c_void {
    let p = REAL[i].load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    let p = ffi::driver_symbol(NAMES[i]);
    if !p.is_null() {
        REAL[i].store(p, Ordering::Release);
    }
    p
}

/// Set hook `i`'s real entry point to what the driver handed out (from `dlsym`/`cuGetProcAddress`).
pub fn set_real(i: usize, p: *mut c_void) {
    if !p.is_null() {
        REAL[i].store(p, Ordering::Release);
    }
}

macro_rules! real {
    ($h:expr, fn($($t:ty),* $(,)?)) => {{
        let p = real_ptr($h as usize);
        if p.is_null() {
            return CUDA_ERROR_NOT_FOUND;
        }
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($t),*) -> CUresult>(p)
    }};
}

fn is_per_thread(h: Hook) -> bool {
    let n = NAMES[h as usize].to_bytes();
    n.ends_with(b"_ptsz") || n.ends_with(b"_ptds")
}

/// Stream handle for a synchronisation the recorder adds itself (0 means the per-thread default
/// stream in `_ptsz` calls).
fn effective_stream(h: Hook, s: Handle) -> Handle {
    if s.is_null() && is_per_thread(h) {
        ffi::CU_STREAM_PER_THREAD as Handle
    } else {
        s
    }
}

unsafe fn out<T: Copy + Default>(p: *const T) -> T {
    if p.is_null() {
        T::default()
    } else {
        *p
    }
}

unsafe fn out_handle(p: *const Handle) -> u64 {
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

/// Record with the hook's id, inside the reentrancy guard.
fn rec(h: Hook, r: CUresult, fill: impl FnOnce(&mut Recorder, &mut PayloadBuilder)) {
    if recorder::active() {
        guarded(|| record(call_id(h), r, fill));
    }
}

// ---------------------------------------------------------------------------------------------
// Field lists: every hook's payload is `result` followed by these fields, in this order.

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
    const GLOBAL: &[(&str, FieldType)] = &[
        ("dptr", Ptr),
        ("bytes", U64),
        ("owner", Handle),
        ("name", Str),
    ];
    match imp {
        "init" => (CallClass::Other, &[("flags", U32)]),
        "driver_get_version" => (CallClass::Other, &[("version", I32)]),
        "device_get" => (CallClass::Other, &[("device", I32), ("ordinal", I32)]),
        "device_get_count" => (CallClass::Other, &[("count", I32)]),
        "device_get_name" => (CallClass::Other, &[("name", Str), ("device", I32)]),
        "device_total_mem" => (CallClass::Other, &[("bytes", U64), ("device", I32)]),
        "device_get_attribute" => (
            CallClass::Other,
            &[("value", I32), ("attrib", I32), ("device", I32)],
        ),
        "device_get_uuid" => (CallClass::Other, &[("uuid", Bytes), ("device", I32)]),
        "primary_ctx_retain" => (CallClass::Other, &[("ctx", Handle), ("device", I32)]),
        "device_only" => (CallClass::Other, &[("device", I32)]),
        "ctx_create" => (
            CallClass::Other,
            &[("ctx", Handle), ("flags", U32), ("device", I32)],
        ),
        "ctx_only" | "ctx_pop" => (CallClass::Other, &[("ctx", Handle)]),
        "ctx_synchronize" => (CallClass::Other, &[]),
        "ctx_synchronize_v2" => (CallClass::Other, &[("ctx", Handle)]),
        "mem_alloc" => (CallClass::Other, &[("dptr", Ptr), ("bytesize", U64)]),
        "mem_alloc_pitch" => (
            CallClass::Other,
            &[
                ("dptr", Ptr),
                ("pitch", U64),
                ("width", U64),
                ("height", U64),
                ("element_bytes", U32),
            ],
        ),
        "mem_alloc_managed" => (
            CallClass::Other,
            &[("dptr", Ptr), ("bytesize", U64), ("flags", U32)],
        ),
        "mem_free" => (CallClass::Other, &[("dptr", Ptr)]),
        "mem_alloc_async" => (
            CallClass::Other,
            &[("dptr", Ptr), ("bytesize", U64), ("stream", Handle)],
        ),
        "mem_alloc_from_pool_async" => (
            CallClass::Other,
            &[
                ("dptr", Ptr),
                ("bytesize", U64),
                ("pool", Handle),
                ("stream", Handle),
            ],
        ),
        "mem_free_async" => (CallClass::Other, &[("dptr", Ptr), ("stream", Handle)]),
        "mem_host_alloc" => (
            CallClass::Other,
            &[("host_ptr", Ptr), ("bytesize", U64), ("flags", U32)],
        ),
        "mem_alloc_host" => (CallClass::Other, &[("host_ptr", Ptr), ("bytesize", U64)]),
        "host_ptr_only" => (CallClass::Other, &[("host_ptr", Ptr)]),
        "mem_host_register" => (
            CallClass::Other,
            &[
                ("host_ptr", Ptr),
                ("bytesize", U64),
                ("flags", U32),
                ("contents", Blob),
            ],
        ),
        "mem_host_get_device_pointer" => (
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
        "memcpy" | "memcpy_async" => (
            CallClass::D2h,
            &[
                ("dst", Ptr),
                ("src", Ptr),
                ("bytes", U64),
                ("stream", Handle),
                ("direction", U8),
                ("h2d_blob", Blob),
                ("d2h_blob", Blob),
            ],
        ),
        "memset_d8" | "memset_d16" | "memset_d32" | "memset_d8_async" | "memset_d16_async"
        | "memset_d32_async" => (CallClass::Other, MEMSET),
        "module_load" | "module_load_data" | "module_load_data_ex" => {
            (CallClass::Other, &[("module", Handle), ("code", Code)])
        }
        "module_only" => (CallClass::Other, &[("module", Handle)]),
        "module_get_function" => (
            CallClass::Other,
            &[("function", Handle), ("module", Handle), ("name", Str)],
        ),
        "module_get_global" | "library_get_global" => (CallClass::Other, GLOBAL),
        "library_load_data" | "library_load_from_file" => {
            (CallClass::Other, &[("library", Handle), ("code", Code)])
        }
        "library_only" => (CallClass::Other, &[("library", Handle)]),
        "library_get_kernel" => (
            CallClass::Other,
            &[("kernel", Handle), ("library", Handle), ("name", Str)],
        ),
        "library_get_module" => (CallClass::Other, &[("module", Handle), ("library", Handle)]),
        "kernel_get_function" => (
            CallClass::Other,
            &[("function", Handle), ("kernel", Handle)],
        ),
        "func_set_attribute" => (
            CallClass::Other,
            &[("function", Handle), ("attrib", I32), ("value", I32)],
        ),
        "kernel_set_attribute" => (
            CallClass::Other,
            &[
                ("attrib", I32),
                ("value", I32),
                ("kernel", Handle),
                ("device", I32),
            ],
        ),
        "func_set_cache_config" => (CallClass::Other, &[("function", Handle), ("config", I32)]),
        "launch_kernel" | "launch_kernel_ex" | "launch_cooperative" => (CallClass::Launch, LAUNCH),
        "stream_create" => (CallClass::Other, &[("stream", Handle), ("flags", U32)]),
        "stream_create_with_priority" => (
            CallClass::Other,
            &[("stream", Handle), ("flags", U32), ("priority", I32)],
        ),
        "stream_only" | "stream_synchronize" => (CallClass::Other, &[("stream", Handle)]),
        "stream_wait_event" => (
            CallClass::Other,
            &[("stream", Handle), ("event", Handle), ("flags", U32)],
        ),
        "event_create" => (CallClass::Other, &[("event", Handle), ("flags", U32)]),
        "event_record" => (CallClass::Other, &[("event", Handle), ("stream", Handle)]),
        "event_record_with_flags" => (
            CallClass::Other,
            &[("event", Handle), ("stream", Handle), ("flags", U32)],
        ),
        "event_only" | "event_destroy" => (CallClass::Other, &[("event", Handle)]),
        "stream_begin_capture" => (CallClass::Other, &[("stream", Handle), ("mode", I32)]),
        "stream_end_capture" => (CallClass::Other, &[("stream", Handle), ("graph", Handle)]),
        "graph_instantiate" | "graph_instantiate_v2" => (
            CallClass::Other,
            &[("exec", Handle), ("graph", Handle), ("flags", U64)],
        ),
        "graph_instantiate_params" => (
            CallClass::Other,
            &[
                ("exec", Handle),
                ("graph", Handle),
                ("flags", U64),
                ("upload_stream", Handle),
            ],
        ),
        "graph_launch" => (
            CallClass::GraphLaunch,
            &[("exec", Handle), ("stream", Handle)],
        ),
        "graph_only" => (CallClass::Other, &[("graph", Handle)]),
        "launch_host_func" => (
            CallClass::Other,
            &[("stream", Handle), ("func", Ptr), ("data", Ptr)],
        ),
        _ => (CallClass::Other, &[]),
    }
}

/// The schema record describing every call this recorder writes.
pub fn schema() -> Schema {
    let calls = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (class, list) = fields(IMPLS[i]);
            let mut f = vec![FieldDef {
                name: "result".into(),
                ty: FieldType::Result,
            }];
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
    Schema::new("cuda-driver", 13000, calls)
}

// ---------------------------------------------------------------------------------------------
// Init, devices, contexts.

unsafe fn init(h: Hook, flags: c_uint) -> CUresult {
    let r = real!(h, fn(c_uint))(flags);
    rec(h, r, |_, p| {
        p.u32(flags);
    });
    if r == 0 {
        let _ = guarded(recorder::refresh_metadata);
    }
    r
}

unsafe fn driver_get_version(h: Hook, v: *mut c_int) -> CUresult {
    let r = real!(h, fn(*mut c_int))(v);
    rec(h, r, |_, p| {
        p.i32(out(v));
    });
    r
}

unsafe fn device_get(h: Hook, dev: *mut c_int, ordinal: c_int) -> CUresult {
    let r = real!(h, fn(*mut c_int, c_int))(dev, ordinal);
    rec(h, r, |_, p| {
        p.i32(out(dev)).i32(ordinal);
    });
    r
}

unsafe fn device_get_count(h: Hook, count: *mut c_int) -> CUresult {
    let r = real!(h, fn(*mut c_int))(count);
    rec(h, r, |_, p| {
        p.i32(out(count));
    });
    r
}

unsafe fn device_get_name(h: Hook, name: *mut c_char, len: c_int, dev: c_int) -> CUresult {
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

unsafe fn device_total_mem(h: Hook, bytes: *mut usize, dev: c_int) -> CUresult {
    let r = real!(h, fn(*mut usize, c_int))(bytes, dev);
    rec(h, r, |_, p| {
        p.u64(out(bytes) as u64).i32(dev);
    });
    r
}

unsafe fn device_get_attribute(h: Hook, v: *mut c_int, attrib: c_int, dev: c_int) -> CUresult {
    let r = real!(h, fn(*mut c_int, c_int, c_int))(v, attrib, dev);
    rec(h, r, |_, p| {
        p.i32(out(v)).i32(attrib).i32(dev);
    });
    r
}

unsafe fn device_get_uuid(h: Hook, uuid: *mut u8, dev: c_int) -> CUresult {
    let r = real!(h, fn(*mut u8, c_int))(uuid, dev);
    rec(h, r, |_, p| {
        let b = if r == 0 && !uuid.is_null() {
            std::slice::from_raw_parts(uuid, 16)
        } else {
            &[]
        };
        p.bytes(b).i32(dev);
    });
    r
}

unsafe fn primary_ctx_retain(h: Hook, ctx: *mut Handle, dev: c_int) -> CUresult {
    let r = real!(h, fn(*mut Handle, c_int))(ctx, dev);
    rec(h, r, |_, p| {
        p.u64(out_handle(ctx)).i32(dev);
    });
    r
}

unsafe fn device_only(h: Hook, dev: c_int) -> CUresult {
    let r = real!(h, fn(c_int))(dev);
    rec(h, r, |_, p| {
        p.i32(dev);
    });
    r
}

unsafe fn ctx_create(h: Hook, ctx: *mut Handle, flags: c_uint, dev: c_int) -> CUresult {
    let r = real!(h, fn(*mut Handle, c_uint, c_int))(ctx, flags, dev);
    rec(h, r, |_, p| {
        p.u64(out_handle(ctx)).u32(flags).i32(dev);
    });
    r
}

unsafe fn ctx_only(h: Hook, ctx: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(ctx);
    rec(h, r, |_, p| {
        p.u64(ctx as u64);
    });
    r
}

unsafe fn ctx_pop(h: Hook, ctx: *mut Handle) -> CUresult {
    let r = real!(h, fn(*mut Handle))(ctx);
    rec(h, r, |_, p| {
        p.u64(out_handle(ctx));
    });
    r
}

unsafe fn ctx_synchronize(h: Hook) -> CUresult {
    let r = real!(h, fn())();
    rec(h, r, |_, _| {});
    recorder::flush_soft();
    r
}

unsafe fn ctx_synchronize_v2(h: Hook, ctx: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(ctx);
    rec(h, r, |_, p| {
        p.u64(ctx as u64);
    });
    recorder::flush_soft();
    r
}

// ---------------------------------------------------------------------------------------------
// Memory.

unsafe fn mem_alloc(h: Hook, dptr: *mut u64, size: usize) -> CUresult {
    let r = real!(h, fn(*mut u64, usize))(dptr, size);
    rec(h, r, |_, p| {
        p.u64(out(dptr)).u64(size as u64);
    });
    r
}

unsafe fn mem_alloc_pitch(
    h: Hook,
    dptr: *mut u64,
    pitch: *mut usize,
    width: usize,
    height: usize,
    elem: c_uint,
) -> CUresult {
    let r =
        real!(h, fn(*mut u64, *mut usize, usize, usize, c_uint))(dptr, pitch, width, height, elem);
    rec(h, r, |_, p| {
        p.u64(out(dptr))
            .u64(out(pitch) as u64)
            .u64(width as u64)
            .u64(height as u64)
            .u32(elem);
    });
    r
}

unsafe fn mem_alloc_managed(h: Hook, dptr: *mut u64, size: usize, flags: c_uint) -> CUresult {
    let r = real!(h, fn(*mut u64, usize, c_uint))(dptr, size, flags);
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "cuMemAllocManaged",
            "managed memory is not placed; host-side accesses are not recorded",
        );
        p.u64(out(dptr)).u64(size as u64).u32(flags);
    });
    r
}

unsafe fn mem_free(h: Hook, dptr: u64) -> CUresult {
    let r = real!(h, fn(u64))(dptr);
    rec(h, r, |_, p| {
        p.u64(dptr);
    });
    r
}

unsafe fn mem_alloc_async(h: Hook, dptr: *mut u64, size: usize, stream: Handle) -> CUresult {
    let r = real!(h, fn(*mut u64, usize, Handle))(dptr, size, stream);
    rec(h, r, |_, p| {
        p.u64(out(dptr)).u64(size as u64).u64(stream as u64);
    });
    r
}

unsafe fn mem_alloc_from_pool_async(
    h: Hook,
    dptr: *mut u64,
    size: usize,
    pool: Handle,
    stream: Handle,
) -> CUresult {
    let r = real!(h, fn(*mut u64, usize, Handle, Handle))(dptr, size, pool, stream);
    rec(h, r, |_, p| {
        p.u64(out(dptr))
            .u64(size as u64)
            .u64(pool as u64)
            .u64(stream as u64);
    });
    r
}

unsafe fn mem_free_async(h: Hook, dptr: u64, stream: Handle) -> CUresult {
    let r = real!(h, fn(u64, Handle))(dptr, stream);
    rec(h, r, |_, p| {
        p.u64(dptr).u64(stream as u64);
    });
    r
}

unsafe fn mem_host_alloc(h: Hook, pp: *mut *mut c_void, size: usize, flags: c_uint) -> CUresult {
    let r = real!(h, fn(*mut *mut c_void, usize, c_uint))(pp, size, flags);
    rec(h, r, |_, p| {
        p.u64(out(pp as *const *mut c_void) as u64)
            .u64(size as u64)
            .u32(flags);
    });
    r
}

unsafe fn mem_alloc_host(h: Hook, pp: *mut *mut c_void, size: usize) -> CUresult {
    let r = real!(h, fn(*mut *mut c_void, usize))(pp, size);
    rec(h, r, |_, p| {
        p.u64(out(pp as *const *mut c_void) as u64).u64(size as u64);
    });
    r
}

unsafe fn host_ptr_only(h: Hook, ptr: *mut c_void) -> CUresult {
    let r = real!(h, fn(*mut c_void))(ptr);
    rec(h, r, |_, p| {
        p.u64(ptr as u64);
    });
    r
}

unsafe fn mem_host_register(h: Hook, ptr: *mut c_void, size: usize, flags: c_uint) -> CUresult {
    let blob = recorder::put_host_blob(ptr, size);
    let r = real!(h, fn(*mut c_void, usize, c_uint))(ptr, size, flags);
    rec(h, r, |_, p| {
        p.u64(ptr as u64).u64(size as u64).u32(flags).object(blob);
    });
    r
}

unsafe fn mem_host_get_device_pointer(
    h: Hook,
    dptr: *mut u64,
    ptr: *mut c_void,
    flags: c_uint,
) -> CUresult {
    let r = real!(h, fn(*mut u64, *mut c_void, c_uint))(dptr, ptr, flags);
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "cuMemHostGetDevicePointer_v2",
            "mapped host memory is read by kernels but its later host-side writes are not recorded",
        );
        p.u64(out(dptr)).u64(ptr as u64).u32(flags);
    });
    r
}

unsafe fn mem_address_reserve(
    h: Hook,
    ptr: *mut u64,
    size: usize,
    align: usize,
    addr: u64,
    flags: u64,
) -> CUresult {
    let r = real!(h, fn(*mut u64, usize, usize, u64, u64))(ptr, size, align, addr, flags);
    rec(h, r, |_, p| {
        p.u64(out(ptr))
            .u64(size as u64)
            .u64(align as u64)
            .u64(addr)
            .u64(flags);
    });
    r
}

unsafe fn mem_range(h: Hook, ptr: u64, size: usize) -> CUresult {
    let r = real!(h, fn(u64, usize))(ptr, size);
    rec(h, r, |_, p| {
        p.u64(ptr).u64(size as u64);
    });
    r
}

/// `sizeof(CUmemAllocationProp)`.
const MEM_PROP_BYTES: usize = 32;
/// `sizeof(CUmemAccessDesc)`.
const ACCESS_DESC_BYTES: usize = 12;

unsafe fn mem_create(
    h: Hook,
    handle: *mut u64,
    size: usize,
    prop: *const u8,
    flags: u64,
) -> CUresult {
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

unsafe fn mem_release(h: Hook, handle: u64) -> CUresult {
    let r = real!(h, fn(u64))(handle);
    rec(h, r, |_, p| {
        p.u64(handle);
    });
    r
}

unsafe fn mem_map(
    h: Hook,
    ptr: u64,
    size: usize,
    offset: usize,
    handle: u64,
    flags: u64,
) -> CUresult {
    let r = real!(h, fn(u64, usize, usize, u64, u64))(ptr, size, offset, handle, flags);
    rec(h, r, |_, p| {
        p.u64(ptr)
            .u64(size as u64)
            .u64(offset as u64)
            .u64(handle)
            .u64(flags);
    });
    r
}

unsafe fn mem_set_access(
    h: Hook,
    ptr: u64,
    size: usize,
    desc: *const u8,
    count: usize,
) -> CUresult {
    let r = real!(h, fn(u64, usize, *const u8, usize))(ptr, size, desc, count);
    rec(h, r, |_, p| {
        let n = count.min(64) * ACCESS_DESC_BYTES;
        let b = if desc.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(desc, n)
        };
        p.u64(ptr).u64(size as u64).bytes(b).u64(count as u64);
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Copies and memsets.

unsafe fn memcpy_htod(h: Hook, dst: u64, src: *const c_void, n: usize) -> CUresult {
    let blob = recorder::put_host_blob(src, n);
    let r = real!(h, fn(u64, *const c_void, usize))(dst, src, n);
    rec(h, r, |_, p| {
        p.u64(dst).u64(src as u64).u64(n as u64).u64(0).object(blob);
    });
    r
}

unsafe fn memcpy_htod_async(
    h: Hook,
    dst: u64,
    src: *const c_void,
    n: usize,
    stream: Handle,
) -> CUresult {
    let blob = recorder::put_host_blob(src, n);
    let r = real!(h, fn(u64, *const c_void, usize, Handle))(dst, src, n, stream);
    rec(h, r, |_, p| {
        p.u64(dst)
            .u64(src as u64)
            .u64(n as u64)
            .u64(stream as u64)
            .object(blob);
    });
    r
}

unsafe fn memcpy_dtoh(h: Hook, dst: *mut c_void, src: u64, n: usize) -> CUresult {
    let r = real!(h, fn(*mut c_void, u64, usize))(dst, src, n);
    let blob = if r == 0 {
        recorder::put_host_blob(dst, n)
    } else {
        None
    };
    rec(h, r, |_, p| {
        p.u64(dst as u64).u64(src).u64(n as u64).u64(0).object(blob);
    });
    recorder::flush_soft();
    r
}

/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`.
const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: CUresult = 900;

/// Is `stream` capturing into a graph (asked of the driver, so streams that joined a capture
/// through an event count too)?
unsafe fn stream_is_capturing(h: Hook, stream: Handle) -> bool {
    let p = ffi::driver_symbol(c"cuStreamIsCapturing");
    if p.is_null() {
        return false;
    }
    let f =
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Handle, *mut c_int) -> CUresult>(p);
    let mut status: c_int = 0;
    f(effective_stream(h, stream), &mut status) == 0 && status != 0
}

/// Wait for `stream` so an async D2H result can be read (the recorder's own call, unrecorded).
/// A capturing stream is never waited for (the driver would refuse and invalidate the capture):
/// a copy issued there only becomes a graph node, so there is no result to store yet.
unsafe fn sync_stream(h: Hook, stream: Handle) -> CUresult {
    if stream_is_capturing(h, stream) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    let i = find(b"cuStreamSynchronize").expect("hooked");
    let p = real_ptr(i);
    if p.is_null() {
        return CUDA_ERROR_NOT_FOUND;
    }
    let f = std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Handle) -> CUresult>(p);
    f(effective_stream(h, stream))
}

unsafe fn memcpy_dtoh_async(
    h: Hook,
    dst: *mut c_void,
    src: u64,
    n: usize,
    stream: Handle,
) -> CUresult {
    let r = real!(h, fn(*mut c_void, u64, usize, Handle))(dst, src, n, stream);
    let blob = if r == 0 && recorder::active() && sync_stream(h, stream) == 0 {
        recorder::put_host_blob(dst, n)
    } else {
        None
    };
    rec(h, r, |_, p| {
        p.u64(dst as u64)
            .u64(src)
            .u64(n as u64)
            .u64(stream as u64)
            .object(blob);
    });
    r
}

unsafe fn memcpy_dtod(h: Hook, dst: u64, src: u64, n: usize) -> CUresult {
    let r = real!(h, fn(u64, u64, usize))(dst, src, n);
    rec(h, r, |_, p| {
        p.u64(dst).u64(src).u64(n as u64).u64(0);
    });
    r
}

unsafe fn memcpy_dtod_async(h: Hook, dst: u64, src: u64, n: usize, stream: Handle) -> CUresult {
    let r = real!(h, fn(u64, u64, usize, Handle))(dst, src, n, stream);
    rec(h, r, |_, p| {
        p.u64(dst).u64(src).u64(n as u64).u64(stream as u64);
    });
    r
}

/// Directions of a generic (UVA) copy, as recorded in `direction`.
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

/// Is `ptr` device memory (per the driver's pointer attributes)?
unsafe fn is_device_ptr(ptr: u64) -> bool {
    let p = ffi::driver_symbol(c"cuPointerGetAttribute");
    if p.is_null() {
        return false;
    }
    let f = std::mem::transmute::<
        *mut c_void,
        unsafe extern "C" fn(*mut c_void, c_int, u64) -> CUresult,
    >(p);
    let mut ty: c_uint = 0;
    // CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2; CU_MEMORYTYPE_HOST = 1.
    f(&mut ty as *mut c_uint as *mut c_void, 2, ptr) == 0 && ty != 1
}

unsafe fn generic_copy(
    h: Hook,
    dst: u64,
    src: u64,
    n: usize,
    stream: Handle,
    async_: bool,
) -> CUresult {
    let (dd, sd) = if recorder::active() {
        (is_device_ptr(dst), is_device_ptr(src))
    } else {
        (true, true)
    };
    let dir = match (sd, dd) {
        (true, true) => direction::D2D,
        (false, true) => direction::H2D,
        (true, false) => direction::D2H,
        (false, false) => direction::H2H,
    };
    let h2d = if dir == direction::H2D {
        recorder::put_host_blob(src as *const c_void, n)
    } else {
        None
    };
    let r = if async_ {
        real!(h, fn(u64, u64, usize, Handle))(dst, src, n, stream)
    } else {
        real!(h, fn(u64, u64, usize))(dst, src, n)
    };
    let d2h = if r == 0
        && dir == direction::D2H
        && recorder::active()
        && (!async_ || sync_stream(h, stream) == 0)
    {
        recorder::put_host_blob(dst as *const c_void, n)
    } else {
        None
    };
    rec(h, r, |_, p| {
        p.u64(dst)
            .u64(src)
            .u64(n as u64)
            .u64(stream as u64)
            .u8(dir)
            .object(h2d)
            .object(d2h);
    });
    r
}

unsafe fn memcpy(h: Hook, dst: u64, src: u64, n: usize) -> CUresult {
    generic_copy(h, dst, src, n, std::ptr::null_mut(), false)
}

unsafe fn memcpy_async(h: Hook, dst: u64, src: u64, n: usize, stream: Handle) -> CUresult {
    generic_copy(h, dst, src, n, stream, true)
}

fn memset_fields(p: &mut PayloadBuilder, dst: u64, v: u32, elem: u32, n: usize, stream: Handle) {
    p.u64(dst).u32(v).u32(elem).u64(n as u64).u64(stream as u64);
}

unsafe fn memset_d8(h: Hook, dst: u64, v: c_uchar, n: usize) -> CUresult {
    let r = real!(h, fn(u64, c_uchar, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u32, 1, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d16(h: Hook, dst: u64, v: c_ushort, n: usize) -> CUresult {
    let r = real!(h, fn(u64, c_ushort, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v as u32, 2, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d32(h: Hook, dst: u64, v: c_uint, n: usize) -> CUresult {
    let r = real!(h, fn(u64, c_uint, usize))(dst, v, n);
    rec(h, r, |_, p| {
        memset_fields(p, dst, v, 4, n, std::ptr::null_mut())
    });
    r
}

unsafe fn memset_d8_async(h: Hook, dst: u64, v: c_uchar, n: usize, stream: Handle) -> CUresult {
    let r = real!(h, fn(u64, c_uchar, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v as u32, 1, n, stream));
    r
}

unsafe fn memset_d16_async(h: Hook, dst: u64, v: c_ushort, n: usize, stream: Handle) -> CUresult {
    let r = real!(h, fn(u64, c_ushort, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v as u32, 2, n, stream));
    r
}

unsafe fn memset_d32_async(h: Hook, dst: u64, v: c_uint, n: usize, stream: Handle) -> CUresult {
    let r = real!(h, fn(u64, c_uint, usize, Handle))(dst, v, n, stream);
    rec(h, r, |_, p| memset_fields(p, dst, v, 4, n, stream));
    r
}

// ---------------------------------------------------------------------------------------------
// Code: modules, libraries, functions, kernels.

/// Store the image at `image` as a code object.
unsafe fn store_image(image: *const c_void) -> Option<hrr_archive::ObjectId> {
    if !recorder::active() {
        return None;
    }
    let img = crate::image::identify(image as *const u8)?;
    recorder::put_code(std::slice::from_raw_parts(img.ptr, img.len), img.kind)
}

/// Store the image file at `fname` as a code object.
unsafe fn store_image_file(fname: *const c_char) -> Option<hrr_archive::ObjectId> {
    if !recorder::active() || fname.is_null() {
        return None;
    }
    let path = std::ffi::OsStr::from_encoded_bytes_unchecked(CStr::from_ptr(fname).to_bytes());
    let mut bytes = std::fs::read(path).ok()?;
    let kind = match bytes.get(..4) {
        Some([0x7f, b'E', b'L', b'F']) => CodeKind::Cubin,
        Some(m) if u32::from_le_bytes(m.try_into().ok()?) == crate::image::FATBIN_MAGIC => {
            CodeKind::Fatbin
        }
        _ => {
            if bytes.last() != Some(&0) {
                bytes.push(0);
            }
            CodeKind::Ptx
        }
    };
    recorder::put_code(&bytes, kind)
}

fn note_module(rc: &mut Recorder, handle: u64, code: Option<hrr_archive::ObjectId>) {
    rc.modules.insert(handle, code);
}

unsafe fn module_load(h: Hook, m: *mut Handle, fname: *const c_char) -> CUresult {
    let code = store_image_file(fname);
    let r = real!(h, fn(*mut Handle, *const c_char))(m, fname);
    rec(h, r, |rc, p| {
        note_module(rc, out_handle(m), code);
        p.u64(out_handle(m)).object(code);
    });
    r
}

unsafe fn module_load_data(h: Hook, m: *mut Handle, image: *const c_void) -> CUresult {
    let code = store_image(image);
    let r = real!(h, fn(*mut Handle, *const c_void))(m, image);
    rec(h, r, |rc, p| {
        note_module(rc, out_handle(m), code);
        p.u64(out_handle(m)).object(code);
    });
    r
}

unsafe fn module_load_data_ex(
    h: Hook,
    m: *mut Handle,
    image: *const c_void,
    n: c_uint,
    opts: *mut c_int,
    vals: *mut *mut c_void,
) -> CUresult {
    let code = store_image(image);
    let r = real!(
        h,
        fn(*mut Handle, *const c_void, c_uint, *mut c_int, *mut *mut c_void)
    )(m, image, n, opts, vals);
    rec(h, r, |rc, p| {
        note_module(rc, out_handle(m), code);
        p.u64(out_handle(m)).object(code);
    });
    r
}

unsafe fn module_only(h: Hook, m: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(m);
    rec(h, r, |_, p| {
        p.u64(m as u64);
    });
    r
}

unsafe fn module_get_function(h: Hook, f: *mut Handle, m: Handle, name: *const c_char) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle, *const c_char))(f, m, name);
    rec(h, r, |rc, p| {
        let name = cstr(name);
        if r == 0 {
            let code = rc.modules.get(&(m as u64)).copied().flatten();
            rc.define_kernel(
                out_handle(f),
                KernelInfo {
                    name: name.clone(),
                    code,
                    is_library_kernel: false,
                },
            );
        }
        p.u64(out_handle(f)).u64(m as u64).str(&name);
    });
    r
}

unsafe fn module_get_global(
    h: Hook,
    dptr: *mut u64,
    bytes: *mut usize,
    m: Handle,
    name: *const c_char,
) -> CUresult {
    let r = real!(h, fn(*mut u64, *mut usize, Handle, *const c_char))(dptr, bytes, m, name);
    rec(h, r, |_, p| {
        p.u64(out(dptr))
            .u64(out(bytes) as u64)
            .u64(m as u64)
            .str(&cstr(name));
    });
    r
}

unsafe fn library_load_data(
    h: Hook,
    lib: *mut Handle,
    code: *const c_void,
    jo: *mut c_int,
    jv: *mut *mut c_void,
    njo: c_uint,
    lo: *mut c_int,
    lv: *mut *mut c_void,
    nlo: c_uint,
) -> CUresult {
    let id = store_image(code);
    let r = real!(
        h,
        fn(
            *mut Handle,
            *const c_void,
            *mut c_int,
            *mut *mut c_void,
            c_uint,
            *mut c_int,
            *mut *mut c_void,
            c_uint,
        )
    )(lib, code, jo, jv, njo, lo, lv, nlo);
    rec(h, r, |rc, p| {
        note_module(rc, out_handle(lib), id);
        p.u64(out_handle(lib)).object(id);
    });
    r
}

unsafe fn library_load_from_file(
    h: Hook,
    lib: *mut Handle,
    fname: *const c_char,
    jo: *mut c_int,
    jv: *mut *mut c_void,
    njo: c_uint,
    lo: *mut c_int,
    lv: *mut *mut c_void,
    nlo: c_uint,
) -> CUresult {
    let id = store_image_file(fname);
    let r = real!(
        h,
        fn(
            *mut Handle,
            *const c_char,
            *mut c_int,
            *mut *mut c_void,
            c_uint,
            *mut c_int,
            *mut *mut c_void,
            c_uint,
        )
    )(lib, fname, jo, jv, njo, lo, lv, nlo);
    rec(h, r, |rc, p| {
        note_module(rc, out_handle(lib), id);
        p.u64(out_handle(lib)).object(id);
    });
    r
}

unsafe fn library_only(h: Hook, lib: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(lib);
    rec(h, r, |_, p| {
        p.u64(lib as u64);
    });
    r
}

unsafe fn library_get_kernel(
    h: Hook,
    k: *mut Handle,
    lib: Handle,
    name: *const c_char,
) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle, *const c_char))(k, lib, name);
    rec(h, r, |rc, p| {
        let name = cstr(name);
        if r == 0 {
            let code = rc.modules.get(&(lib as u64)).copied().flatten();
            rc.define_kernel(
                out_handle(k),
                KernelInfo {
                    name: name.clone(),
                    code,
                    is_library_kernel: true,
                },
            );
        }
        p.u64(out_handle(k)).u64(lib as u64).str(&name);
    });
    r
}

unsafe fn library_get_module(h: Hook, m: *mut Handle, lib: Handle) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle))(m, lib);
    rec(h, r, |rc, p| {
        let code = rc.modules.get(&(lib as u64)).copied().flatten();
        note_module(rc, out_handle(m), code);
        p.u64(out_handle(m)).u64(lib as u64);
    });
    r
}

unsafe fn library_get_global(
    h: Hook,
    dptr: *mut u64,
    bytes: *mut usize,
    lib: Handle,
    name: *const c_char,
) -> CUresult {
    let r = real!(h, fn(*mut u64, *mut usize, Handle, *const c_char))(dptr, bytes, lib, name);
    rec(h, r, |_, p| {
        p.u64(out(dptr))
            .u64(out(bytes) as u64)
            .u64(lib as u64)
            .str(&cstr(name));
    });
    r
}

unsafe fn kernel_get_function(h: Hook, f: *mut Handle, k: Handle) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle))(f, k);
    rec(h, r, |rc, p| {
        if let Some(info) = rc.kernels.get(&(k as u64)).cloned() {
            rc.define_kernel(
                out_handle(f),
                KernelInfo {
                    is_library_kernel: false,
                    ..info
                },
            );
        }
        p.u64(out_handle(f)).u64(k as u64);
    });
    r
}

unsafe fn func_set_attribute(h: Hook, f: Handle, attrib: c_int, value: c_int) -> CUresult {
    let r = real!(h, fn(Handle, c_int, c_int))(f, attrib, value);
    rec(h, r, |_, p| {
        p.u64(f as u64).i32(attrib).i32(value);
    });
    r
}

unsafe fn kernel_set_attribute(
    h: Hook,
    attrib: c_int,
    value: c_int,
    k: Handle,
    dev: c_int,
) -> CUresult {
    let r = real!(h, fn(c_int, c_int, Handle, c_int))(attrib, value, k, dev);
    rec(h, r, |_, p| {
        p.i32(attrib).i32(value).u64(k as u64).i32(dev);
    });
    r
}

unsafe fn func_set_cache_config(h: Hook, f: Handle, config: c_int) -> CUresult {
    let r = real!(h, fn(Handle, c_int))(f, config);
    rec(h, r, |_, p| {
        p.u64(f as u64).i32(config);
    });
    r
}

// ---------------------------------------------------------------------------------------------
// Launches.

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    stream: Handle,
    attrs: *const u8,
    num_attrs: c_uint,
}

/// `sizeof(CUlaunchAttribute)`: id, padding, 64-byte value union.
const LAUNCH_ATTR_BYTES: usize = 72;

struct Launch {
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    stream: Handle,
    attrs: Vec<u8>,
    cooperative: bool,
}

/// The packed argument buffer of a launch: from `extra` when given, else laid out from the
/// driver's parameter info.
unsafe fn pack_args(
    rc: &mut Recorder,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> (Vec<u8>, Vec<u64>, Vec<u64>, bool) {
    let layout = rc.param_layout(f as u64);
    let (offs, sizes): (Vec<u64>, Vec<u64>) = layout
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .map(|&(o, s)| (o as u64, s as u64))
        .unzip();
    if !extra.is_null() {
        let (mut buf, mut size) = (std::ptr::null::<u8>(), 0usize);
        let mut i = 0;
        while i < 64 {
            let key = *extra.add(i) as usize;
            match key {
                0 => break,
                1 => buf = *extra.add(i + 1) as *const u8,
                2 => size = *(*extra.add(i + 1) as *const usize),
                _ => {}
            }
            i += 2;
        }
        if !buf.is_null() {
            return (
                std::slice::from_raw_parts(buf, size).to_vec(),
                offs,
                sizes,
                true,
            );
        }
    }
    match layout {
        Some(l) if !params.is_null() || l.is_empty() => {
            let total = l
                .iter()
                .map(|&(o, s)| o as usize + s as usize)
                .max()
                .unwrap_or(0);
            let mut buf = vec![0u8; total];
            for (i, &(o, s)) in l.iter().enumerate() {
                let src = *params.add(i) as *const u8;
                if !src.is_null() {
                    std::ptr::copy_nonoverlapping(
                        src,
                        buf.as_mut_ptr().add(o as usize),
                        s as usize,
                    );
                }
            }
            (buf, offs, sizes, true)
        }
        _ => (Vec::new(), offs, sizes, false),
    }
}

/// Name of a function or kernel the recorder did not see looked up, asked of the driver.
unsafe fn driver_func_name(f: Handle) -> Option<String> {
    let p = ffi::driver_symbol(c"cuFuncGetName");
    if p.is_null() {
        return None;
    }
    let g = std::mem::transmute::<
        *mut c_void,
        unsafe extern "C" fn(*mut *const c_char, Handle) -> CUresult,
    >(p);
    let mut name = std::ptr::null();
    (g(&mut name, f) == 0 && !name.is_null()).then(|| cstr(name))
}

unsafe fn record_launch(
    h: Hook,
    r: CUresult,
    l: &Launch,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) {
    rec(h, r, |rc, p| {
        let (args, offs, sizes, known) = pack_args(rc, l.f, params, extra);
        let f = l.f as u64;
        // Not seen looked up (e.g. obtained before capture opened): ask the driver, once.
        rc.kernels.entry(f).or_insert_with(|| KernelInfo {
            name: driver_func_name(l.f).unwrap_or_default(),
            code: None,
            is_library_kernel: false,
        });
        if !known {
            let name = rc.kernels[&f].name.clone();
            note_unreplayable(
                rc,
                "cuLaunchKernel",
                &format!("argument layout unknown for kernel `{name}`"),
            );
        }
        let k = &rc.kernels[&f];
        let (name, code) = (k.name.as_str(), k.code);
        let in_capture = rc.capturing.contains(&(l.stream as u64));
        p.u64(f).str(name).object(code);
        for v in l.grid.iter().chain(&l.block) {
            p.u32(*v);
        }
        p.u32(l.shared_mem)
            .u64(l.stream as u64)
            .bytes(&args)
            .u64s(&offs)
            .u64s(&sizes)
            .bytes(&l.attrs);
        p.u8(l.cooperative as u8)
            .u8(in_capture as u8)
            .u8(known as u8);
    });
}

unsafe fn launch_kernel(
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
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
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
            *mut *mut c_void,
            *mut *mut c_void,
        )
    )(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
    let l = Launch {
        f,
        grid: [gx, gy, gz],
        block: [bx, by, bz],
        shared_mem: shmem,
        stream,
        attrs: Vec::new(),
        cooperative: false,
    };
    record_launch(h, r, &l, params, extra);
    r
}

unsafe fn launch_kernel_ex(
    h: Hook,
    config: *const LaunchConfig,
    f: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let r = real!(
        h,
        fn(*const LaunchConfig, Handle, *mut *mut c_void, *mut *mut c_void)
    )(config, f, params, extra);
    if !config.is_null() {
        let c = &*config;
        let attrs = if c.attrs.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(c.attrs, c.num_attrs.min(64) as usize * LAUNCH_ATTR_BYTES)
                .to_vec()
        };
        let l = Launch {
            f,
            grid: c.grid,
            block: c.block,
            shared_mem: c.shared_mem,
            stream: c.stream,
            attrs,
            cooperative: false,
        };
        record_launch(h, r, &l, params, extra);
    }
    r
}

unsafe fn launch_cooperative(
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
    params: *mut *mut c_void,
) -> CUresult {
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
            *mut *mut c_void,
        )
    )(f, gx, gy, gz, bx, by, bz, shmem, stream, params);
    let l = Launch {
        f,
        grid: [gx, gy, gz],
        block: [bx, by, bz],
        shared_mem: shmem,
        stream,
        attrs: Vec::new(),
        cooperative: true,
    };
    record_launch(h, r, &l, params, std::ptr::null_mut());
    r
}

// ---------------------------------------------------------------------------------------------
// Streams, events, graphs.

unsafe fn stream_create(h: Hook, s: *mut Handle, flags: c_uint) -> CUresult {
    let r = real!(h, fn(*mut Handle, c_uint))(s, flags);
    rec(h, r, |_, p| {
        p.u64(out_handle(s)).u32(flags);
    });
    r
}

unsafe fn stream_create_with_priority(
    h: Hook,
    s: *mut Handle,
    flags: c_uint,
    prio: c_int,
) -> CUresult {
    let r = real!(h, fn(*mut Handle, c_uint, c_int))(s, flags, prio);
    rec(h, r, |_, p| {
        p.u64(out_handle(s)).u32(flags).i32(prio);
    });
    r
}

unsafe fn stream_only(h: Hook, s: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(s);
    rec(h, r, |_, p| {
        p.u64(s as u64);
    });
    r
}

unsafe fn stream_synchronize(h: Hook, s: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(s);
    rec(h, r, |_, p| {
        p.u64(s as u64);
    });
    recorder::flush_soft();
    r
}

unsafe fn stream_wait_event(h: Hook, s: Handle, e: Handle, flags: c_uint) -> CUresult {
    let r = real!(h, fn(Handle, Handle, c_uint))(s, e, flags);
    rec(h, r, |_, p| {
        p.u64(s as u64).u64(e as u64).u32(flags);
    });
    r
}

unsafe fn event_create(h: Hook, e: *mut Handle, flags: c_uint) -> CUresult {
    let r = real!(h, fn(*mut Handle, c_uint))(e, flags);
    rec(h, r, |_, p| {
        p.u64(out_handle(e)).u32(flags);
    });
    r
}

unsafe fn event_record(h: Hook, e: Handle, s: Handle) -> CUresult {
    let r = real!(h, fn(Handle, Handle))(e, s);
    rec(h, r, |_, p| {
        p.u64(e as u64).u64(s as u64);
    });
    r
}

unsafe fn event_record_with_flags(h: Hook, e: Handle, s: Handle, flags: c_uint) -> CUresult {
    let r = real!(h, fn(Handle, Handle, c_uint))(e, s, flags);
    rec(h, r, |_, p| {
        p.u64(e as u64).u64(s as u64).u32(flags);
    });
    r
}

unsafe fn event_only(h: Hook, e: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(e);
    rec(h, r, |_, p| {
        p.u64(e as u64);
    });
    r
}

unsafe fn event_destroy(h: Hook, e: Handle) -> CUresult {
    event_only(h, e)
}

/// Why a graph that no recorded stream capture produced cannot be replayed.
const GRAPH_NOT_CAPTURED: &str = "graph was not built by a recorded stream capture (explicit graph construction, cuGraphAdd*Node, is not recorded); replay skips it";

/// Note an instantiation of a graph that replay cannot rebuild.
fn note_graph_source(rc: &mut Recorder, call: &str, g: Handle) {
    if !rc.captured_graphs.contains(&(g as u64)) {
        note_unreplayable(rc, call, GRAPH_NOT_CAPTURED);
    }
}

unsafe fn stream_begin_capture(h: Hook, s: Handle, mode: c_int) -> CUresult {
    let r = real!(h, fn(Handle, c_int))(s, mode);
    rec(h, r, |rc, p| {
        if r == 0 {
            rc.capturing.insert(s as u64);
        }
        p.u64(s as u64).i32(mode);
    });
    r
}

unsafe fn stream_end_capture(h: Hook, s: Handle, g: *mut Handle) -> CUresult {
    let r = real!(h, fn(Handle, *mut Handle))(s, g);
    rec(h, r, |rc, p| {
        rc.capturing.remove(&(s as u64));
        if r == 0 {
            rc.captured_graphs.insert(out_handle(g));
        }
        p.u64(s as u64).u64(out_handle(g));
    });
    r
}

unsafe fn graph_instantiate(h: Hook, exec: *mut Handle, g: Handle, flags: u64) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle, u64))(exec, g, flags);
    rec(h, r, |rc, p| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiateWithFlags", g);
        }
        p.u64(out_handle(exec)).u64(g as u64).u64(flags);
    });
    r
}

/// CUDA 11's `cuGraphInstantiate` (error node and log buffer; no flags).
unsafe fn graph_instantiate_v2(
    h: Hook,
    exec: *mut Handle,
    g: Handle,
    err_node: *mut Handle,
    log: *mut c_char,
    log_size: usize,
) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle, *mut Handle, *mut c_char, usize))(
        exec, g, err_node, log, log_size,
    );
    rec(h, r, |rc, p| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiate_v2", g);
        }
        p.u64(out_handle(exec)).u64(g as u64).u64(0);
    });
    r
}

/// `CUDA_GRAPH_INSTANTIATE_PARAMS`.
#[repr(C)]
pub struct GraphInstantiateParams {
    flags: u64,
    upload_stream: Handle,
    err_node_out: Handle,
    result_out: c_int,
}

unsafe fn graph_instantiate_params(
    h: Hook,
    exec: *mut Handle,
    g: Handle,
    params: *mut GraphInstantiateParams,
) -> CUresult {
    let r = real!(h, fn(*mut Handle, Handle, *mut GraphInstantiateParams))(exec, g, params);
    rec(h, r, |rc, p| {
        if r == 0 {
            note_graph_source(rc, "cuGraphInstantiateWithParams", g);
        }
        let (flags, upload) = if params.is_null() {
            (0, 0)
        } else {
            ((*params).flags, (*params).upload_stream as u64)
        };
        p.u64(out_handle(exec)).u64(g as u64).u64(flags).u64(upload);
    });
    r
}

unsafe fn graph_launch(h: Hook, exec: Handle, s: Handle) -> CUresult {
    let r = real!(h, fn(Handle, Handle))(exec, s);
    rec(h, r, |_, p| {
        p.u64(exec as u64).u64(s as u64);
    });
    r
}

unsafe fn graph_only(h: Hook, g: Handle) -> CUresult {
    let r = real!(h, fn(Handle))(g);
    rec(h, r, |_, p| {
        p.u64(g as u64);
    });
    r
}

unsafe fn launch_host_func(h: Hook, s: Handle, func: *mut c_void, data: *mut c_void) -> CUresult {
    let r = real!(h, fn(Handle, *mut c_void, *mut c_void))(s, func, data);
    rec(h, r, |rc, p| {
        note_unreplayable(
            rc,
            "cuLaunchHostFunc",
            "host callbacks run application code that is not in the archive",
        );
        p.u64(s as u64).u64(func as u64).u64(data as u64);
    });
    r
}
