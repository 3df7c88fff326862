//! The schema record and event payload encoding: every call id maps to a name and an ordered list
//! of typed fields, so any reader decodes any event by name without code for its API.
//! See FORMAT.md §3.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::blobs::hex;
use crate::blobs::ObjectId;

/// Wire type of one payload field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// Unsigned 8-bit.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// IEEE 754 double.
    F64,
    /// A device or host address (u64, shown in hex).
    Ptr,
    /// An opaque API handle (u64, shown in hex).
    Handle,
    /// The call's result code (i32).
    Result,
    /// UTF-8 text: u32 length + bytes.
    Str,
    /// Inline bytes: u32 length + bytes.
    Bytes,
    /// A reference to a blob: 16-byte id (all zero: none).
    Blob,
    /// A reference to a code object: 16-byte id (all zero: none).
    Code,
    /// An array of u64: u32 count + count × u64.
    U64s,
}

impl FieldType {
    /// Fixed wire size, if the type has one.
    fn fixed_len(self) -> Option<usize> {
        Some(match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 | FieldType::Result => 4,
            FieldType::U64
            | FieldType::I64
            | FieldType::F64
            | FieldType::Ptr
            | FieldType::Handle => 8,
            FieldType::Blob | FieldType::Code => 16,
            FieldType::Str | FieldType::Bytes | FieldType::U64s => return None,
        })
    }
}

/// One field of a call: its name and wire type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDef {
    /// Field name (a parameter name of the API, or a recorder-added name such as `h2d_blob`).
    pub name: String,
    /// Wire type.
    #[serde(rename = "type")]
    pub ty: FieldType,
}

/// What kind of operation a call is, for consumers that summarise without knowing the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CallClass {
    /// Anything else.
    #[default]
    Other,
    /// A kernel launch; its `kernel` field names the kernel.
    Launch,
    /// A graph launch.
    GraphLaunch,
    /// A device-to-host copy whose `d2h_blob` field holds the bytes the run copied back.
    D2h,
    /// A host-to-device copy whose `h2d_blob` field holds the source bytes.
    H2d,
}

/// One call of the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallDef {
    /// Record type used for this call.
    pub id: u16,
    /// Call name as exported by the API (e.g. `cuMemAlloc_v2`).
    pub name: String,
    /// Classification for generic consumers.
    #[serde(default)]
    pub class: CallClass,
    /// Ordered payload fields.
    pub fields: Vec<FieldDef>,
}

/// The API family a capture recorded, written as a string (`cuda-driver`, `hip`, or any other
/// name a newer recorder uses).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ApiFamily {
    /// The CUDA driver API (`cuda-driver`).
    CudaDriver,
    /// The HIP runtime API (`hip`).
    Hip,
    /// Any other family, by its name.
    Other(String),
}

impl ApiFamily {
    /// The name as written in the schema record and the manifest.
    pub fn as_str(&self) -> &str {
        match self {
            ApiFamily::CudaDriver => "cuda-driver",
            ApiFamily::Hip => "hip",
            ApiFamily::Other(s) => s,
        }
    }
}

impl From<&str> for ApiFamily {
    fn from(s: &str) -> Self {
        match s {
            "cuda-driver" => ApiFamily::CudaDriver,
            "hip" => ApiFamily::Hip,
            other => ApiFamily::Other(other.to_string()),
        }
    }
}

impl From<String> for ApiFamily {
    fn from(s: String) -> Self {
        match s.as_str() {
            "cuda-driver" | "hip" => ApiFamily::from(s.as_str()),
            _ => ApiFamily::Other(s),
        }
    }
}

