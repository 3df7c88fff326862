//! Reading a decoded event's fields by name, shared by the backends: a missing integer is an
//! error (the schema promised it); missing bytes, text, arrays and object ids read as empty.

use anyhow::{anyhow, Result};
use hrr_archive::schema::{field, Value};
use hrr_archive::ObjectId;

/// Decoded fields of one event.
pub type Fields<'a> = [(&'a str, Value)];

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
