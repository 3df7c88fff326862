//! Every read of a decoded event's fields, and every field name replay uses ([`name`]): the
//! engine and the backends never spell a field name themselves. In a next step these names come
//! from the generated call table (typed per-call structs); this module is the one place to change.
//!
//! Reading rules: a missing integer is an error (the schema promised it); missing bytes, text,
//! arrays and object ids read as empty.

use anyhow::{anyhow, Result};
use hrr_archive::schema::{field, Value};
use hrr_archive::ObjectId;

use super::backend::Extent;

/// Decoded fields of one event.
pub type Fields<'a> = [(&'a str, Value)];

/// The names of the fields replay reads, as the capture's schema spells them.
pub mod name {
    /// Call status (absent for calls without one, like registrations).
    pub const RESULT: &str = "result";
    /// Code object of a load, registration or `<<<>>>` launch.
    pub const CODE: &str = "code";
    /// Context handle.
    pub const CTX: &str = "ctx";
    /// Device pointer of an allocation or variable.
    pub const DPTR: &str = "dptr";
    /// Allocation size.
    pub const BYTESIZE: &str = "bytesize";
    /// Row pitch of a pitched allocation.
    pub const PITCH: &str = "pitch";
    /// Rows of a pitched allocation.
    pub const HEIGHT: &str = "height";
    /// Flags of a call.
    pub const FLAGS: &str = "flags";
    /// Host pointer of a host allocation or registration.
    pub const HOST_PTR: &str = "host_ptr";
    /// Recorded contents of a registered host range.
    pub const CONTENTS: &str = "contents";
    /// Address of a VMM reservation, mapping or access grant.
    pub const PTR: &str = "ptr";
    /// Size of a VMM range.
    pub const SIZE: &str = "size";
    /// Alignment of a reservation.
    pub const ALIGNMENT: &str = "alignment";
    /// Allocation properties of `cuMemCreate`.
    pub const PROP: &str = "prop";
    /// VMM allocation handle.
    pub const HANDLE: &str = "handle";
    /// Offset into a VMM allocation, or into a variable.
    pub const OFFSET: &str = "offset";
    /// Element or descriptor count.
    pub const COUNT: &str = "count";
    /// Blob of a host-to-device source.
    pub const H2D_BLOB: &str = "h2d_blob";
    /// Blob of a device-to-host result.
    pub const D2H_BLOB: &str = "d2h_blob";
    /// Copy or memset destination.
    pub const DST: &str = "dst";
    /// Copy source.
    pub const SRC: &str = "src";
    /// Stream handle.
    pub const STREAM: &str = "stream";
    /// Byte count of a copy.
    pub const BYTES: &str = "bytes";
    /// Copy direction (0 D2D, 1 H2D, 2 D2H, else H2H).
    pub const DIRECTION: &str = "direction";
    /// Memset value, or attribute value.
    pub const VALUE: &str = "value";
    /// Memset element width.
    pub const ELEMENT_BYTES: &str = "element_bytes";
    /// Library handle.
    pub const LIBRARY: &str = "library";
    /// Module handle.
    pub const MODULE: &str = "module";
    /// Kernel or variable name of a look-up.
    pub const NAME: &str = "name";
    /// Function handle.
    pub const FUNCTION: &str = "function";
    /// Kernel handle (look-ups), or kernel name (launches).
    pub const KERNEL: &str = "kernel";
    /// Module or library owning a variable.
    pub const OWNER: &str = "owner";
    /// Function or kernel attribute.
    pub const ATTRIB: &str = "attrib";
    /// Cache configuration.
    pub const CONFIG: &str = "config";
    /// Stream priority.
    pub const PRIORITY: &str = "priority";
    /// Event handle.
    pub const EVENT: &str = "event";
    /// Graph handle.
    pub const GRAPH: &str = "graph";
    /// Graph instantiation handle.
    pub const EXEC: &str = "exec";
    /// Whether the kernel's argument layout was known at capture.
    pub const ARGS_KNOWN: &str = "args_known";
    /// The kernel argument buffer.
    pub const ARGS: &str = "args";
    /// Offsets of the arguments in the buffer.
    pub const ARG_OFFSETS: &str = "arg_offsets";
    /// Sizes of the arguments.
    pub const ARG_SIZES: &str = "arg_sizes";
    /// Launch attributes (`cuLaunchKernelEx`).
    pub const ATTRS: &str = "attrs";
    /// Cooperative launch.
    pub const COOPERATIVE: &str = "cooperative";
    /// Launch issued inside a stream capture.
    pub const IN_CAPTURE: &str = "in_capture";
    /// Grid dimensions.
    pub const GRID: [&str; 3] = ["grid_x", "grid_y", "grid_z"];
    /// Block dimensions.
    pub const BLOCK: [&str; 3] = ["block_x", "block_y", "block_z"];
    /// Dynamic shared memory.
    pub const SHARED_MEM: &str = "shared_mem";
}