impl From<ApiFamily> for String {
    fn from(a: ApiFamily) -> Self {
        match a {
            ApiFamily::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl fmt::Display for ApiFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ApiFamily {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ApiFamily {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The schema record: which API was recorded and how to decode each call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// API family, e.g. `cuda-driver` or `hip`.
    pub api: ApiFamily,
    /// Version of that API the recorder was built for (e.g. 13000).
    pub api_version: u64,
    /// Every call that may appear.
    pub calls: Vec<CallDef>,
    /// Keys this reader does not know, kept.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    #[serde(skip)]
    index: HashMap<u16, usize>,
}

impl Schema {
    /// Build a schema and index it.
    pub fn new(api: impl Into<ApiFamily>, api_version: u64, calls: Vec<CallDef>) -> Self {
        let mut s = Schema {
            api: api.into(),
            api_version,
            calls,
            extra: Default::default(),
            index: HashMap::new(),
        };
        s.reindex();
        s
    }

    fn reindex(&mut self) {
        self.index = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id, i))
            .collect();
    }

    /// Parse the JSON payload of a schema record.
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let mut s: Schema = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        for c in &s.calls {
            if c.id >= crate::framing::FIRST_RESERVED_TYPE {
                return Err(format!("call {} uses reserved id 0x{:04x}", c.name, c.id));
            }
        }
        s.reindex();
        if s.index.len() != s.calls.len() {
            return Err("duplicate call ids".into());
        }
        Ok(s)
    }

    /// Serialise to the JSON payload of a schema record.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("schema serialises")
    }

    /// Look up a call by record type.
    pub fn call(&self, id: u16) -> Option<&CallDef> {
        self.index.get(&id).map(|&i| &self.calls[i])
    }

    /// Look up a call by name.
    pub fn call_by_name(&self, name: &str) -> Option<&CallDef> {
        self.calls.iter().find(|c| c.name == name)
    }
}

/// A decoded field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Any unsigned integer field.
    U64(u64),
    /// Any signed integer field (and results).
    I64(i64),
    /// A double.
    F64(f64),
    /// An address.
    Ptr(u64),
    /// A handle.
    Handle(u64),
    /// Text.
    Str(String),
    /// Inline bytes.
    Bytes(Vec<u8>),
    /// A blob reference (`None` when absent).
    Blob(Option<ObjectId>),
    /// A code-object reference.
    Code(Option<ObjectId>),
    /// Array of u64.
    U64s(Vec<u64>),
}

impl Value {
    /// The value as an unsigned integer, for integers, pointers and handles.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) | Value::Ptr(v) | Value::Handle(v) => Some(v),
            Value::I64(v) => Some(v as u64),
            _ => None,
        }
    }

    /// JSON form (ids and addresses as hex strings, bytes as hex).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::U64(v) => J::from(*v),
            Value::I64(v) => J::from(*v),
            Value::F64(v) => serde_json::Number::from_f64(*v).map_or(J::Null, J::Number),
            Value::Ptr(v) | Value::Handle(v) => J::String(format!("0x{v:x}")),
            Value::Str(s) => J::String(s.clone()),
            Value::Bytes(b) => J::String(hex(b)),
            Value::Blob(id) | Value::Code(id) => id.map_or(J::Null, |id| J::String(id.to_hex())),
            Value::U64s(v) => J::from(v.clone()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Ptr(v) | Value::Handle(v) => write!(f, "0x{v:x}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Bytes(b) if b.len() <= 64 => write!(f, "[{}]", hex(b)),
            Value::Bytes(b) => write!(f, "[{}… {} bytes]", hex(&b[..64]), b.len()),
            Value::Blob(None) | Value::Code(None) => write!(f, "-"),
            Value::Blob(Some(id)) | Value::Code(Some(id)) => write!(f, "{id}"),
            Value::U64s(v) => write!(f, "{v:?}"),
        }
    }
}

/// Builds an event payload field by field, in schema order.
#[derive(Debug, Default, Clone)]
pub struct PayloadBuilder {
    buf: Vec<u8>,
}

