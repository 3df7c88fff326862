//! # libhrr_capture.so
//!
//! An `LD_PRELOAD` library that records every CUDA driver API call (or HIP runtime API call) a
//! program makes, with the host buffers and GPU code it needs, into an hrr archive. Capture is
//! on when `HIP_HRR_CAPTURE_OUTPUT` (or `HRR_CAPTURE_OUTPUT`) names the archive; otherwise, and
//! in setuid programs, the library only forwards.
//!
//! Where a call lives: it is declared once, as a row of its API's table in
//! `crates/hrr-calls/src/<api>/table.rs`; [`define_exports!`] turns the row into the exported
//! wrapper in [`api::cuda::calls`] / [`api::hip::calls`]; rows that need logic name a function
//! in `api/<api>/custom/`. Layers, bottom up: [`hook`] (the wrapper core: guard, ordering lock,
//! argument helpers, `dlsym`) → [`api`] (one module per API, all of the same layout) →
//! [`recorder`] (archive writing through hrr-archive; knows no API). An archive records the API
//! its process called first. Nothing panics across FFI: recording runs under `catch_unwind`, and
//! a recording failure stops capture (archive marked incomplete) while the program runs on.

pub mod api;
pub mod blobq;
pub mod crash;
pub mod elf;
pub mod fingerprint;
pub mod hook;
pub mod hot;
pub mod recorder;
pub mod signals;
pub mod stamp;
pub mod warm;

extern "C" fn on_load() {
    hook::dlsym::prime();
    recorder::init_from_env();
    if recorder::active() {
        warm::page_in_own_code();
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
