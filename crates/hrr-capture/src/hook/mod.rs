//! The hook core shared by every API: how one row of a call table (`hrr_calls::cuda_calls!`,
//! `hrr_calls::hip_calls!`) becomes an exported wrapper.
//!
//! [`define_exports!`] expands a table into, per API module: the `Export` enum (one variant per
//! exported name; record type = index + 1), `NAMES`, the lazily resolved real entry points
//! (`real_ptr`, `set_real`), `find` and `wrapper` for the interposers, and one
//! `#[no_mangle] extern "C"` wrapper per export. A wrapper:
//!
//! 1. resolves the real entry point of its export (or returns the API's "not found");
//! 2. forwards only, when capture is off or the thread is already inside a hook (the runtime
//!    calling its own exports, or the recorder calling the driver) — see [`guard`];
//! 3. otherwise, under the cross-thread ordering lock when the row says `ordered`, calls the
//!    real function and records the row's shape: filled from the annotated arguments (`= field`,
//!    `=> field`), by the row's custom function (`=> f`), which receives the typed arguments and a
//!    closure making the real call, or by its after-function (`after f`), which receives the
//!    typed arguments and the call's status once the wrapper made the call;
//! 4. before a call that can block (synchronisation, D2H copies) and after a synchronisation,
//!    hands buffered events to the kernel (a hang or a kill loses nothing recorded before);
//!    a synchronisation is recorded after the async D2H results still being recorded;
//! 5. with `HRR_CAPTURE_PROFILE` set, counts its calls and time ([`profile`]).

pub mod args;
pub mod common;
pub mod dlsym;
pub mod forward;
pub mod guard;
pub mod launch;
pub mod offer;
pub mod pitched;
pub mod profile;
pub mod record;
pub mod results;

pub use record::{after, before, before_real_call, record, record_written, returned};

/// A wrapper's work once inside (capture on, not re-entered): the profile's clock (export
/// `index` of the table `names`), [`before`], `body` (the real call and its recording) under
/// the cross-thread ordering lock when `ordered`, then [`after`].
#[inline(always)]
pub fn around<R>(
    kind: hrr_calls::Kind,
    ordered: bool,
    (names, index): (&'static [&'static std::ffi::CStr], usize),
    body: impl FnOnce() -> R,
) -> R {
    let t0 = profile::start();
    before(kind);
    let r = guard::ordered(ordered, || {
        let r = body();
        after(kind);
        r
    });
    profile::end(names, index, t0);
    r
}

/// What a wrapper returns when the real entry point is missing.
pub trait Missing {
    /// The value.
    fn missing() -> Self;
}

impl Missing for std::ffi::c_int {
    /// `CUDA_ERROR_NOT_FOUND` and `hipErrorNotFound` are both 500.
    fn missing() -> Self {
        500
    }
}

impl<T> Missing for *mut T {
    fn missing() -> Self {
        std::ptr::null_mut()
    }
}

impl Missing for () {
    fn missing() -> Self {}
}

/// What every generated `Export` enum offers shared code (the hook core, custom functions
/// common to several APIs).
pub trait ApiExport: Copy + Eq + Send + Sync + 'static {
    /// Record type of the export.
    fn id(self) -> u16;
    /// Exported name.
    fn name(self) -> &'static std::ffi::CStr;
    /// The name of the export's row (its first export), for manifest notes.
    fn base_name(self) -> &'static str;
    /// The API the export belongs to.
    fn api() -> &'static crate::api::ApiDef;
}

/// A `&'static CStr` of an identifier.
#[doc(hidden)]
#[macro_export]
macro_rules! cstr_of {
    ($name:ident) => {
        match ::std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("export name"),
        }
    };
}

/// The name of the first of two identifiers (repeats a row's first export once per other one).
#[doc(hidden)]
#[macro_export]
macro_rules! name_of_first {
    ($first:ident, $other:ident) => {
        stringify!($first)
    };
}

/// The return type of a row: its explicit one, else the API status (`c_int`).
#[doc(hidden)]
#[macro_export]
macro_rules! ret_or_status {
    () => {
        ::std::ffi::c_int
    };
    ($ret:ty) => {
        $ret
    };
}

