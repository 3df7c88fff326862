#!/usr/bin/env bash
# Regenerate crates/hrr-capture/gpu/digest.ptx from digest.cu (needs nvcc; the PTX is
# committed so that building hrr needs no CUDA toolkit). PTX for compute_75, the oldest
# architecture CUDA 13 compiles for; the driver compiles it for the GPU at first use.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)/crates/hrr-capture/gpu"
nvcc -ptx -arch=compute_75 -O3 -o "$here/digest.ptx" "$here/digest.cu"
echo "wrote $here/digest.ptx"
