#!/usr/bin/env bash
# Issue 22's acceptance run in one call on a GPU machine, bounded by a deadline:
#
#   bash scripts/gpu-acceptance.sh SAMPLES_DIR BIN_DIR OUT_DIR
#
# SAMPLES_DIR is a checkout or `git archive` export of NVIDIA/cuda-samples (Samples/, Common/,
# cmake/); BIN_DIR holds hrr-capture, hrr-playback and libhrr_capture.so. In order, each step
# given what is left of the deadline (less what the later steps need):
#   1. the corpus: scripts/cuda-samples.sh -j <cores> (builds the samples the next step runs);
#   2. capture's cost by the samples' own figures: scripts/samples-bench.sh, captured runs as
#      shipped against the same build with HRR_CAPTURE_ASYNC_DIGESTS=0 as the baseline (or
#      HRR_BENCH_BASELINE, another build, when set);
#   3. only when HRR_ACCEPT_STEPS names it, `region`: where tf32TensorCoreGemm's captured
#      figure loses (scripts/gpu-capture-diag.sh with HRR_DIAG_REGION=1: its timed region's
#      host part, plain and captured, built with and without separable compilation; ~2 min);
#   4. only when named, `placement`: which part of capture's digest-kernel load slows
#      tf32TensorCoreGemm and cudaTensorCoreGemm on an H100 (scripts/gpu-placement-diag.sh
#      for each of HRR_PLACEMENT_SAMPLES; ~3 min a sample);
#   5. scripts/gpu-e2e.sh on every workload (HRR_E2E_WORKLOADS to pick).
# OUT_DIR/summary.txt gathers the totals line of the corpus, the samples-bench table and the
# e2e table, with each step's exit status and seconds; OUT_DIR/acceptance.tgz holds every
# step's output (the device tool brings back only a few files: fetch these two).
# Times seen on an H100 (16 cores): corpus 160-175 s, bench ~135 s (more since transpose and
# cudaTensorCoreGemm run 9 pairs: ~200 s), e2e 260-310 s (over 300 s on an H200): the three do
# not fit one call; a step the deadline stops says so in the summary. Split them over two
# calls: HRR_ACCEPT_STEPS="corpus bench", then HRR_ACCEPT_STEPS=e2e.
# Environment: HRR_ACCEPT_DEADLINE seconds for the whole run (default 585: the device tool stops a command at 600),
# HRR_ACCEPT_STEPS (default "corpus bench e2e"; `region`, `placement` too when named), HRR_SAMPLES_TIMEOUT (default 120 here),
# HRR_BENCH_ONLY and HRR_BENCH_REPS (passed on), HRR_E2E_STEP_TIMEOUT (default 120 here).
# Exit status: 0 when every step that ran exited 0, 1 otherwise, 2 on a usage error; 0 with a
# SKIP line when the machine has no GPU.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
samples_args "${BASH_SOURCE[0]}" "$@"
skip_without_gpu gpu-acceptance "$OUT/summary.txt"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
deadline=${HRR_ACCEPT_DEADLINE:-585}
steps=" ${HRR_ACCEPT_STEPS:-corpus bench e2e} "
status=0
: >"$OUT/summary.txt"