/// An integer, pointer or handle field.
pub fn u(fields: &Fields, name: &str) -> Result<u64> {
    field(fields, name)
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("field `{name}` missing"))
}

/// A `bytes` field (empty when absent).
pub fn bytes<'a>(fields: &'a Fields, name: &str) -> &'a [u8] {
    match field(fields, name) {
        Some(Value::Bytes(b)) => b,
        _ => &[],
    }
}

/// A `str` field (empty when absent).
pub fn text(fields: &Fields, name: &str) -> String {
    match field(fields, name) {
        Some(Value::Str(s)) => s.clone(),
        _ => String::new(),
    }
}

/// A `blob` or `code` field.
pub fn object(fields: &Fields, name: &str) -> Option<ObjectId> {
    match field(fields, name) {
        Some(Value::Code(id)) | Some(Value::Blob(id)) => *id,
        _ => None,
    }
}

/// A `u64s` field (empty when absent).
pub fn u64s(fields: &Fields, name: &str) -> Vec<u64> {
    match field(fields, name) {
        Some(Value::U64s(v)) => v.clone(),
        _ => Vec::new(),
    }
}

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
    matches!(field(fields, name::RESULT), Some(Value::I64(r)) if *r != 0)
}

/// The call has a status and it is not a plain 0 (the prescan's test; calls without a status,
/// like registrations, count as done).
pub fn status_not_zero(fields: &Fields) -> bool {
    field(fields, name::RESULT).is_some_and(|r| *r != Value::I64(0))
}

/// The code object a load or registration names, when recorded as one.
pub fn code_object(fields: &Fields) -> Option<ObjectId> {
    match field(fields, name::CODE) {
        Some(Value::Code(Some(id))) => Some(*id),
        _ => None,
    }
}

/// The device range `(start, length)` an allocation or reservation took, read leniently
/// (missing numbers read as 0) for the prescan.
pub fn extent(fields: &Fields, kind: Extent) -> (u64, u64) {
    let get = |n: &str| field(fields, n).and_then(Value::as_u64).unwrap_or(0);
    match kind {
        Extent::Reservation => (get(name::PTR), get(name::SIZE)),
        Extent::Pitched => (
            get(name::DPTR),
            get(name::PITCH).saturating_mul(get(name::HEIGHT)),
        ),
        Extent::Bytes => (get(name::DPTR), get(name::BYTESIZE)),
    }
}

/// The VMM range `(ptr, size)` of a reservation, unmapping or access grant.
pub fn vmm_range(fields: &Fields) -> Result<(u64, u64)> {
    Ok((u(fields, name::PTR)?, u(fields, name::SIZE)?))
}

/// Launch dimensions and dynamic shared memory.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    /// Grid.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared_mem: u32,
}

/// The geometry of a launch (grid x, y, z, block x, y, z, shared memory, read in that order).
pub fn geometry(fields: &Fields) -> Result<Geometry> {
    let g = |n| u(fields, n).map(|v| v as u32);
    let [gx, gy, gz] = name::GRID;
    let [bx, by, bz] = name::BLOCK;
    let (grid, block) = ([g(gx)?, g(gy)?, g(gz)?], [g(bx)?, g(by)?, g(bz)?]);
    Ok(Geometry {
        grid,
        block,
        shared_mem: g(name::SHARED_MEM)?,
    })
}