/// Expand a call table into exported wrappers (see the module docs). Invoked by each API's
/// `calls.rs` as `hrr_calls::cuda_calls!(define_exports; resolve: …, api: …, custom: …;)`,
/// naming the API's resolver, its [`crate::api::ApiDef`] and its custom-function module ahead
/// of the rows.
#[macro_export]
macro_rules! define_exports {
    (
        resolve: $resolve:path, api: $api:expr, custom: $cmod:ident;
        $(
            $(#[$meta:meta])*
            $op:ident [$first:ident $(, $more:ident)* $(,)?] $sig:tt $(-> $ret:ty)?
                : $shape:ident, $kind:ident $(, $flag:ident)* $(=> $custom:ident $(($($each:tt)*))?)?
                $(after $after:ident)? ;
        )*
    ) => {
        /// The typed arguments of each row (named after its operation), as the row's custom
        /// function receives them.
        #[allow(non_snake_case, dead_code, unused_imports)]
        pub mod args {
            use super::*;
            $( $crate::define_exports!(@args $op $sig); )*
        }

        /// One variant per exported name, in table order (record type = index + 1).
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u16)]
        pub enum Export { $($first, $($more,)*)* }

        impl $crate::hook::ApiExport for Export {
            #[inline]
            fn id(self) -> u16 {
                self as u16 + 1
            }
            fn name(self) -> &'static ::std::ffi::CStr {
                NAMES[self as usize]
            }
            fn base_name(self) -> &'static str {
                BASE_NAMES[self as usize]
            }
            fn api() -> &'static $crate::api::ApiDef {
                $api
            }
        }

        /// Exported names, by export index.
        pub const NAMES: &[&::std::ffi::CStr] = &[$(
            $crate::cstr_of!($first), $($crate::cstr_of!($more),)*
        )*];

        /// The name of each export's row (its first export: `cuLaunchKernel` for
        /// `cuLaunchKernel_ptsz`), for messages that should not depend on the ABI variant.
        const BASE_NAMES: &[&str] = &[$( stringify!($first), $($crate::name_of_first!($first, $more),)* )*];

        /// Real entry points, resolved on first use or set by the interposers.
        static REAL: [::std::sync::atomic::AtomicPtr<::std::ffi::c_void>; NAMES.len()] =
            [const { ::std::sync::atomic::AtomicPtr::new(::std::ptr::null_mut()) }; NAMES.len()];

        /// The export named `name`, if any (no allocation: used inside `dlsym`).
        pub fn find(name: &[u8]) -> Option<usize> {
            NAMES.iter().position(|n| n.to_bytes() == name)
        }

        /// Our wrapper of export `i`.
        pub fn wrapper(i: usize) -> *mut ::std::ffi::c_void {
            const W: &[*const ()] = &[$($first as *const (), $($more as *const (),)*)*];
            W[i] as *mut ::std::ffi::c_void
        }

        /// The real entry point of export `i`, resolved on first use.
        pub fn real_ptr(i: usize) -> *mut ::std::ffi::c_void {
            use ::std::sync::atomic::Ordering;
            let p = REAL[i].load(Ordering::Acquire);
            if !p.is_null() {
                return p;
            }
            let p = $resolve(NAMES[i]);
            if !p.is_null() {
                REAL[i].store(p, Ordering::Release);
            }
            p
        }

        /// Set export `i`'s real entry point to what the driver or runtime handed out.
        pub fn set_real(i: usize, p: *mut ::std::ffi::c_void) {
            if !p.is_null() {
                REAL[i].store(p, ::std::sync::atomic::Ordering::Release);
            }
        }

        /// The real entry point of `h`, typed.
        ///
        /// # Safety
        /// `F` must be `h`'s C signature.
        pub unsafe fn real_fn<F: Copy>(h: Export) -> Option<F> {
            let p = real_ptr(h as usize);
            (!p.is_null()).then(|| ::std::mem::transmute_copy::<*mut ::std::ffi::c_void, F>(&p))
        }

        $(
            $crate::define_exports!(@row $api, $cmod;
                $op [$first $(, $more)*] $sig [$($ret)?] $shape $kind [$($flag)*] [$($custom $(($($each)*))?)?]
                [$($after)?]);
        )*
    };

    (@invoke $f:path, $h:expr, $op:ident [$($arg:ident)*] [] $call:expr) => {
        $f($h, args::$op { $($arg,)* }, $call)
    };
    (@invoke $f:path, $h:expr, $op:ident [$($arg:ident)*] [$each:tt] $call:expr) => {
        $f($h, $($arg,)* $call)
    };

    (@args $op:ident ($($arg:ident : $ty:ty $(= $fin:ident)? $(=> $fout:ident)?),* $(,)?)) => {
        #[derive(Clone, Copy)]
        pub struct $op { $(pub $arg: $ty,)* }
    };

    (@row $api:expr, $cmod:ident; $op:ident [$($export:ident),+] $sig:tt $ret:tt $shape:ident
        $kind:ident $flags:tt $custom:tt $after:tt) => {
        $(
            $crate::define_exports!(@fn $api, $cmod; $op $export $sig $ret $shape $kind $flags $custom $after);
        )+
    };

    // A row recorded from its annotated arguments.
    (@fn $api:expr, $cmod:ident; $op:ident $export:ident
        ($($arg:ident : $ty:ty $(= $fin:ident)? $(=> $fout:ident)?),* $(,)?)
        [] $shape:ident $kind:ident $flags:tt [] []) => {
        $crate::define_exports!(@wrapper $export ($($arg: $ty),*) [] $kind $flags |real| {
            $crate::hook::before_real_call();
            let r = $crate::hook::profile::driver(|| real($($arg),*));
            $crate::hook::returned(::hrr_calls::Kind::$kind);
            $crate::hook::record($api, $crate::hook::ApiExport::id(Export::$export), Some(r), |_| ::hrr_calls::shapes::$shape {
                $( $($fin: $crate::hook::args::field($arg),)? $($fout: $crate::hook::args::out_field($arg),)? )*
            });
            r
        });
    };

    // A row recorded by its custom function: it receives the row's `args` struct, or with
    // `=> name(..)` (a function several rows or APIs share) the arguments one by one, and
    // makes the real call itself.
    (@fn $api:expr, $cmod:ident; $op:ident $export:ident
        ($($arg:ident : $ty:ty $(= $fin:ident)? $(=> $fout:ident)?),* $(,)?)
        $ret:tt $shape:ident $kind:ident $flags:tt [$custom:ident $($each:tt)?] []) => {
        $crate::define_exports!(@wrapper $export ($($arg: $ty),*) $ret $kind $flags |real| {
            $crate::define_exports!(@invoke $cmod::$custom, Export::$export, $op [$($arg)*] [$($each)?]
                move || {
                    $crate::hook::before_real_call();
                    $crate::hook::profile::driver(|| real($($arg),*))
                })
        });
    };

    // A row whose after-function runs once the wrapper made the real call: it receives the
    // row's `args` struct and the call's status (or return value).
    (@fn $api:expr, $cmod:ident; $op:ident $export:ident
        ($($arg:ident : $ty:ty $(= $fin:ident)? $(=> $fout:ident)?),* $(,)?)
        $ret:tt $shape:ident $kind:ident $flags:tt [] [$after:ident]) => {
        $crate::define_exports!(@wrapper $export ($($arg: $ty),*) $ret $kind $flags |real| {
            $crate::hook::before_real_call();
            let r = $crate::hook::profile::driver(|| real($($arg),*));
            $cmod::$after(Export::$export, args::$op { $($arg,)* }, r);
            r
        });
    };

    // The exported wrapper of every row: its real entry point (or the API's "not found"),
    // forwarding only when capture is off or the thread is inside a hook, else `body` (the
    // real call, made through `$real`, and its recording) as [`crate::hook::around`] runs it.
    (@wrapper $export:ident ($($arg:ident : $ty:ty),*) [$($ret:ty)?] $kind:ident [$($flag:ident)*]
        |$real:ident| $body:block) => {
        #[no_mangle]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe extern "C" fn $export($($arg: $ty),*) -> $crate::ret_or_status!($($ret)?) {
            type Ret = $crate::ret_or_status!($($ret)?);
            type Real = unsafe extern "C" fn($($ty),*) -> Ret;
            let p = real_ptr(Export::$export as usize);
            if p.is_null() {
                return <Ret as $crate::hook::Missing>::missing();
            }
            let $real = ::std::mem::transmute::<*mut ::std::ffi::c_void, Real>(p);
            let Some(_inside) = $crate::hook::guard::enter() else {
                return $real($($arg),*);
            };
            let ordered = ::hrr_calls::has_flag!(ordered; $($flag)*);
            $crate::hook::around(::hrr_calls::Kind::$kind, ordered, (NAMES, Export::$export as usize), || $body)
        }
    };
}