# left RESERVE: the seconds left before the deadline, less RESERVE (at least 1).
left() {
    local l=$((deadline - ($(date +%s) - start) - $1))
    echo $((l > 0 ? l : 1))
}
# step NAME RESERVE CMD...: CMD under `timeout` (what is left less RESERVE), its output in
# OUT/NAME.log, its exit status and time in the summary.
step() {
    local name=$1 reserve=$2 t0 rc
    shift 2
    t0=$(date +%s)
    timeout "$(left "$reserve")" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || status=1
    echo "== $name: exit $rc in $(($(date +%s) - t0)) s$([ "$rc" -eq 124 ] && echo ' (stopped at the deadline)')" |
        tee -a "$OUT/summary.txt"
}
has() { [[ $steps == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/GPU: /' | tee -a "$OUT/summary.txt"
if has corpus; then
    step corpus "$(has e2e && echo 300 || echo 30)" \
        env HRR_SAMPLES_TIMEOUT="${HRR_SAMPLES_TIMEOUT:-120}" bash "$root/scripts/cuda-samples.sh" -j "$(nproc)" "$SAMPLES" "$BIN" "$OUT/corpus"
    tail -1 "$OUT/corpus/summary.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
fi
if has bench; then
    # without another build: the same one, async digests off in the baseline's runs (they do
    # not get HRR_BENCH_CAPTURED_ENV, the captured runs set them back on)
    bench_env=(HRR_BENCH_BASELINE="${HRR_BENCH_BASELINE:-$BIN}")
    [ -n "${HRR_BENCH_BASELINE:-}" ] ||
        bench_env+=(HRR_CAPTURE_ASYNC_DIGESTS=0 HRR_BENCH_CAPTURED_ENV=HRR_CAPTURE_ASYNC_DIGESTS=1)
    step bench "$(has e2e && echo 280 || echo 10)" env "${bench_env[@]}" \
        HRR_BENCH_STEP_TIMEOUT="${HRR_BENCH_STEP_TIMEOUT:-60}" \
        bash "$root/scripts/samples-bench.sh" "$OUT/corpus" "$BIN" "$OUT/bench"
    if [ ! -s "$OUT/bench/samples-bench.txt" ] && [ -s "$OUT/bench/samples-bench.tsv" ]; then
        # stopped before its table: the table of the figures it took
        echo "(samples-bench stopped: the figures it took before)" | tee -a "$OUT/summary.txt"
        HRR_BENCH_REPORT_ONLY=1 bash "$root/scripts/samples-bench.sh" "$OUT/corpus" "$BIN" "$OUT/bench" >/dev/null 2>&1
    fi
    cat "$OUT/bench/samples-bench.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
fi
if has region; then
    # tf32TensorCoreGemm's timed region: its host part before the kernel, plain and captured,
    # built as the samples' CMake does and without separable compilation (gpu-capture-diag.sh)
    step region "$(has e2e && echo 280 || echo 10)" env HRR_DIAG_REGION=1 \
        HRR_DIAG_ONLY="${HRR_DIAG_ONLY:-tf32}" HRR_DIAG_REPS="${HRR_DIAG_REPS:-3}" \
        bash "$root/scripts/gpu-capture-diag.sh" "$SAMPLES" "$BIN" "$OUT/region"
    grep ' run ' "$OUT/region/diag.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
fi
if has placement; then
    # which part of capture's kernel load moves the GEMMs' data (gpu-placement-diag.sh; ~3 min
    # a sample)
    for sample in ${HRR_PLACEMENT_SAMPLES:-tf32TensorCoreGemm cudaTensorCoreGemm}; do
        step "placement-$sample" "$(has e2e && echo 280 || echo 10)" env HRR_PLACEMENT_SAMPLE="$sample" \
            bash "$root/scripts/gpu-placement-diag.sh" "$SAMPLES" "$BIN" "$OUT/placement-$sample"
        sed "s/^/$sample: /" "$OUT/placement-$sample/placement.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
    done
fi
if has e2e; then
    step e2e 10 env HRR_E2E_STEP_TIMEOUT="${HRR_E2E_STEP_TIMEOUT:-120}" \
        bash "$root/scripts/gpu-e2e.sh" "$BIN" "$OUT/e2e"
    cat "$OUT/e2e/summary.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
fi
tar czf "$OUT/acceptance.tgz" -C "$OUT" --exclude acceptance.tgz --exclude '*.hrr' \
    --exclude 'work' --exclude 'build' --exclude 'src' --exclude diag.tgz . 2>/dev/null
echo "[gpu-acceptance] done in $(($(date +%s) - start)) s: $OUT/summary.txt, $OUT/acceptance.tgz"
exit $status
