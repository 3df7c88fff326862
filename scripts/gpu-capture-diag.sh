#!/usr/bin/env bash
# Where capture's time goes in the cases issues 16 and 22 still miss, in one GPU run:
#
#   bash scripts/gpu-capture-diag.sh SAMPLES_DIR BIN_DIR OUT_DIR
#
# SAMPLES_DIR is a checkout (or `git archive` export) of NVIDIA/cuda-samples with Samples/ and
# Common/; BIN_DIR holds hrr-capture, hrr-playback and libhrr_capture.so. For
# cudaTensorCoreGemm, bf16TensorCoreGemm and tf32TensorCoreGemm (built with nvcc for sm_90; the
# thirteenth session measured tf32 at 0.94-0.95 of plain, not profiled): plain and captured runs
# alternated, with the runtime's lazy module loading and with CUDA_MODULE_LOADING=EAGER (the
# lazy load falls inside the samples' event-timed region), the captured run's
# HRR_CAPTURE_PROFILE=1 table and its events around the region (`--events`, timestamps in ms).
# Then tests/gpu/transformer.py plain and captured with the profile (its timed steps are
# launches only: the profile's `slow` columns say how much of the launches' added time is
# first calls). transpose (per-kernel times of its eight variants, plain and captured alternated
# 3*REPS times, the first captured run's profile: is its figure capture's cost per launch or noise?).
# Last, what creating a small file costs on the disk the archives go to (a new
# small blob is one file). Everything lands in OUT_DIR and in OUT_DIR/diag.tgz (the device tool
# brings back only a few files: fetch the tarball).
# Environment: HRR_DIAG_REPS (2), HRR_DIAG_STEPS (transformer steps, 50), PYTHON (python3),
# HRR_DIAG_ONLY=REGEX (only the GEMM samples, or transpose, whose name matches, e.g. tf32; the transformer
# and the small-file timing are then left out), HRR_DIAG_PREBUILT=DIR (the samples' binaries
# as scripts/cuda-samples.sh built them, DIR being its OUT_DIR/work, instead of nvcc's: the
# fourteenth session saw tf32 at 0.98 of plain built with nvcc and 0.94 built with CMake),
# HRR_DIAG_REGION=1 (a copy of each sample's source made to print `host region ms`: the host's
# time from its start event to its launch returned, the part of the event-timed region that is
# not the kernel; built with the samples' CMake flags twice, `<name>-rdc` with `-rdc=true` as
# their CMake's CUDA_SEPARABLE_COMPILATION gives, `<name>-nordc` without, the two alternated;
# each run's line then gives it too, and two more plain runs: with 2 MiB of device memory
# allocated before the sample's matrices (`HRR_PAD_BEFORE_MB`), then after them
# (`HRR_PAD_AFTER_MB`): on an H100 the `-rdc` tf32 kernel ran 6% slower with the 2 MiB
# before, as it did captured while capture loaded its digest kernels at the first large
# allocation; on an H200 neither mattered).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
samples_args "${BASH_SOURCE[0]}" "$@"
skip_without_gpu gpu-capture-diag "$OUT/diag.txt"
REPS=${HRR_DIAG_REPS:-2}
STEPS=${HRR_DIAG_STEPS:-50}
PY=${PYTHON:-python3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { echo "[gpu-capture-diag] $*" | tee -a "$OUT/diag.txt"; }
# A GEMM run's figures: `24.51 TFLOPS`, with `(host region 1.42 ms)` when it prints one.
figures() {
    awk '/^TFLOPS/ { t = $2 } /^host region ms/ { r = " (host region " $4 " ms)" }
         END { printf "%s TFLOPS%s", (t == "" ? "?" : t), r }'
}

ONLY=${HRR_DIAG_ONLY:-}
for n in cudaTensorCoreGemm bf16TensorCoreGemm tf32TensorCoreGemm; do
    if [ -n "$ONLY" ] && ! grep -qE "$ONLY" <<<"$n"; then continue; fi
    src=$SAMPLES/Samples/3_CUDA_Features/$n
    variants=("$n")
    if [ "${HRR_DIAG_REGION:-0}" = 1 ]; then
        # the region's host time: a clock read after `cudaEventRecord(start)`, printed before
        # `cudaEventRecord(stop)` (the kernel launches between them are asynchronous); built
        # as the samples' CMake builds it (`-rdc=true`: CUDA_SEPARABLE_COMPILATION) and without
        # separable compilation, the two alternated
        awk 'NR == 1 { print "#include <chrono>\n#include <cstdio>\n#include <cstdlib>" }
             /cudaEventRecord\(stop\)/ { print "printf(\"host region ms %.3f\\n\", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - hrr_t0).count());" }
             /cudaMalloc\(.*&A[),]/ { print "if (getenv(\"HRR_PAD_BEFORE_MB\")) { void *hrr_pad; cudaMalloc(&hrr_pad, (size_t)atoi(getenv(\"HRR_PAD_BEFORE_MB\")) << 20); }" }
             { print }
             /cudaMalloc\(.*&D[),]/ { print "if (getenv(\"HRR_PAD_AFTER_MB\")) { void *hrr_pad; cudaMalloc(&hrr_pad, (size_t)atoi(getenv(\"HRR_PAD_AFTER_MB\")) << 20); }" }
             /cudaEventRecord\(start\)/ { print "auto hrr_t0 = std::chrono::steady_clock::now();" }' \
            "$src/$n.cu" >"$work/hrr-region-$n.cu"
        variants=("$n-rdc" "$n-nordc")
        for v in "${variants[@]}"; do
            rdc=$([ "$v" = "$n-rdc" ] && echo -rdc=true || echo -rdc=false)
            nvcc -lineinfo -O3 -DNDEBUG -std=c++17 --extended-lambda "$rdc" \
                "--generate-code=arch=compute_90,code=[compute_90,sm_90]" -I"$src" -I"$SAMPLES/Common" \
                -o "$work/$v" "$work/hrr-region-$n.cu" >>"$OUT/build-$n.log" 2>&1 ||
                log "$v: build of the region-timed copy failed (build-$n.log)"
        done
    elif [ -n "${HRR_DIAG_PREBUILT:-}" ]; then
        cp "$HRR_DIAG_PREBUILT/3_CUDA_Features_$n/bin/$n" "$work/$n" 2>"$OUT/build-$n.log" ||
            log "$n: no prebuilt binary under $HRR_DIAG_PREBUILT (build-$n.log)"
    else
        (cd "$src" && nvcc -O3 -arch=sm_90 -I"$SAMPLES/Common" -o "$work/$n" "$n.cu") \
            >"$OUT/build-$n.log" 2>&1 || log "$n: build failed (build-$n.log)"
    fi
    for i in $(seq "$REPS"); do
        for loading in LAZY EAGER; do
            for v in "${variants[@]}"; do
                [ -x "$work/$v" ] || continue
                plain=$(cd "$work" && CUDA_MODULE_LOADING=$loading "./$v" 2>&1 | figures)
                rm -rf "$work/$n.hrr"
                (cd "$work" && CUDA_MODULE_LOADING=$loading HRR_CAPTURE_PROFILE=1 \
                    "$BIN/hrr-capture" -o "$work/$n.hrr" -- "./$v" \
                    >"$OUT/$v-$loading-$i.out" 2>"$OUT/$v-$loading-$i.profile")
                captured=$(figures <"$OUT/$v-$loading-$i.out")
                pads=
                if [ "${HRR_DIAG_REGION:-0}" = 1 ]; then
                    # plain again with 2 MiB of device memory allocated before the matrices,
                    # then after them: where the program's data lands, without capture
                    pads=" plain+2MiB before $(cd "$work" && CUDA_MODULE_LOADING=$loading HRR_PAD_BEFORE_MB=2 "./$v" 2>&1 | figures)"
                    pads+=" plain+2MiB after $(cd "$work" && CUDA_MODULE_LOADING=$loading HRR_PAD_AFTER_MB=2 "./$v" 2>&1 | figures)"
                fi
                log "$v $loading run $i: plain $plain captured $captured$pads"
            done
        done
    done
    [ -d "$work/$n.hrr" ] || continue
    # the timed region: from the last cuEventCreate to the cuEventSynchronize after it
    "$BIN/hrr-playback" "$work/$n.hrr" --events 2>&1 |
        awk '/cuEventCreate/ { keep = 1; n = 0; buf = "" } keep { buf = buf $0 "\n" }
             /cuEventSynchronize/ && keep { printf "%s", buf; keep = 0 }' \
            >"$OUT/$n-region-events.txt"
done

# transpose: 100 kernels of ~4 us back to back per variant, event-timed, so its figures follow
# the host's launch rate when capture's cost per launch nears the kernels' time: each run's
# per-kernel times (ms) of its eight variants, plain and captured alternated, the first
# captured run's profile (the launches' added time)
if [ -z "$ONLY" ] || grep -qE "$ONLY" <<<transpose; then
    src=$SAMPLES/Samples/6_Performance/transpose
    (cd "$src" && nvcc -O3 -arch=sm_90 -I"$SAMPLES/Common" -o "$work/transpose" transpose.cu) \
        >"$OUT/build-transpose.log" 2>&1 || log "transpose: build failed (build-transpose.log)"
    kernel_times() { grep -o 'Time = [0-9.]*' | awk '{ printf "%s ", $3 }'; }
    for i in $(seq $((REPS * 3))); do
        [ -x "$work/transpose" ] || break
        plain=$(cd "$work" && ./transpose 2>&1 | kernel_times)
        rm -rf "$work/transpose.hrr"
        # the first captured run profiled (its clock reads add to each call), the others not
        prof=$([ "$i" = 1 ] && echo 1 || echo 0)
        (cd "$work" && HRR_CAPTURE_PROFILE=$prof "$BIN/hrr-capture" -o "$work/transpose.hrr" -- ./transpose \
            >"$OUT/transpose-$i.out" 2>"$OUT/transpose-$i.profile")
        log "transpose run $i: plain ${plain}captured$([ "$prof" = 1 ] && echo ' (profiled)') $(kernel_times <"$OUT/transpose-$i.out")"
    done
    # the first run's launches: calls, added and driver time, us a call
    grep -E '^  (call |cuLaunchKernel|cuEventRecord)' "$OUT/transpose-1.profile" 2>/dev/null | tee -a "$OUT/diag.txt"
fi

if [ -n "$ONLY" ]; then
    tar czf "$OUT/diag.tgz" -C "$OUT" --exclude diag.tgz . 2>/dev/null
    log "done (HRR_DIAG_ONLY: those samples only): $OUT/diag.txt, $OUT/diag.tgz"
    exit 0
fi
cd "$root/tests/gpu" || exit 1
for i in $(seq "$REPS"); do
    t=$(CUBLAS_WORKSPACE_CONFIG=:4096:8 "$PY" transformer.py --steps "$STEPS" 2>&1 | grep ' steps in ')
    rm -rf "$work/t.hrr"
    CUBLAS_WORKSPACE_CONFIG=:4096:8 HRR_CAPTURE_PROFILE=1 "$BIN/hrr-capture" -o "$work/t.hrr" -- \
        "$PY" transformer.py --steps "$STEPS" >/dev/null 2>"$OUT/transformer-$i.profile"
    c=$(grep ' steps in ' "$OUT/transformer-$i.profile")
    log "transformer run $i: plain '${t#*] }' captured '${c#*] }'"
done

"$PY" - "$work/files" <<'EOF' | tee -a "$OUT/diag.txt"
import os, sys, time
d = sys.argv[1]; os.makedirs(d); n = 400
t0 = time.perf_counter_ns()
for i in range(n):
    p = f"{d}/b{i}.tmp"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"x" * 64); os.close(fd); os.rename(p, f"{d}/b{i}")
print(f"[gpu-capture-diag] small file create+write+close+rename in {d}: "
      f"{(time.perf_counter_ns() - t0) / n / 1000:.1f} us")
EOF
tar czf "$OUT/diag.tgz" -C "$OUT" --exclude diag.tgz . 2>/dev/null
log "done: $OUT/diag.txt, $OUT/diag.tgz"
