//! Device, runtime and driver facts for the manifest of a HIP capture, asked of the real
//! runtime when the archive opens. Hostname-free; facts the runtime will not give are left out.
//!
//! The architecture name (`gcnArchName`, e.g. `gfx90a:sramecc+:xnack-`) sits at different
//! offsets of `hipDeviceProp_t` in ROCm 5 and 6; it is found in the filled struct as the string
//! that starts with `gfx`, so no layout is assumed beyond `name` coming first.

use std::ffi::{c_int, c_void, CStr};

use hrr_calls::hip::find_arch_name;
use serde_json::json;

use super::loader::runtime_symbol;

unsafe fn sym<T>(name: &CStr) -> Option<T> {
    let p = runtime_symbol(name);
    (!p.is_null()).then(|| std::mem::transmute_copy::<*mut c_void, T>(&p))
}

/// Bytes given to `hipGetDeviceProperties*` (larger than any layout so far: 792 in ROCm 5,
/// about 1.5 KiB in ROCm 6).
const PROPS_BYTES: usize = 8192;

/// Path of the loaded runtime library.
pub fn runtime_path() -> Option<String> {
    let p = runtime_symbol(c"hipGetDeviceCount");
    if p.is_null() {
        return None;
    }
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads.
    if unsafe { libc::dladdr(p, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    Some(
        std::fs::canonicalize(&path)
            .map(|c| c.display().to_string())
            .unwrap_or(path),
    )
}

/// Collect what the runtime will tell.
pub fn collect() -> serde_json::Value {
    let mut meta = serde_json::Map::new();
    meta.insert("schema_version".into(), json!(1));
    meta.insert(
        "recorder".into(),
        json!(format!("hrr-capture {}", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(p) = runtime_path() {
        meta.insert("runtime".into(), json!(p));
    }
    type IntOut = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: each symbol is transmuted to its documented runtime signature.
    unsafe {
        for (key, name) in [
            ("runtime_version", c"hipRuntimeGetVersion"),
            ("driver_version", c"hipDriverGetVersion"),
        ] {
            let mut v: c_int = 0;
            if sym::<IntOut>(name).is_some_and(|f| f(&mut v) == 0) {
                meta.insert(key.into(), json!(v));
            }
        }
        let mut count: c_int = 0;
        if sym::<IntOut>(c"hipGetDeviceCount").is_none_or(|f| f(&mut count) != 0) {
            count = 0;
        } else {
            meta.insert("device_count".into(), json!(count));
        }
        let props =
            sym::<unsafe extern "C" fn(*mut u8, c_int) -> c_int>(c"hipGetDevicePropertiesR0600")
                .or_else(|| sym(c"hipGetDeviceProperties"));
        let total = sym::<unsafe extern "C" fn(*mut usize, c_int) -> c_int>(c"hipDeviceTotalMem");
        let name = sym::<crate::api::DeviceNameFn>(c"hipDeviceGetName");
        let mut devices = Vec::new();
        for ordinal in 0..count.clamp(0, 64) {
            let mut d = crate::api::device_facts(ordinal, ordinal, name);
            let mut p = vec![0u8; PROPS_BYTES];
            if props.is_some_and(|f| f(p.as_mut_ptr(), ordinal) == 0) {
                if !d.contains_key("name") {
                    let n = CStr::from_bytes_until_nul(&p[..256])
                        .map(|c| c.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    d.insert("name".into(), json!(n));
                }
                if let Some(arch) = find_arch_name(&p) {
                    d.insert("gcn_arch_name".into(), json!(arch));
                }
            }
            let mut bytes = 0usize;
            if total.is_some_and(|f| f(&mut bytes, ordinal) == 0) {
                d.insert("total_global_mem".into(), json!(bytes));
            }
            devices.push(serde_json::Value::Object(d));
        }
        meta.insert("devices".into(), json!(devices));
    }
    serde_json::Value::Object(meta)
}
