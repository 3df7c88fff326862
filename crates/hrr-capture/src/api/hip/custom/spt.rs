//! The per-thread default stream forms of the recorded calls (`*_spt`): a program built with
//! `-fgpu-default-stream=per-thread` calls them instead of the plain ones, for every stream call
//! (its `<<<>>>` launches, copies and synchronisations). Each has a table row of its own
//! (appended: record types never move) whose custom function is the plain call's, given the
//! same arguments; replay treats each as the call it stands for (their null stream, the
//! thread's own stream, replays as the null stream, which orders more, never less).

#![allow(clippy::missing_safety_doc)]

use super::*;
use crate::api::hip::calls::{args, Export};
use hrr_calls::hip::ffi::HipError;

/// `$spt`, the per-thread form of `$base`: the plain call's custom function (or, under
/// `after:`, its after-function) on the same arguments (the two rows' argument structs have the
/// same fields).
macro_rules! per_thread {
    (call: $($spt:ident($args:ident) => $base:ident($base_args:ident { $($f:ident),* });)*) => {$(
        pub unsafe fn $spt(h: Export, a: args::$args, call: impl Call) -> HipError {
            $base(h, args::$base_args { $($f: a.$f),* }, call)
        }
    )*};
    (after: $($spt:ident($args:ident) => $base:ident($base_args:ident { $($f:ident),* });)*) => {$(
        pub unsafe fn $spt(h: Export, a: args::$args, r: HipError) {
            $base(h, args::$base_args { $($f: a.$f),* }, r)
        }
    )*};
}

per_thread! {
    call:
    stream_begin_capture_spt(StreamBeginCaptureSpt) => stream_begin_capture(StreamBeginCapture { s, mode });
    memcpy_spt(MemcpySpt) => memcpy(Memcpy { dst, src, n, kind });
    memcpy_to_symbol_spt(MemcpyToSymbolSpt) => memcpy_to_symbol(MemcpyToSymbol { symbol, src, n, offset, kind });
    memcpy_from_symbol_spt(MemcpyFromSymbolSpt) => memcpy_from_symbol(MemcpyFromSymbol { dst, symbol, n, offset, kind });
    memcpy_2d_spt(Memcpy2DSpt) => memcpy_2d(Memcpy2D { dst, dpitch, src, spitch, width, height, kind });
    memcpy_2d_async_spt(Memcpy2DAsyncSpt) => memcpy_2d_async(Memcpy2DAsync { dst, dpitch, src, spitch, width, height, kind, stream });
    memcpy_from_symbol_async_spt(MemcpyFromSymbolAsyncSpt) => memcpy_from_symbol_async(MemcpyFromSymbolAsync { dst, symbol, n, offset, kind, stream });
    memcpy_to_symbol_async_spt(MemcpyToSymbolAsyncSpt) => memcpy_to_symbol_async(MemcpyToSymbolAsync { symbol, src, n, offset, kind, stream });
}

per_thread! {
    after:
    memset_bytes_spt(MemsetSpt) => memset_bytes(Memset { dst, v, n });
    memset_bytes_async_spt(MemsetAsyncSpt) => memset_bytes_async(MemsetAsync { dst, v, n, stream });
    launch_cooperative_spt(LaunchCooperativeKernelSpt) => launch_cooperative(LaunchCooperativeKernel { f, grid, block, args, shmem, stream });
    launch_kernel_spt(LaunchKernelSpt) => launch_kernel(LaunchKernel { f, grid, block, args, shmem, stream });
    graph_launch_spt(GraphLaunchSpt) => graph_launch(GraphLaunch { exec, s });
    stream_end_capture_spt(StreamEndCaptureSpt) => stream_end_capture(StreamEndCapture { s, g });
}
