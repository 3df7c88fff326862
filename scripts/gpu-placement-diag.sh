#!/usr/bin/env bash
# Which part of capture's digest-kernel load slows tf32TensorCoreGemm on an H100, in one GPU run
# (it found the module's constant data, seventeenth session; kept to check a changed digest.cu):
#
#   bash scripts/gpu-placement-diag.sh SAMPLES_DIR BIN_DIR OUT_DIR
#
# SAMPLES_DIR is a checkout (or `git archive` export) of NVIDIA/cuda-samples; BIN_DIR holds
# hrr-capture and libhrr_capture.so. The sample is built as its CMake builds it (`-rdc=true`;
# tf32's kernel: 255 registers, 1,288 bytes of local memory a thread), with one line added after it allocates
# its matrices: `hrr_inject()`, which does what `HRR_INJECT` names (comma-separated), each
# standing for one part of what capture does when it loads its kernels (at the program's first
# event record after a large allocation, i.e. there):
#   mallocN      cuMemAlloc of N MiB (the sixteenth session: 1 or 2 MiB slowed the kernel
#                from 25.2-25.7 to 23.9-24.2 TFLOPS; 32 or 64 MiB: 24.6-25.1; a small
#                allocation there, as a module's constant bank is, moves the kernel's data)
#   code         a module of one empty kernel, loaded and launched (no loss)
#   const        a module with 384 bytes of `.const` data, its kernel launched (capture's
#                module had its XXH3 secret there: **the cause**, seventeenth session, H100:
#                23.8-24.2 against plain 25.1-25.7; the secret is a kernel parameter since)
#   lmem         a kernel using 64 bytes of local memory a thread (as capture's hrr_fingerprint
#                did until then), launched (no loss)
#   stream       a non-blocking stream (no loss); host: 2 MiB of mapped pinned memory (no loss)
#   digest-load  capture's own module (crates/hrr-capture/gpu/digest.ptx) loaded;
#   digest-warm / fingerprint-warm  that module's hrr_digest / hrr_fingerprint launched once
#                over nothing, as capture's warm-up does
# Each round runs the sample plain, captured, captured with HRR_CAPTURE_DIGEST_PRELOAD=0 (the
# kernels load at the first large result, after the sample's kernel), captured with
# HRR_CAPTURE_ASYNC_DIGESTS=0 (no 2 MiB of mapped pinned buffers for pending results:
# cudaTensorCoreGemm gave 0.839 with them, 0.989 without, in one sixteenth-session run), then plain with each
# injection, and prints one line of TFLOPS (and each injected kernel's local bytes a thread on
# stderr, inject.err). Environment: HRR_DIAG_REPS (3), CUDA_MODULE_LOADING (EAGER here),
# HRR_PLACEMENT_SAMPLE (tf32TensorCoreGemm; cudaTensorCoreGemm or bf16TensorCoreGemm: all three
# allocate A, B, C, D; always built with `-rdc=true`, as tf32's and cudaTensorCoreGemm's CMake
# files ask),
# HRR_PLACEMENT_CASES (the injections, space-separated; default all of the above),
# HRR_PLACEMENT_PTX (a PTX file of capture's kernels, e.g. from an edited digest.cu: one more
# captured column with HRR_CAPTURE_DIGEST_PTX set to it).
# Output: OUT_DIR/placement.txt. Exit 0 with a SKIP line without a GPU.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
samples_args "${BASH_SOURCE[0]}" "$@"
skip_without_gpu gpu-placement-diag "$OUT/placement.txt"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPS=${HRR_DIAG_REPS:-3}
CASES=${HRR_PLACEMENT_CASES:-malloc2 malloc32 code const lmem stream host digest-load digest-warm fingerprint-warm}
export CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}
n=${HRR_PLACEMENT_SAMPLE:-tf32TensorCoreGemm}
src=$SAMPLES/Samples/3_CUDA_Features/$n
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { echo "[gpu-placement-diag] $*" | tee -a "$OUT/placement.txt"; }

cat >"$work/hrr-inject.h" <<'EOF'
// Device work injected after the sample's matrices: HRR_INJECT=kind[,kind] (scripts/gpu-placement-diag.sh).
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#define HRR_PTX_HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"
static const char hrr_code_ptx[] = HRR_PTX_HEAD ".visible .entry hrr_k() { ret; }\n";
static const char hrr_const_ptx[] = HRR_PTX_HEAD
    ".const .align 8 .b8 K[384];\n"
    ".visible .entry hrr_k() {\n .reg .b64 %rd<3>;\n .reg .b32 %r<3>;\n .reg .pred %p<2>;\n"
    " mov.u32 %r1, %tid.x;\n and.b32 %r2, %r1, 31;\n mul.wide.u32 %rd1, %r2, 8;\n"
    " ld.const.u64 %rd2, [K];\n add.u64 %rd2, %rd2, %rd1;\n setp.eq.u64 %p1, %rd2, 12345;\n"
    " @%p1 trap;\n ret;\n}\n";
static const char hrr_lmem_ptx[] = HRR_PTX_HEAD
    ".visible .entry hrr_k() {\n .local .align 8 .b8 depot[64];\n .reg .b64 %rd<6>;\n"
    " .reg .b32 %r<3>;\n .reg .pred %p<2>;\n mov.u32 %r1, %tid.x;\n and.b32 %r2, %r1, 7;\n"
    " mul.wide.u32 %rd1, %r2, 8;\n mov.u64 %rd2, depot;\n add.u64 %rd3, %rd2, %rd1;\n"
    " st.local.u64 [%rd3], %rd1;\n xor.b32 %r2, %r2, 5;\n mul.wide.u32 %rd4, %r2, 8;\n"
    " add.u64 %rd4, %rd2, %rd4;\n ld.local.u64 %rd5, [%rd4];\n setp.eq.u64 %p1, %rd5, 12345;\n"
    " @%p1 trap;\n ret;\n}\n";
