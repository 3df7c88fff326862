//! # hrr-calls
//!
//! One call, one place. Every call hrr records is one row of a declarative table per API
//! ([`cuda_calls!`] in `cuda/table.rs`, [`hip_calls!`] in `hip/table.rs`). A row gives:
//!
//! - the operation ([`cuda::Op`], [`hip::Op`]) and every exported name that performs it (ABI
//!   variants such as `_v2`, `_ptsz`, `_ptds`), each its own record type in the schema;
//! - the typed C signature, each argument annotated with what it records (`= field` for a value,
//!   `=> field` for an out-pointer read after the call, nothing when it is not recorded);
//! - an optional non-status return type (`-> T`: the call then records no `result`);
//! - its record [shape](shapes): the ordered, typed fields of its events;
//! - its [`Kind`] (what it does, for capture and replay alike) and flags (`ordered`: runs and is
//!   recorded under the capture's cross-thread ordering lock);
//! - optionally `=> custom_fn`: a function of the capture crate, for a call that needs more
//!   than copying arguments into its shape. It receives the row's arguments as one struct
//!   (`args::Op`, generated from the row: `fn module_load(h, a: args::ModuleLoad, call)`), or
//!   with `=> custom_fn(..)` one by one (a function several rows or both APIs share, whose
//!   rows' arguments differ in type); the custom function makes the real call itself
//!   (`call()`), so it can act before it;
//! - or optionally `after after_fn`: a function of the capture crate run once the real call
//!   returned, with the row's arguments and the call's status (`fn mem_free(h, a:
//!   args::MemFree, r)`), for a call that needs logic only after it (most do).
//!
//! The tables are "X-macros": `cuda_calls!(m)` expands to `m! { rows }`, so each consumer
//! generates what it needs from the same rows. This crate generates the [`cuda::Op`] and
//! [`hip::Op`] enums, the name look-ups and the schema records ([`cuda::schema`],
//! [`hip::schema`]); `hrr-capture` generates the exported wrappers, their typed real-function
//! slots and the payload writers; `hrr-playback` reads events back into the same shapes, so no
//! field name is spelled twice.
//!
//! Adding a call is adding a row (and a shape if no existing one fits).

#![deny(missing_docs)]

pub mod cuda;
pub mod handles;
pub mod hip;
mod kind;
pub mod shapes;
pub mod wire;

pub use kind::Kind;
pub use shapes::Shape;
pub use wire::FieldError;

/// Generates, from a call table, an API's operation enum, its name look-ups and its schema.
/// Used by the API modules of this crate; the rows' C types are matched but not expanded.
#[doc(hidden)]
#[macro_export]
macro_rules! define_api {
    (
        api: $api:expr, version: $version:expr;
        $(
            $(#[$meta:meta])*
            $op:ident [$($export:ident),+ $(,)?] $sig:tt $(-> $ret:ty)?
                : $shape:ident, $kind:ident $(, $flag:ident)* $(=> $custom:ident $(($($each:tt)*))?)?
                $(after $after:ident)? ;
        )*
    ) => {
        /// One operation of the API: every exported ABI variant of one call.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Op {
            $( $(#[$meta])* #[doc = concat!($("`", stringify!($export), "` "),+)] $op, )*
        }

        /// Every exported name with its operation, in record-type order (record type = index + 1).
        pub const EXPORTS: &[(&str, Op)] = &[ $( $( (stringify!($export), Op::$op), )+ )* ];

        impl Op {
            /// The operation an exported name performs.
            pub fn from_name(name: &str) -> Option<Op> {
                EXPORTS.iter().find(|(n, _)| *n == name).map(|&(_, op)| op)
            }

            /// What the call does.
            pub fn kind(self) -> $crate::Kind {
                match self { $( Op::$op => $crate::Kind::$kind, )* }
            }

            /// Whether capture runs and records the call under its cross-thread ordering lock.
            pub fn ordered(self) -> bool {
                match self { $( Op::$op => $crate::has_flag!(ordered; $($flag)*), )* }
            }

            /// Fields of the call's events (after `result`, when it has one).
            pub fn fields(self) -> &'static [(&'static str, $crate::wire::FieldType)] {
                match self { $( Op::$op => <$crate::shapes::$shape as $crate::Shape>::FIELDS, )* }
            }

            /// Whether the call returns a status, recorded as its first field `result`.
            pub fn has_result(self) -> bool {
                match self { $( Op::$op => $crate::returns_status!($($ret)?), )* }
            }
        }

        /// The schema record describing every call of the table.
        pub fn schema() -> ::hrr_archive::schema::Schema {
            let calls = EXPORTS
                .iter()
                .enumerate()
                .map(|(i, &(name, op))| $crate::call_def(i, name, op.kind(), op.has_result(), op.fields()))
                .collect();
            ::hrr_archive::schema::Schema::new($api, $version, calls)
        }
    };
}

/// `true` when the flag list holds `$flag`.
#[doc(hidden)]
#[macro_export]
macro_rules! has_flag {
    ($flag:ident;) => { false };
    (ordered; ordered $($rest:ident)*) => { true };
    ($flag:ident; $other:ident $($rest:ident)*) => { $crate::has_flag!($flag; $($rest)*) };
}

/// `true` for a row without an explicit return type (it returns the API's status).
#[doc(hidden)]
#[macro_export]
macro_rules! returns_status {
    () => {
        true
    };
    ($ret:ty) => {
        false
    };
}

/// One schema entry.
#[doc(hidden)]
pub fn call_def(
    index: usize,
    name: &str,
    kind: Kind,
    has_result: bool,
    fields: &[(&str, wire::FieldType)],
) -> hrr_archive::schema::CallDef {
    use hrr_archive::schema::{CallDef, FieldDef, FieldType};
    let result = has_result.then(|| FieldDef {
        name: "result".into(),
        ty: FieldType::Result,
    });
    CallDef {
        id: index as u16 + 1,
        name: name.into(),
        class: kind.schema_class(),
        fields: result
            .into_iter()
            .chain(
                fields
                    .iter()
                    .map(|&(n, ty)| FieldDef { name: n.into(), ty }),
            )
            .collect(),
    }
}
