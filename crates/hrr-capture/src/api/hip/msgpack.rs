//! A small MessagePack decoder, enough for the `NT_AMDGPU_METADATA` note of AMDGPU code objects:
//! every type of the format is decoded (extension values are kept as bytes); lengths are checked
//! against the input, nesting is bounded, and nothing panics on malformed input.

use std::fmt;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// Any integer (unsigned ones above `i64::MAX` are kept as `UInt`).
    Int(i64),
    /// An unsigned integer that does not fit `i64`.
    UInt(u64),
    /// `float 32` or `float 64`.
    Float(f64),
    /// A string (invalid UTF-8 replaced).
    Str(String),
    /// Binary data.
    Bin(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// A map, in encoded order.
    Map(Vec<(Value, Value)>),
    /// An extension value: type and bytes.
    Ext(i8, Vec<u8>),
}

impl Value {
    /// The value under string key `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// As an unsigned integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(i) => u64::try_from(i).ok(),
            Value::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// As a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// As an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Why input could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was wrong.
    pub what: &'static str,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "msgpack: {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for Error {}

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 64;

struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn fail<T>(&self, what: &'static str) -> Result<T, Error> {
        Err(Error {
            offset: self.pos,
            what,
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.buf.len() => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => self.fail("truncated"),
        }
    }

    fn be(&mut self, n: usize) -> Result<u64, Error> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | b as u64))
    }

    fn len(&mut self, n: usize) -> Result<usize, Error> {
        let v = self.be(n)?;
        usize::try_from(v).or_else(|_| self.fail("length too large"))
    }

    fn str(&mut self, n: usize) -> Result<Value, Error> {
        Ok(Value::Str(
            String::from_utf8_lossy(self.take(n)?).into_owned(),
        ))
    }

    fn ext(&mut self, n: usize) -> Result<Value, Error> {
        let ty = self.take(1)?[0] as i8;
        Ok(Value::Ext(ty, self.take(n)?.to_vec()))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, Error> {
        // Every element takes at least one byte: never reserve more than what is left.
        let mut v = Vec::with_capacity(n.min(self.buf.len() - self.pos));
        for _ in 0..n {
            v.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(v))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, Error> {
        let mut v = Vec::with_capacity(n.min((self.buf.len() - self.pos) / 2));
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            let val = self.value(depth + 1)?;
            v.push((k, val));
        }
        Ok(Value::Map(v))
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Int(tag as i64),
            0x80..=0x8f => return self.map((tag & 0x0f) as usize, depth),
            0x90..=0x9f => return self.array((tag & 0x0f) as usize, depth),
            0xa0..=0xbf => return self.str((tag & 0x1f) as usize),
            0xc0 => Value::Nil,
            0xc1 => return self.fail("reserved tag 0xc1"),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (tag - 0xc4))?;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7..=0xc9 => {
                let n = self.len(1 << (tag - 0xc7))?;
                return self.ext(n);
            }
            0xca => Value::Float(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => Value::Float(f64::from_bits(self.be(8)?)),
            0xcc..=0xcf => {
                let u = self.be(1 << (tag - 0xcc))?;
                i64::try_from(u).map_or(Value::UInt(u), Value::Int)
            }
            0xd0..=0xd3 => {
                let n = 1usize << (tag - 0xd0);
                let u = self.be(n)?;
                let shift = 64 - 8 * n as u32;
                Value::Int(((u << shift) as i64) >> shift)
            }
            0xd4..=0xd8 => return self.ext(1 << (tag - 0xd4)),
            0xd9..=0xdb => {
                let n = self.len(1 << (tag - 0xd9))?;
                return self.str(n);
            }
            0xdc | 0xdd => {
                let n = self.len(if tag == 0xdc { 2 } else { 4 })?;
                return self.array(n, depth);
            }
            0xde | 0xdf => {
                let n = self.len(if tag == 0xde { 2 } else { 4 })?;
                return self.map(n, depth);
            }
            0xe0..=0xff => Value::Int(tag as i8 as i64),
        })
    }
}

/// Decode the first value in `buf` (bytes after it are ignored).
pub fn decode(buf: &[u8]) -> Result<Value, Error> {
    Decoder { buf, pos: 0 }.value(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_kind() {
        // {"a": [1, -1, 300, -200, true, nil, "xy"], "b": 1.5}
        let mut b = vec![0x82, 0xa1, b'a', 0x97, 0x01, 0xff, 0xcd, 0x01, 0x2c];
        b.extend([0xd1, 0xff, 0x38, 0xc3, 0xc0, 0xa2, b'x', b'y']);
        b.extend([0xa1, b'b', 0xcb]);
        b.extend(1.5f64.to_be_bytes());
        let v = decode(&b).unwrap();
        let a = v.get("a").unwrap().as_array().unwrap();
        assert_eq!(a[0], Value::Int(1));
        assert_eq!(a[1], Value::Int(-1));
        assert_eq!(a[2].as_u64(), Some(300));
        assert_eq!(a[3], Value::Int(-200));
        assert_eq!(a[4], Value::Bool(true));
        assert_eq!(a[5], Value::Nil);
        assert_eq!(a[6].as_str(), Some("xy"));
        assert_eq!(v.get("b"), Some(&Value::Float(1.5)));
        assert_eq!(
            decode(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap(),
            Value::UInt(u64::MAX)
        );
        assert_eq!(decode(&[0xc4, 2, 7, 8]).unwrap(), Value::Bin(vec![7, 8]));
        assert_eq!(decode(&[0xd4, 3, 9]).unwrap(), Value::Ext(3, vec![9]));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err()); // huge array, no elements
        assert!(decode(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a']).is_err());
        assert!(decode(&[0xc1]).is_err());
        assert!(decode(&[0x91; 200]).is_err()); // nested too deeply
        for n in 0..=255u8 {
            let _ = decode(&[n, n, n]);
        }
    }
}
