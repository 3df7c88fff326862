//! Capture (in progress).