static void hrr_say(const char *what, CUresult r) { fprintf(stderr, "inject %s -> %d\n", what, (int)r); }
// Load `ptx`, launch `name` (one block of 32 threads, `params`), print its local bytes.
static void hrr_launch(const char *what, const char *ptx, const char *name, void **params) {
  CUmodule m;
  CUfunction f;
  int local = -1;
  CUresult r = cuModuleLoadData(&m, ptx);
  if (!r) r = cuModuleGetFunction(&f, m, name);
  if (!r) cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
  if (!r) r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, nullptr);
  if (!r) r = cuCtxSynchronize();
  fprintf(stderr, "inject %s: %s local %d bytes -> %d\n", what, name, local, (int)r);
}
static void hrr_inject() {
  const char *v = getenv("HRR_INJECT");
  if (!v) return;
  std::string all(v), k;
  std::stringstream list(all);
  while (std::getline(list, k, ',')) {
    if (k.rfind("malloc", 0) == 0) {
      CUdeviceptr p;
      hrr_say(k.c_str(), cuMemAlloc(&p, (size_t)atoi(k.c_str() + 6) << 20));
    } else if (k == "code") {
      hrr_launch("code", hrr_code_ptx, "hrr_k", nullptr);
    } else if (k == "const") {
      hrr_launch("const", hrr_const_ptx, "hrr_k", nullptr);
    } else if (k == "lmem") {
      hrr_launch("lmem", hrr_lmem_ptx, "hrr_k", nullptr);
    } else if (k == "stream") {
      CUstream s;
      hrr_say("stream", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    } else if (k == "host") {
      void *p;
      hrr_say("host", cuMemHostAlloc(&p, 2 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
    } else if (k.rfind("digest-", 0) == 0 || k == "fingerprint-warm") {
      // capture's module; the warm-ups as capture launches them: (out, 0 words, out)
      std::ifstream in(getenv("HRR_DIGEST_PTX") ? getenv("HRR_DIGEST_PTX") : "");
      std::stringstream text;
      text << in.rdbuf();
      std::string ptx = text.str();
      void *host;
      CUdeviceptr out = 0;
      unsigned long long zero = 0;
      if (cuMemHostAlloc(&host, 4 << 20, CU_MEMHOSTALLOC_DEVICEMAP) || cuMemHostGetDevicePointer(&out, host, 0)) {
        hrr_say(k.c_str(), CUDA_ERROR_UNKNOWN);
        continue;
      }
      CUdeviceptr second = out + (2 << 20);
      unsigned long long secret[24] = {0}; // (hrr_fingerprint's 4th parameter; no chunks read)
      void *params[] = {&out, &zero, k == "fingerprint-warm" ? &second : &out, secret};
      if (k == "digest-load") {
        CUmodule m;
        hrr_say("digest-load", ptx.empty() ? CUDA_ERROR_FILE_NOT_FOUND : cuModuleLoadData(&m, ptx.c_str()));
      } else {
        hrr_launch(k.c_str(), ptx.c_str(), k == "digest-warm" ? "hrr_digest" : "hrr_fingerprint", params);
      }
    }
  }
}
EOF
awk 'NR == 1 { print "#include \"hrr-inject.h\"" }
     { print }
     /cudaMalloc\(.*&D[),]/ { print "hrr_inject();" }' "$src/$n.cu" >"$work/$n.cu"
if ! grep -q '^hrr_inject();' "$work/$n.cu"; then
    log "no cudaMalloc of D found in $src/$n.cu: nothing to inject after"
    exit 1
fi
if ! nvcc -O3 -DNDEBUG -std=c++17 -rdc=true "--generate-code=arch=compute_90,code=[compute_90,sm_90]" \
    -I"$src" -I"$SAMPLES/Common" -o "$work/$n" "$work/$n.cu" -lcuda >"$OUT/build.log" 2>&1; then
    log "build failed (build.log)"
    exit 1
fi
export HRR_DIGEST_PTX=$root/crates/hrr-capture/gpu/digest.ptx
tflops() { awk '/^TFLOPS/ { t = $2 } END { printf "%s", (t == "" ? "?" : t) }'; }
captured() {
    (cd "$work" && rm -rf c.hrr && env "$@" "$BIN/hrr-capture" -o c.hrr -- "./$n" 2>&1 | tflops)
}
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING"
for i in $(seq "$REPS"); do
    line="run $i: plain $(cd "$work" && "./$n" 2>&1 | tflops)"
    line+=" captured $(captured HRR_CAPTURE_DIGEST_PRELOAD=1)"
    line+=" captured-at-result $(captured HRR_CAPTURE_DIGEST_PRELOAD=0)"
    line+=" captured-async-digests-off $(captured HRR_CAPTURE_ASYNC_DIGESTS=0)"
    [ -z "${HRR_PLACEMENT_PTX:-}" ] ||
        line+=" captured-with-that-ptx $(captured HRR_CAPTURE_DIGEST_PTX="$HRR_PLACEMENT_PTX")"
    for c in $CASES; do
        line+=" | $c $(cd "$work" && HRR_INJECT=$c "./$n" 2>>"$OUT/inject.err" | tflops)"
    done
    log "$line"
done
sort -u "$OUT/inject.err" | tee -a "$OUT/placement.txt"
