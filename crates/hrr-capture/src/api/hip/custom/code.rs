//! Code: fat binary, kernel stub and variable registrations (remembered, written on first use),
//! module loads (images stored as code objects, argument layouts read from them), function and
//! global look-ups.

use std::ffi::{c_char, c_int, c_uint, c_void};

use hrr_archive::{CodeKind, ObjectId};
use hrr_calls::hip::ffi::{Dim3, Handle, HipError, Ptr};
use hrr_calls::shapes::{Module, ModuleGetFunction, ModuleLoad};

use super::{call_tracking, rec};
use crate::api::hip::calls::Export;
use crate::api::hip::{code_object, state, API};
use crate::hook::args::{cstr, file_at, out_addr};
use crate::recorder;

pub unsafe fn register_fat_binary(
    _h: Export,
    data: *const c_void,
    call: impl FnOnce() -> *mut Ptr,
) -> *mut Ptr {
    let handle = call();
    if !handle.is_null() {
        state::note_fat_binary(handle as u64, data);
    }
    handle
}

/// The name a kernel stub or variable is registered under: its device-side name, else (null)
/// its host-side one.
unsafe fn registered_name(device: *const c_char, host: *const c_char) -> String {
    if device.is_null() {
        cstr(host)
    } else {
        cstr(device)
    }
}

pub unsafe fn register_function(
    _h: Export,
    modules: *mut Ptr,
    host_function: *const c_void,
    device_function: *mut c_char,
    device_name: *const c_char,
    _thread_limit: c_uint,
    _tid: *mut c_void,
    _bid: *mut c_void,
    _block: *mut Dim3,
    _grid: *mut Dim3,
    _wsize: *mut c_int,
    call: impl FnOnce(),
) {
    call();
    let name = registered_name(device_name, device_function);
    state::note_function(modules as u64, host_function as u64, &name);
}

pub unsafe fn register_var(
    _h: Export,
    modules: *mut Ptr,
    var: *mut c_void,
    host_var: *mut c_char,
    device_var: *const c_char,
    _ext: c_int,
    _size: usize,
    _constant: c_int,
    _global: c_int,
    call: impl FnOnce(),
) {
    call();
    let name = registered_name(device_var, host_var);
    state::note_variable(modules as u64, var as u64, &name);
}

pub unsafe fn unregister_fat_binary(_h: Export, modules: *mut Ptr, call: impl FnOnce()) {
    state::forget_fat_binary(modules as u64);
    call();
}

/// Store the module image at `image` as a code object; returns it and the image's bytes.
unsafe fn store_image(image: *const c_void) -> (Option<ObjectId>, Option<&'static [u8]>) {
    let Some((ptr, len)) = code_object::identify(image as *const u8) else {
        return (None, None);
    };
    let bytes = std::slice::from_raw_parts(ptr, len);
    (
        recorder::put_code(&API, bytes, CodeKind::Hsaco),
        Some(bytes),
    )
}

/// Record a module load of `code` (read from `bytes`) that produced `*m`.
unsafe fn loaded(
    h: Export,
    r: HipError,
    m: *mut Handle,
    code: Option<ObjectId>,
    bytes: Option<&[u8]>,
) {
    let module = out_addr(m);
    if r == 0 {
        state::note_module(module, code, bytes);
    }
    rec(h, r, |_| ModuleLoad { module, code });
}

pub unsafe fn module_load(
    h: Export,
    m: *mut Handle,
    fname: *const c_char,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let file = file_at(fname);
    let code = file
        .as_deref()
        .and_then(|b| recorder::put_code(&API, b, CodeKind::Hsaco));
    let r = call();
    loaded(h, r, m, code, file.as_deref());
    r
}

pub unsafe fn module_load_data(
    h: Export,
    m: *mut Handle,
    image: *const c_void,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let (code, bytes) = store_image(image);
    let r = call();
    loaded(h, r, m, code, bytes);
    r
}

pub unsafe fn module_load_data_ex(
    h: Export,
    m: *mut Handle,
    image: *const c_void,
    _n: c_uint,
    _opts: *mut c_int,
    _vals: *mut Ptr,
    call: impl FnOnce() -> HipError,
) -> HipError {
    module_load_data(h, m, image, call)
}

pub unsafe fn module_unload(h: Export, m: Handle, call: impl FnOnce() -> HipError) -> HipError {
    call_tracking(
        h,
        call,
        || state::forget_module(m as u64),
        |_| Module { module: m as u64 },
    )
}

pub unsafe fn module_get_function(
    h: Export,
    f: *mut Handle,
    m: Handle,
    name: *const c_char,
    call: impl FnOnce() -> HipError,
) -> HipError {
    let r = call();
    let (function, name) = (out_addr(f), cstr(name));
    if r == 0 {
        state::note_module_function(function, m as u64, &name);
    }
    rec(h, r, |_| ModuleGetFunction {
        function,
        module: m as u64,
        name,
    });
    r
}
