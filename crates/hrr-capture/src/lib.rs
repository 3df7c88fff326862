//! # libhrr_capture.so
//!
//! An `LD_PRELOAD` library that records every CUDA driver API call (or HIP runtime API call) a
//! program makes, with the host buffers and GPU code it needs, into an hrr archive. Capture is on when
//! `HIP_HRR_CAPTURE_OUTPUT` (or `HRR_CAPTURE_OUTPUT`) names the archive; otherwise, and in
//! setuid programs, the library only forwards.
//!
//! Layers, bottom up: [`ffi`] (the real driver and glibc's dlsym) → [`hooks`] (one wrapper per
//! driver entry point) → [`recorder`] (archive writing through hrr-archive). [`interpose`] is how
//! calls reach the hooks. [`hip`] is the same for the HIP runtime (`libamdhip64.so`); an archive
//! records the API its process called first. Nothing panics across FFI: recording runs under `catch_unwind`, and a
//! recording failure stops capture (archive marked incomplete) while the program runs on.

pub mod ffi;
pub mod hip;
pub mod hooks;
pub mod image;
pub mod interpose;
pub mod metadata;
pub mod recorder;
pub mod signals;

extern "C" fn on_load() {
    interpose::prime();
    recorder::init_from_env();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
