//! Device queries and resets that need logic.

use super::Call;
use crate::api::hip::calls::args;
use std::ffi::{c_int, CStr};

use hrr_calls::hip::ffi::HipError;
use hrr_calls::hip::find_arch_name;
use hrr_calls::shapes::{DeviceProperties, NoFields};

use super::rec;
use crate::api::hip::calls::Export;
use crate::hook::args::bytes_at;

/// Bytes of `hipDeviceProp_t` read back: the whole struct of ROCm 5 (792 bytes; `name` first,
/// `gcnArchName` at 396), and of the ROCm 6 layout (`hipGetDevicePropertiesR0600`, 1472 bytes).
const PROPS_READ: usize = 792;
const PROPS_READ_R0600: usize = 1472;

/// `hipGetDeviceProperties` and `hipGetDevicePropertiesR0600` (one row each, same arguments):
/// the struct is read back in the export's layout.
pub unsafe fn get_device_properties(
    h: Export,
    prop: *mut u8,
    dev: c_int,
    call: impl Call,
) -> HipError {
    let read = if h == Export::hipGetDevicePropertiesR0600 {
        PROPS_READ_R0600
    } else {
        PROPS_READ
    };
    let r = call();
    rec(h, r, |_| {
        let (mut name, mut gcn_arch_name) = (String::new(), String::new());
        if r == 0 && !prop.is_null() {
            let b = bytes_at(prop, read);
            name = CStr::from_bytes_until_nul(&b[..256])
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            gcn_arch_name = find_arch_name(b).unwrap_or_default();
        }
        DeviceProperties {
            device: dev,
            name,
            gcn_arch_name,
        }
    });
    r
}

pub unsafe fn device_reset(h: Export, _: args::DeviceReset, r: HipError) {
    rec(h, r, |rc| {
        rc.note_unreplayable(
            "hipDeviceReset",
            "replay keeps its allocations and code loaded across a device reset",
        );
        NoFields {}
    });
}