/// The fixed-width field writers of [`PayloadBuilder`]: each appends its value little-endian.
macro_rules! le_field_writers {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {
        $(
            $(#[$doc])*
            #[inline]
            pub fn $name(&mut self, v: $ty) -> &mut Self {
                self.put(&v.to_le_bytes())
            }
        )*
    };
}

impl PayloadBuilder {
    /// An empty payload.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }
    /// Reuse an existing buffer (cleared).
    #[inline]
    pub fn with_buffer(mut buf: Vec<u8>) -> Self {
        buf.clear();
        PayloadBuilder { buf }
    }
    /// Append to the end of `buf`, keeping what it holds (a payload written in place after its
    /// record's header: [`crate::writer::EventWriter::begin_record`]).
    #[inline]
    pub fn appending(buf: Vec<u8>) -> Self {
        PayloadBuilder { buf }
    }
    /// Make room for `additional` more bytes at once (a record whose size is known up front
    /// then grows its buffer once, not at each field).
    #[inline]
    pub fn reserve(&mut self, additional: usize) -> &mut Self {
        self.buf.reserve(additional);
        self
    }
    /// Append bytes already encoded (a whole payload).
    #[inline]
    pub fn encoded(&mut self, b: &[u8]) -> &mut Self {
        self.put(b)
    }
    /// Append a `u8` field.
    #[inline]
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    le_field_writers! {
        /// Append a `u16` field.
        u16: u16,
        /// Append a `u32` field.
        u32: u32,
        /// Append a `u64`, `ptr` or `handle` field.
        u64: u64,
        /// Append an `i32` or `result` field.
        i32: i32,
        /// Append an `i64` field.
        i64: i64,
        /// Append an `f64` field.
        f64: f64,
    }
    /// Append a `str` field.
    #[inline]
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }
    /// Append a `bytes` field.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.put(&(b.len() as u32).to_le_bytes()).put(b)
    }
    /// Append a `blob` or `code` field.
    #[inline]
    pub fn object(&mut self, id: Option<ObjectId>) -> &mut Self {
        self.put(&id.map_or([0u8; 16], |id| id.0))
    }
    /// Append a `u64s` field.
    #[inline]
    pub fn u64s(&mut self, v: &[u64]) -> &mut Self {
        self.u64s_from(v.iter().copied())
    }
    /// Append a `u64s` field of the values `v` yields (no array of them needed).
    #[inline]
    pub fn u64s_from(&mut self, v: impl ExactSizeIterator<Item = u64>) -> &mut Self {
        self.put(&(v.len() as u32).to_le_bytes());
        for x in v {
            self.put(&x.to_le_bytes());
        }
        self
    }
    /// Append raw bytes (a field already encoded).
    #[inline]
    fn put(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    /// The encoded payload.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    /// Take the encoded payload.
    #[inline]
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// Decode `payload` according to `call`: `(field name, value)` in schema order.
/// Bytes after the last known field are ignored (a newer recorder may append fields).
pub fn decode_fields<'s>(
    call: &'s CallDef,
    payload: &[u8],
) -> Result<Vec<(&'s str, Value)>, String> {
    let mut out = Vec::with_capacity(call.fields.len());
    let mut pos = 0usize;
    for field in &call.fields {
        let rest = &payload[pos.min(payload.len())..];
        let need = |n: usize| -> Result<&[u8], String> {
            rest.get(..n).ok_or_else(|| {
                format!(
                    "payload ends inside field `{}` (offset {pos}, {} bytes left, {n} needed)",
                    field.name,
                    rest.len()
                )
            })
        };
        let (value, len) = if let Some(n) = field.ty.fixed_len() {
            let b = need(n)?;
            let v = match field.ty {
                FieldType::U8 => Value::U64(b[0] as u64),
                FieldType::U16 => Value::U64(u16::from_le_bytes([b[0], b[1]]) as u64),
                FieldType::U32 => Value::U64(u32::from_le_bytes(b.try_into().unwrap()) as u64),
                FieldType::I32 | FieldType::Result => {
                    Value::I64(i32::from_le_bytes(b.try_into().unwrap()) as i64)
                }
                FieldType::U64 => Value::U64(u64::from_le_bytes(b.try_into().unwrap())),
                FieldType::I64 => Value::I64(i64::from_le_bytes(b.try_into().unwrap())),
                FieldType::F64 => Value::F64(f64::from_le_bytes(b.try_into().unwrap())),
                FieldType::Ptr => Value::Ptr(u64::from_le_bytes(b.try_into().unwrap())),
                FieldType::Handle => Value::Handle(u64::from_le_bytes(b.try_into().unwrap())),
                FieldType::Blob => Value::Blob(ObjectId::from_slice(b)),
                FieldType::Code => Value::Code(ObjectId::from_slice(b)),
                _ => unreachable!("variable-length types have no fixed size"),
            };
            (v, n)
        } else {
            let count = u32::from_le_bytes(need(4)?.try_into().unwrap()) as usize;
            let elem = if field.ty == FieldType::U64s { 8 } else { 1 };
            let body_len = count
                .checked_mul(elem)
                .ok_or_else(|| format!("field `{}` length overflows", field.name))?;
            let b = need(4 + body_len)?;
            let body = &b[4..];
            let v = match field.ty {
                FieldType::Str => Value::Str(String::from_utf8_lossy(body).into_owned()),
                FieldType::Bytes => Value::Bytes(body.to_vec()),
                _ => Value::U64s(
                    body.chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                        .collect(),
                ),
            };
            (v, 4 + body_len)
        };
        out.push((field.name.as_str(), value));
        pos += len;
    }
    Ok(out)
}

