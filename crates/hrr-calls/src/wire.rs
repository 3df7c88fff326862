//! How a shape field's Rust type is written to and read from an event payload. Wire types map
//! to Rust types one way: `u8`/`u32`/`i32` as themselves, `u64`/`ptr`/`handle` as `u64`, `str`
//! as `String`, `bytes` as `Vec<u8>`, `blob`/`code` as `Option<ObjectId>`, `u64s` as `Vec<u64>`.

use std::fmt;

pub use hrr_archive::schema::FieldType;
use hrr_archive::schema::{field, PayloadBuilder, Value};
use hrr_archive::ObjectId;

/// Decoded fields of one event, by name.
pub type Fields<'a> = [(&'a str, Value)];

/// A field an event's schema promised but its payload did not give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's name.
    pub field: &'static str,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}` missing", self.field)
    }
}

impl std::error::Error for FieldError {}

/// The Rust type of a wire type, for shape declarations.
#[doc(hidden)]
#[macro_export]
macro_rules! rust_type {
    (U8) => { u8 };
    (U32) => { u32 };
    (I32) => { i32 };
    (U64) => { u64 };
    (Ptr) => { u64 };
    (Handle) => { u64 };
    (Str) => { ::std::string::String };
    (Bytes) => { ::std::vec::Vec<u8> };
    (Blob) => { ::std::option::Option<::hrr_archive::ObjectId> };
    (Code) => { ::std::option::Option<::hrr_archive::ObjectId> };
    (U64s) => { ::std::vec::Vec<u64> };
}

/// A Rust value that is one payload field.
pub trait Wire: Sized {
    /// Append it to a payload.
    fn put(&self, p: &mut PayloadBuilder);
    /// Read it from decoded fields. Integers must be present (the schema promised them); bytes,
    /// text, arrays and object references read as empty when absent.
    fn get(fields: &Fields, name: &'static str) -> Result<Self, FieldError>;
}

/// [`Wire::get`] of field `name`, looked for at `*at` first (a shape reads its fields in payload
/// order, so a read is one pass over them, not a search per field), `*at` then moved past it;
/// anywhere in `fields` when not there.
pub fn get_near<W: Wire>(
    fields: &Fields,
    name: &'static str,
    at: &mut usize,
) -> Result<W, FieldError> {
    // the next field, or the one after (a status field the shape does not name)
    let near = fields
        .get(*at..)
        .and_then(|rest| rest.iter().take(2).position(|(n, _)| *n == name));
    match near {
        Some(i) => {
            let i = *at + i;
            *at = i + 1;
            W::get(&fields[i..=i], name)
        }
        None => W::get(fields, name),
    }
}

fn int(fields: &Fields, name: &'static str) -> Result<u64, FieldError> {
    field(fields, name)
        .and_then(Value::as_u64)
        .ok_or(FieldError { field: name })
}

/// [`Wire`] for integers: written by the [`PayloadBuilder`] method of the same width, read from
/// any integer field (converted with `as`).
macro_rules! wire_ints {
    ($($t:ident),*) => {$(
        impl Wire for $t {
            #[inline]
            fn put(&self, p: &mut PayloadBuilder) {
                p.$t(*self);
            }
            fn get(fields: &Fields, name: &'static str) -> Result<Self, FieldError> {
                int(fields, name).map(|v| v as $t)
            }
        }
    )*};
}
wire_ints!(u8, u32, i32, u64);

/// [`Wire`] for owned buffers: written by the named [`PayloadBuilder`] method, read from a field
/// of the named [`Value`] variant (empty when the field is missing or of another kind).
macro_rules! wire_buffers {
    ($($t:ty => $put:ident, $variant:ident;)*) => {$(
        impl Wire for $t {
            #[inline]
            fn put(&self, p: &mut PayloadBuilder) {
                p.$put(self);
            }
            fn get(fields: &Fields, name: &'static str) -> Result<Self, FieldError> {
                Ok(match field(fields, name) {
                    Some(Value::$variant(v)) => v.clone(),
                    _ => <$t>::new(),
                })
            }
        }
    )*};
}
wire_buffers! {
    String => str, Str;
    Vec<u8> => bytes, Bytes;
    Vec<u64> => u64s, U64s;
}

impl Wire for Option<ObjectId> {
    #[inline]
    fn put(&self, p: &mut PayloadBuilder) {
        p.object(*self);
    }
    fn get(fields: &Fields, name: &'static str) -> Result<Self, FieldError> {
        Ok(match field(fields, name) {
            Some(Value::Code(id)) | Some(Value::Blob(id)) => *id,
            _ => None,
        })
    }
}

#[cfg(test)]
mod near_tests {
    use super::*;

    #[test]
    fn fields_are_found_in_order_out_of_order_and_missing() {
        let fields: Vec<(&str, Value)> = vec![
            ("result", Value::I64(0)),
            ("a", Value::U64(1)),
            ("b", Value::U64(2)),
        ];
        let mut at = 0;
        assert_eq!(get_near::<u64>(&fields, "a", &mut at).unwrap(), 1);
        assert_eq!(at, 2);
        assert_eq!(get_near::<u64>(&fields, "b", &mut at).unwrap(), 2);
        assert_eq!(at, 3);
        // out of order: found by the whole search, the cursor left as it was
        assert_eq!(get_near::<u64>(&fields, "a", &mut at).unwrap(), 1);
        assert_eq!(at, 3);
        assert_eq!(
            get_near::<u64>(&fields, "c", &mut at).unwrap_err().field,
            "c"
        );
        assert_eq!(get_near::<String>(&fields, "s", &mut at).unwrap(), "");
    }
}
