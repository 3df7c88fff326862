//! Device, driver and runtime facts for the manifest, asked of the real driver right after it
//! initialises. Hostname-free.

use std::ffi::{c_int, c_void, CStr};

use serde_json::json;

use super::loader::driver_symbol;

unsafe fn sym<T>(name: &CStr) -> Option<T> {
    let p = driver_symbol(name);
    (!p.is_null()).then(|| std::mem::transmute_copy::<*mut c_void, T>(&p))
}

/// Collect what the driver will tell; missing facts are left out.
pub fn collect() -> serde_json::Value {
    // SAFETY: each symbol is transmuted to its documented driver signature.
    unsafe {
        let mut meta = serde_json::Map::new();
        meta.insert("schema_version".into(), json!(1));
        meta.insert(
            "recorder".into(),
            json!(format!("hrr-capture {}", env!("CARGO_PKG_VERSION"))),
        );
        let mut version: c_int = 0;
        if let Some(f) = sym::<unsafe extern "C" fn(*mut c_int) -> c_int>(c"cuDriverGetVersion") {
            if f(&mut version) == 0 {
                meta.insert("driver_version".into(), json!(version));
            }
        }
        let mut count: c_int = 0;
        let get_count = sym::<unsafe extern "C" fn(*mut c_int) -> c_int>(c"cuDeviceGetCount");
        if get_count.is_some_and(|f| f(&mut count) == 0) {
            meta.insert("device_count".into(), json!(count));
        }
        let get = sym::<unsafe extern "C" fn(*mut c_int, c_int) -> c_int>(c"cuDeviceGet");
        let name = sym::<crate::api::DeviceNameFn>(c"cuDeviceGetName");
        let attr =
            sym::<unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int>(c"cuDeviceGetAttribute");
        let mem = sym::<unsafe extern "C" fn(*mut usize, c_int) -> c_int>(c"cuDeviceTotalMem_v2");
        let uuid = sym::<unsafe extern "C" fn(*mut [u8; 16], c_int) -> c_int>(c"cuDeviceGetUuid");
        let mut devices = Vec::new();
        for ordinal in 0..count.clamp(0, 64) {
            let mut dev: c_int = 0;
            if get.is_none_or(|f| f(&mut dev, ordinal) != 0) {
                continue;
            }
            let mut d = crate::api::device_facts(ordinal, dev, name);
            let (mut major, mut minor) = (0, 0);
            if let Some(f) = attr {
                if f(&mut major, 75, dev) == 0 && f(&mut minor, 76, dev) == 0 {
                    d.insert(
                        "compute_capability".into(),
                        json!(format!("{major}.{minor}")),
                    );
                }
                let mut sms = 0;
                if f(&mut sms, 16, dev) == 0 {
                    d.insert("multi_processor_count".into(), json!(sms));
                }
            }
            let mut bytes = 0usize;
            if mem.is_some_and(|f| f(&mut bytes, dev) == 0) {
                d.insert("total_global_mem".into(), json!(bytes));
            }
            let mut u = [0u8; 16];
            if uuid.is_some_and(|f| f(&mut u, dev) == 0) {
                d.insert("uuid".into(), json!(hrr_archive::schema::hex(&u)));
            }
            devices.push(serde_json::Value::Object(d));
        }
        meta.insert("devices".into(), json!(devices));
        serde_json::Value::Object(meta)
    }
}