/// Find a field by name in decoded fields.
pub fn field<'a>(fields: &'a [(&str, Value)], name: &str) -> Option<&'a Value> {
    fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

/// Where one field of a payload lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpan<'s> {
    /// Field name.
    pub name: &'s str,
    /// Wire type.
    pub ty: FieldType,
    /// Offset of the field's first byte in the payload (for `str`, `bytes` and `u64s`: of the
    /// length prefix).
    pub offset: usize,
    /// Bytes the field occupies, length prefix included.
    pub len: usize,
}

/// The offset and length of every field of `payload`, in schema order; the same walk as
/// [`decode_fields`] without building values. A payload that ends inside a field is an error.
pub fn field_offsets<'s>(call: &'s CallDef, payload: &[u8]) -> Result<Vec<FieldSpan<'s>>, String> {
    let mut out = Vec::with_capacity(call.fields.len());
    let mut pos = 0usize;
    for field in &call.fields {
        let len = match field.ty.fixed_len() {
            Some(n) => n,
            None => {
                let count = payload
                    .get(pos..pos + 4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
                    .ok_or_else(|| format!("payload ends inside field `{}`", field.name))?;
                let elem = if field.ty == FieldType::U64s { 8 } else { 1 };
                count
                    .checked_mul(elem)
                    .and_then(|b| b.checked_add(4))
                    .ok_or_else(|| format!("field `{}` length overflows", field.name))?
            }
        };
        if pos.checked_add(len).is_none_or(|end| end > payload.len()) {
            return Err(format!(
                "payload ends inside field `{}` (offset {pos}, {} bytes left, {len} needed)",
                field.name,
                payload.len().saturating_sub(pos)
            ));
        }
        out.push(FieldSpan {
            name: &field.name,
            ty: field.ty,
            offset: pos,
            len,
        });
        pos += len;
    }
    Ok(out)
}

/// An object reference (`blob` or `code` field) in a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef<'s> {
    /// Field name.
    pub name: &'s str,
    /// [`FieldType::Blob`] or [`FieldType::Code`].
    pub ty: FieldType,
    /// Offset of the 16-byte id in the payload.
    pub offset: usize,
    /// The id (`None`: all zero, no object).
    pub id: Option<ObjectId>,
}

