#!/usr/bin/env bash
# Regenerate crates/hrr-capture/gpu/digest.ptx from digest.cu (needs nvcc; the PTX is
# committed so that building hrr needs no CUDA toolkit). PTX for compute_75, the oldest
# architecture CUDA 13 compiles for; the driver compiles it for the GPU at first use. nvcc 13
# writes PTX ISA 9.0, which drivers before CUDA 13 refuse; the kernel uses nothing newer than
# ISA 6.3 (shfl.sync, sm_75), so the file declares 7.0 (CUDA 11.0 drivers on).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)/crates/hrr-capture/gpu"
nvcc -ptx -arch=compute_75 -O3 -o "$here/digest.ptx" "$here/digest.cu"
sed -i 's/^\.version .*/.version 7.0/' "$here/digest.ptx"
echo "wrote $here/digest.ptx"
