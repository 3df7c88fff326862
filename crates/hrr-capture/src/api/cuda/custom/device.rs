//! Initialisation and device queries that need logic.

#![allow(clippy::missing_safety_doc)]

use crate::api::cuda::calls::args;

use hrr_calls::cuda::ffi::CUresult;
use hrr_calls::shapes::*;

use super::rec;
use crate::api::cuda::calls::Export;
use crate::api::cuda::API;
use crate::hook::args::bytes_at;
use crate::recorder::{self};

pub unsafe fn init(h: Export, a: args::Init, r: CUresult) {
    let args::Init { flags } = a;
    rec(h, r, |_| Init { flags });
    if r == 0 {
        recorder::refresh_metadata(&API);
    }
}

pub unsafe fn device_get_uuid(h: Export, a: args::DeviceGetUuid, r: CUresult) {
    let args::DeviceGetUuid { uuid, dev } = a;
    rec(h, r, |_| DeviceUuid {
        uuid: if r == 0 {
            bytes_at(uuid, 16).to_vec()
        } else {
            Vec::new()
        },
        device: dev,
    });
}
