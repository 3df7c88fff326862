//! Argument helpers for wrappers and custom functions: C values into shape fields, out-pointers
//! read after the call, C strings, byte ranges and files named by a path read defensively (null
//! reads as empty).

use std::ffi::{c_char, c_void, CStr};

/// A C argument value as a shape field of type `T`.
pub trait IntoField<T> {
    /// The conversion.
    fn into_field(self) -> T;
}

macro_rules! into_field {
    ($($from:ty => $to:ty),* $(,)?) => {
        $(impl IntoField<$to> for $from {
            #[inline]
            fn into_field(self) -> $to {
                self as $to
            }
        })*
    };
}

into_field! {
    u8 => u32, u16 => u32, u32 => u32, i32 => i32, i32 => u32,
    u32 => u64, u64 => u64, usize => u64,
}

impl IntoField<Vec<u8>> for hrr_calls::cuda::ffi::IpcHandle {
    #[inline]
    fn into_field(self) -> Vec<u8> {
        self.0.to_vec()
    }
}

impl<T> IntoField<u64> for *mut T {
    #[inline]
    fn into_field(self) -> u64 {
        self as u64
    }
}

impl<T> IntoField<u64> for *const T {
    #[inline]
    fn into_field(self) -> u64 {
        self as u64
    }
}

/// An argument recorded by value (`arg = field` in a row).
#[inline]
pub fn field<A: IntoField<T>, T>(arg: A) -> T {
    arg.into_field()
}

/// An out-pointer argument recorded by what it points to after the call (`arg => field`); a
/// null pointer records the zero value.
///
/// # Safety
/// `p` is null or points to a readable `A`.
#[inline]
pub unsafe fn out_field<A: Copy + IntoField<T>, T: Default>(p: *mut A) -> T {
    if p.is_null() {
        T::default()
    } else {
        (*p).into_field()
    }
}

/// What an out-pointer holds (zero value when null).
///
/// # Safety
/// `p` is null or points to a readable `T`.
#[inline]
pub unsafe fn out<T: Copy + Default>(p: *const T) -> T {
    if p.is_null() {
        T::default()
    } else {
        *p
    }
}

/// What a pointer-sized out-pointer holds, as an address (0 when null).
///
/// # Safety
/// `p` is null or points to a readable pointer.
#[inline]
pub unsafe fn out_addr(p: *const *mut c_void) -> u64 {
    if p.is_null() {
        0
    } else {
        *p as u64
    }
}

/// A C string argument (empty when null; invalid UTF-8 replaced).
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// `len` bytes at `p` (empty when null).
///
/// # Safety
/// `p` is null or readable for `len` bytes.
pub unsafe fn bytes_at<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}

/// The contents of the file a C path argument names (`None` when the path is null or the file
/// cannot be read).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
pub unsafe fn file_at(path: *const c_char) -> Option<Vec<u8>> {
    if path.is_null() {
        return None;
    }
    let path = std::ffi::OsStr::from_encoded_bytes_unchecked(CStr::from_ptr(path).to_bytes());
    std::fs::read(path).ok()
}
