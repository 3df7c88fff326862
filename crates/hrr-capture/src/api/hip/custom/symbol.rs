//! `__device__` variables: copies to and from them and their addresses, named by the variable's
//! registration (its fat binary's registration is written on first use).

use super::Call;
use crate::api::hip::calls::args;
use std::ffi::c_int;
use std::sync::Arc;

use hrr_archive::ObjectId;
use hrr_calls::hip::ffi::{Handle, HipError, Ptr};
use hrr_calls::shapes::direction;
use hrr_calls::shapes::{CopyFromSymbol, CopyToSymbol, SymbolAddress};

use super::copy::result_blob;
use super::{host_blob, rec};
use crate::api::hip::calls::Export;
use crate::api::hip::state;
use crate::hook::args::out_addr;
use crate::recorder::Recorder;

/// The registered variable at `symbol`: its name and code object (empty when never seen
/// registered, noted as unreplayable under `call`).
fn named(
    rc: &mut Recorder,
    call: &str,
    sym: Option<(Arc<str>, Option<ObjectId>)>,
) -> (String, Option<ObjectId>) {
    match sym {
        Some((name, code)) => (name.to_string(), code),
        None => {
            rc.note_unreplayable(
                call,
                "a variable whose registration was not seen (its name and code object are unknown)",
            );
            (String::new(), None)
        }
    }
}

/// A symbol copy's direction: device-to-device for `hipMemcpyDeviceToDevice` (3) and for
/// `hipMemcpyDefault` (4) with a device-side other end, else `host`.
fn symbol_direction(kind: c_int, other: Ptr, host: u8) -> u8 {
    if kind == 3 || (kind == 4 && state::is_device(other as u64)) {
        direction::D2D
    } else {
        host
    }
}

/// The arguments `hipMemcpyToSymbol` and its async form share: symbol, source, bytes, offset
/// and kind.
type ToSymbolArgs = (Ptr, Ptr, usize, usize, c_int);

/// The arguments `hipMemcpyFromSymbol` and its async form share: destination, symbol, bytes,
/// offset and kind.
type FromSymbolArgs = (Ptr, Ptr, usize, usize, c_int);

/// A copy to a symbol, on `stream` when `Some`.
unsafe fn to_symbol(
    h: Export,
    (symbol, src, n, offset, kind): ToSymbolArgs,
    stream: Option<Handle>,
    call: impl Call,
) -> HipError {
    let dir = symbol_direction(kind, src, direction::H2D);
    let h2d_blob = if dir == direction::H2D {
        host_blob(src, n)
    } else {
        None
    };
    let sym = state::symbol(symbol as u64);
    let r = call();
    rec(h, r, |rc| {
        let (name, code) = named(rc, "hipMemcpyToSymbol", sym);
        CopyToSymbol {
            symbol: symbol as u64,
            name,
            code,
            src: src as u64,
            bytes: n as u64,
            offset: offset as u64,
            kind,
            stream: stream.unwrap_or(std::ptr::null_mut()) as u64,
            direction: dir,
            h2d_blob,
        }
    });
    r
}

pub unsafe fn memcpy_to_symbol(h: Export, a: args::MemcpyToSymbol, call: impl Call) -> HipError {
    to_symbol(h, (a.symbol, a.src, a.n, a.offset, a.kind), None, call)
}

pub unsafe fn memcpy_to_symbol_async(
    h: Export,
    a: args::MemcpyToSymbolAsync,
    call: impl Call,
) -> HipError {
    let stream = Some(a.stream);
    to_symbol(h, (a.symbol, a.src, a.n, a.offset, a.kind), stream, call)
}

/// A copy from a symbol, on `stream` when `Some`.
unsafe fn from_symbol(
    h: Export,
    (dst, symbol, n, offset, kind): FromSymbolArgs,
    stream: Option<Handle>,
    call: impl Call,
) -> HipError {
    let dir = symbol_direction(kind, dst, direction::D2H);
    let sym = state::symbol(symbol as u64);
    let r = call();
    let d2h_blob = if dir == direction::D2H {
        result_blob(r, dst, n, stream)
    } else {
        None
    };
    rec(h, r, |rc| {
        let (name, code) = named(rc, "hipMemcpyFromSymbol", sym);
        CopyFromSymbol {
            dst: dst as u64,
            symbol: symbol as u64,
            name,
            code,
            bytes: n as u64,
            offset: offset as u64,
            kind,
            stream: stream.unwrap_or(std::ptr::null_mut()) as u64,
            direction: dir,
            d2h_blob,
        }
    });
    r
}

pub unsafe fn memcpy_from_symbol(
    h: Export,
    a: args::MemcpyFromSymbol,
    call: impl Call,
) -> HipError {
    from_symbol(h, (a.dst, a.symbol, a.n, a.offset, a.kind), None, call)
}

pub unsafe fn memcpy_from_symbol_async(
    h: Export,
    a: args::MemcpyFromSymbolAsync,
    call: impl Call,
) -> HipError {
    let stream = Some(a.stream);
    from_symbol(h, (a.dst, a.symbol, a.n, a.offset, a.kind), stream, call)
}

pub unsafe fn get_symbol_address(h: Export, a: args::GetSymbolAddress, r: HipError) {
    let args::GetSymbolAddress { dptr, symbol } = a;
    let sym = state::symbol(symbol as u64);
    rec(h, r, |rc| {
        let (name, code) = named(rc, "hipGetSymbolAddress", sym);
        SymbolAddress {
            dptr: out_addr(dptr),
            symbol: symbol as u64,
            name,
            code,
        }
    });
}
