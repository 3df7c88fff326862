#!/bin/sh
# Build the fake CUDA driver and its test programs.
#   tests/fake-cuda/build.sh OUTDIR
# produces OUTDIR/libcuda.so.1 (+ libcuda.so symlink), OUTDIR/driver_app,
# OUTDIR/direct_app and OUTDIR/copy_app.  Run the apps with LD_LIBRARY_PATH=OUTDIR.  Silent on
# success; honours $CC (default cc) and extra $CFLAGS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../fake-common/build-setup.sh"

$cc $flags -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" "$here"/fake_cuda_*.c -ldl -lpthread
ln -sf libcuda.so.1 "$out/libcuda.so"
$cc $flags -o "$out/driver_app" "$here/apps/driver_app.c" -ldl -lpthread
$cc $flags -o "$out/direct_app" "$here/apps/direct_app.c" -L"$out" -lcuda -ldl -lpthread
$cc $flags -o "$out/copies_app" "$here/apps/copies_app.c" -L"$out" -lcuda
$cc $flags -o "$out/hostmem_app" "$here/apps/hostmem_app.c" -L"$out" -lcuda -ldl -lpthread
$cc $flags -o "$out/copy_app" "$here/apps/copy_app.c" -L"$out" -lcuda -lpthread
$cc $flags -o "$out/ipc_app" "$here/apps/ipc_app.c" -L"$out" -lcuda
$cc $flags -o "$out/shareable_app" "$here/apps/shareable_app.c" -L"$out" -lcuda
$cc $flags -o "$out/tma_app" "$here/apps/tma_app.c" -L"$out" -lcuda
