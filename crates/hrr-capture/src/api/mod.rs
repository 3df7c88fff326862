//! The APIs capture records, each in a module of the same layout:
//!
//! | file | owns |
//! |---|---|
//! | `loader.rs` | finding the real library and its symbols |
//! | `calls.rs` | the exported wrappers, expanded from the API's table in `hrr-calls` |
//! | `custom.rs` (or `custom/`) | the calls that need logic: typed arguments in, a shape out |
//! | `facts.rs` | device and driver facts for the manifest |
//! | `state.rs` | what capture remembers about the API's handles between calls |
//! | `proc_address.rs` | handing out wrappers from the API's own symbol look-up |
//!
//! A call is declared in `crates/hrr-calls/src/<api>/table.rs`, recorded by `calls.rs` (and,
//! when it names one, its custom function), and replayed in
//! `crates/hrr-playback/src/replay/backend/<api>/`.

pub mod cuda;
pub mod hip;

/// What the recorder needs of an API, none of it code of the API's calls.
pub struct ApiDef {
    /// Schema `api` name (`cuda-driver`, `hip`).
    pub name: &'static str,
    /// The schema record of every call of the API.
    pub schema: fn() -> hrr_archive::schema::Schema,
    /// Device and driver facts for the manifest.
    pub metadata: fn() -> serde_json::Value,
    /// The chunk digests of a D2H result taken on the device from its source address
    /// (`hrr_archive::digest`), given the copy's host bytes to check the first use against;
    /// `None` where the API cannot (the host computes them then).
    pub device_digests: Option<DeviceDigestsFn>,
}

/// [`ApiDef::device_digests`]: (device source, the result's host bytes) -> a digest per chunk.
pub type DeviceDigestsFn = unsafe fn(u64, &[u8]) -> Option<Vec<[u8; 16]>>;

/// A `cuDeviceGetName` / `hipDeviceGetName` entry point: (buffer, its length, device) -> status.
pub(crate) type DeviceNameFn = unsafe extern "C" fn(
    *mut std::ffi::c_char,
    std::ffi::c_int,
    std::ffi::c_int,
) -> std::ffi::c_int;

/// The start of a device's entry in an API's facts (`facts.rs`): its `ordinal`, and its `name`
/// when `name` answers for device `dev`.
///
/// # Safety
/// `name`, when given, must be the API's `DeviceGetName`.
pub(crate) unsafe fn device_facts(
    ordinal: std::ffi::c_int,
    dev: std::ffi::c_int,
    name: Option<DeviceNameFn>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut d = serde_json::Map::new();
    d.insert("ordinal".into(), serde_json::json!(ordinal));
    let mut buf = [0 as std::ffi::c_char; 256];
    if name.is_some_and(|f| f(buf.as_mut_ptr(), 255, dev) == 0) {
        let n = std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy();
        d.insert("name".into(), serde_json::json!(n));
    }
    d
}
