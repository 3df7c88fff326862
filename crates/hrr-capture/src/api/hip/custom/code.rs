//! Code: fat binary, kernel stub and variable registrations (remembered, written on first use),
//! module loads (images stored as code objects, argument layouts read from them), function and
//! global look-ups.

use super::Call;
use crate::api::hip::calls::args;
use std::ffi::{c_char, c_void};

use hrr_archive::{CodeKind, ObjectId};
use hrr_calls::hip::ffi::{Handle, HipError, Ptr};
use hrr_calls::shapes::{Module, ModuleGetFunction, ModuleLoad};

use super::{call_tracking, rec};
use crate::api::hip::calls::Export;
use crate::api::hip::{code_object, state, API};
use crate::hook::args::{cstr, file_at, out_addr};
use crate::recorder;

pub unsafe fn register_fat_binary(
    _h: Export,
    a: args::RegisterFatBinary,
    call: impl FnOnce() -> *mut Ptr,
) -> *mut Ptr {
    let args::RegisterFatBinary { data } = a;
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

pub unsafe fn register_function(_h: Export, a: args::RegisterFunction, call: impl FnOnce()) {
    call();
    let name = registered_name(a.device_name, a.device_function);
    state::note_function(a.modules as u64, a.host_function as u64, &name);
}

pub unsafe fn register_var(_h: Export, a: args::RegisterVar, call: impl FnOnce()) {
    call();
    let name = registered_name(a.device_var, a.host_var);
    state::note_variable(a.modules as u64, a.var as u64, &name);
}

pub unsafe fn unregister_fat_binary(_h: Export, a: args::UnregisterFatBinary, call: impl FnOnce()) {
    let args::UnregisterFatBinary { modules } = a;
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

pub unsafe fn module_load(h: Export, a: args::ModuleLoad, call: impl Call) -> HipError {
    let args::ModuleLoad { m, fname } = a;
    let file = file_at(fname);
    let code = file
        .as_deref()
        .and_then(|b| recorder::put_code(&API, b, CodeKind::Hsaco));
    let r = call();
    loaded(h, r, m, code, file.as_deref());
    r
}

pub unsafe fn module_load_data(h: Export, a: args::ModuleLoadData, call: impl Call) -> HipError {
    let args::ModuleLoadData { m, image } = a;
    let (code, bytes) = store_image(image);
    let r = call();
    loaded(h, r, m, code, bytes);
    r
}

pub unsafe fn module_load_data_ex(
    h: Export,
    a: args::ModuleLoadDataEx,
    call: impl Call,
) -> HipError {
    let args::ModuleLoadDataEx { m, image, .. } = a;
    module_load_data(h, args::ModuleLoadData { m, image }, call)
}

pub unsafe fn module_unload(h: Export, a: args::ModuleUnload, call: impl Call) -> HipError {
    let args::ModuleUnload { m } = a;
    call_tracking(
        h,
        call,
        || state::forget_module(m as u64),
        |_| Module { module: m as u64 },
    )
}

pub unsafe fn module_get_function(h: Export, a: args::ModuleGetFunction, r: HipError) {
    let args::ModuleGetFunction { f, m, name } = a;
    let (function, name) = (out_addr(f), cstr(name));
    if r == 0 {
        state::note_module_function(function, m as u64, &name);
    }
    rec(h, r, |_| ModuleGetFunction {
        function,
        module: m as u64,
        name,
    });
}