/// Every `blob` and `code` field of `payload`: where its 16-byte id lies, and the id. Scrub uses
/// the offsets to rewrite references in place (ids have a fixed size).
pub fn object_fields<'s>(call: &'s CallDef, payload: &[u8]) -> Result<Vec<ObjectRef<'s>>, String> {
    Ok(field_offsets(call, payload)?
        .into_iter()
        .filter(|s| matches!(s.ty, FieldType::Blob | FieldType::Code))
        .map(|s| ObjectRef {
            name: s.name,
            ty: s.ty,
            offset: s.offset,
            id: ObjectId::from_slice(&payload[s.offset..s.offset + 16]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> CallDef {
        use FieldType::*;
        crate::testkit::call(
            3,
            "cuThing",
            CallClass::Other,
            &[
                ("result", Result),
                ("ptr", Ptr),
                ("name", Str),
                ("args", Bytes),
                ("blob", Blob),
                ("offs", U64s),
                ("x", F64),
            ],
        )
    }

    #[test]
    fn payload_round_trips_by_name() {
        let id = ObjectId::of(b"hello");
        let mut p = PayloadBuilder::new();
        p.i32(-2)
            .u64(0xdead)
            .str("axpy")
            .bytes(&[1, 2, 3])
            .object(Some(id))
            .u64s(&[0, 8])
            .f64(1.5);
        let c = call();
        let v = decode_fields(&c, p.as_bytes()).unwrap();
        assert_eq!(field(&v, "result"), Some(&Value::I64(-2)));
        assert_eq!(field(&v, "ptr"), Some(&Value::Ptr(0xdead)));
        assert_eq!(field(&v, "name"), Some(&Value::Str("axpy".into())));
        assert_eq!(field(&v, "args"), Some(&Value::Bytes(vec![1, 2, 3])));
        assert_eq!(field(&v, "blob"), Some(&Value::Blob(Some(id))));
        assert_eq!(field(&v, "offs"), Some(&Value::U64s(vec![0, 8])));
        assert_eq!(field(&v, "x"), Some(&Value::F64(1.5)));
        let spans = field_offsets(&c, p.as_bytes()).unwrap();
        assert_eq!(spans.len(), 7);
        assert_eq!((spans[2].offset, spans[2].len), (12, 8));
        let refs = object_fields(&c, p.as_bytes()).unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(
            (refs[0].name, refs[0].offset, refs[0].id),
            ("blob", 27, Some(id))
        );
        assert_eq!(&p.as_bytes()[27..43], &id.0);
        assert!(field_offsets(&c, &p.as_bytes()[..30]).is_err());
    }

    #[test]
    fn short_payload_is_an_error_not_a_panic() {
        let c = call();
        let mut p = PayloadBuilder::new();
        p.i32(0).u64(1).u32(1000);
        let err = decode_fields(&c, p.as_bytes()).unwrap_err();
        assert!(err.contains("`name`"), "{err}");
    }

    #[test]
    fn schema_json_round_trip_keeps_unknown_keys() {
        let json = br#"{"api":"cuda-driver","api_version":13000,"future":{"a":1},
            "calls":[{"id":1,"name":"cuInit","fields":[{"name":"result","type":"result"},{"name":"flags","type":"u32"}]}]}"#;
        let s = Schema::from_json(json).unwrap();
        assert_eq!(s.call(1).unwrap().name, "cuInit");
        assert_eq!(s.api, ApiFamily::CudaDriver);
        assert!(String::from_utf8(s.to_json())
            .unwrap()
            .starts_with(r#"{"api":"cuda-driver","#));
        let other = Schema::new("future-api", 1, vec![]);
        assert_eq!(other.api, ApiFamily::Other("future-api".into()));
        assert!(String::from_utf8(other.to_json())
            .unwrap()
            .starts_with(r#"{"api":"future-api","#));
        let again = Schema::from_json(&s.to_json()).unwrap();
        assert_eq!(again.extra.get("future"), s.extra.get("future"));
        assert!(Schema::from_json(
            br#"{"api":"x","api_version":1,"calls":[{"id":65535,"name":"a","fields":[]}]}"#
        )
        .is_err());
    }
}
