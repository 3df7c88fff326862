//! The pieces of the `hrr-capture` launcher binary (not part of `libhrr_capture.so`).

pub mod cli;
pub mod exec;
pub mod fail;
pub mod output;
