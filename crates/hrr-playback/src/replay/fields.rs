//! What replay reads of an event outside the handlers: its status, and the prescan's lenient
//! reads of allocation ranges, code objects and device ordinals looked up. Every other field is read by the handlers
//! into the call's record shape (`hrr_calls::shapes`, through `backend::Event::read`); here too
//! the ranges and code objects are read through shapes, so the only field name spelled in
//! replay is the status's, [`RESULT`].
//!
//! Reading rules are `hrr_calls::wire`'s: a missing integer is an error (the schema promised
//! it); missing bytes, text, arrays and object ids read as empty.

use hrr_archive::schema::{field, Value};
use hrr_archive::ObjectId;
use hrr_calls::shapes::{
    CtxCreate, DeviceGet, LibraryLoad, MallocPitch, MemAlloc, ModuleLoad, PrimaryCtx, Range,
    RegisterFatBinary,
};
use hrr_calls::wire::Fields;
use hrr_calls::Shape;

use super::backend::Extent;

/// The schema's status field: the first field of every call that returns a status (absent for
/// calls without one, like registrations); no record shape holds it.
pub const RESULT: &str = "result";

/// The status a call recorded (its `result` field, when its schema has one), read straight
/// from the payload (the prescan reads it for every event without decoding the rest).
pub fn recorded_status(call: &hrr_archive::schema::CallDef, payload: &[u8]) -> Option<i32> {
    let first = call.fields.first()?;
    (first.ty == hrr_archive::schema::FieldType::Result)
        .then(|| {
            payload
                .get(..4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
        })
        .flatten()
}

/// The call failed during capture (an integer status other than 0): it is not reissued.
pub fn failed_in_capture(fields: &Fields) -> bool {
    matches!(field(fields, RESULT), Some(Value::I64(r)) if *r != 0)
}

/// The call has a status and it is not a plain 0 (the prescan's test; calls without a status,
/// like registrations, count as done).
pub fn status_not_zero(fields: &Fields) -> bool {
    field(fields, RESULT).is_some_and(|r| *r != Value::I64(0))
}

/// The code object a load or registration names, when recorded as one: the `code` of its
/// shape (`ModuleLoad`, `LibraryLoad` or `RegisterFatBinary`).
pub fn code_object(fields: &Fields) -> Option<ObjectId> {
    ModuleLoad::read(fields)
        .map(|s| s.code)
        .or_else(|_| LibraryLoad::read(fields).map(|s| s.code))
        .or_else(|_| RegisterFatBinary::read(fields).map(|s| s.code))
        .ok()
        .flatten()
}

/// The device range `(start, length)` an allocation or reservation took, read leniently for
/// the prescan: a range whose shape does not read is `(0, 0)`, which placement skips (as it
/// skips any range with a zero start or length).
pub fn extent(fields: &Fields, kind: Extent) -> (u64, u64) {
    let range = match kind {
        Extent::Reservation => Range::read(fields).map(|s| (s.ptr, s.size)),
        Extent::Pitched => {
            MallocPitch::read(fields).map(|s| (s.dptr, s.pitch.saturating_mul(s.height)))
        }
        Extent::Bytes => MemAlloc::read(fields).map(|s| (s.dptr, s.bytesize)),
    };
    range.unwrap_or((0, 0))
}

/// The device ordinal a device look-up asked for (the `ordinal` of shape `DeviceGet`), if it
/// reads.
pub fn device_ordinal(fields: &Fields) -> Option<i32> {
    DeviceGet::read(fields).ok().map(|s| s.ordinal)
}

/// The host range (address, length) a pinned allocation or registration made visible to the
/// device (shapes `HostAlloc`, `HostAllocPlain`, `HostRegister`), if it reads.
pub fn host_range(fields: &Fields) -> Option<(u64, u64)> {
    use hrr_calls::shapes::{HostAlloc, HostAllocPlain, HostRegister};
    HostAlloc::read(fields)
        .map(|s| (s.host_ptr, s.bytesize))
        .or_else(|_| HostAllocPlain::read(fields).map(|s| (s.host_ptr, s.bytesize)))
        .or_else(|_| HostRegister::read(fields).map(|s| (s.host_ptr, s.bytesize)))
        .ok()
}

/// The recorded context a context-opening call returned and the device it was opened on (the
/// `device` of shape `PrimaryCtx` or `CtxCreate`: a device handle, which is the device's
/// ordinal), if they read.
pub fn context_opened(fields: &Fields) -> Option<(u64, i32)> {
    PrimaryCtx::read(fields)
        .map(|s| (s.ctx, s.device))
        .or_else(|_| CtxCreate::read(fields).map(|s| (s.ctx, s.device)))
        .ok()
}
