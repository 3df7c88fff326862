#!/bin/sh
# Build the fake HIP runtime and, when hipcc is installed, the HIP test programs.
#   tests/fake-hip/build.sh OUTDIR
# produces OUTDIR/libamdhip64.so.5 (+ libamdhip64.so link), OUTDIR/libplugin.so and
# OUTDIR/plugin_host with cc, then with hipcc
# OUTDIR/vector_add, OUTDIR/vector_add_spt (built with -fgpu-default-stream=per-thread),
# OUTDIR/module_launch, OUTDIR/streams, OUTDIR/graph and OUTDIR/kernels.co (the code
# object module_launch loads). Run the programs with LD_LIBRARY_PATH=OUTDIR for the fake,
# without it for the real runtime. Exit status 3: the fake was built but hipcc is missing, so
# the programs were not. Silent on success; honours $CC, $CFLAGS, $HIPCC and $HIP_ARCHS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../fake-common/build-setup.sh"

$cc $flags -shared -fPIC -Wl,-soname,libamdhip64.so.5 -Wl,--version-script="$here/fake_hip.map" \
  -o "$out/libamdhip64.so.5" "$here"/fake_hip_*.c -lpthread
ln -sf libamdhip64.so.5 "$out/libamdhip64.so"
# A plugin linked against the runtime, loaded RTLD_LOCAL by a host program (C: no hipcc needed).
$cc $flags -shared -fPIC -o "$out/libplugin.so" "$here/apps/plugin.c" -L"$out" -l:libamdhip64.so.5
$cc $flags -o "$out/plugin_host" "$here/apps/plugin_host.c" -ldl

hipcc=${HIPCC:-hipcc}
if ! command -v "$hipcc" >/dev/null 2>&1; then
  echo "$0: hipcc not found; the HIP test programs were not built" >&2
  exit 3
fi
# Always name the targets: without them hipcc silently builds for gfx803.
archs=${HIP_ARCHS:-gfx90a gfx1030}
offload=""
for a in $archs; do offload="$offload --offload-arch=$a"; done
# -ffp-contract=off: no fused multiply-add, so the device code computes what the fake's CPU
# kernels compute.
hflags="-O2 -ffp-contract=off $offload"
for app in vector_add module_launch streams graph; do
  $hipcc $hflags -o "$out/$app" "$here/apps/$app.hip"
done
# The same program built with the per-thread default stream: it calls the `*_spt` forms.
$hipcc $hflags -fgpu-default-stream=per-thread -o "$out/vector_add_spt" "$here/apps/vector_add.hip"
$hipcc $hflags --genco -o "$out/kernels.co" "$here/apps/kernels.hip"
