#!/usr/bin/env bash
# What capture costs NVIDIA's CUDA samples, by the figures the samples print themselves.
#
#   bash scripts/samples-bench.sh SAMPLES_OUT BIN_DIR OUT_DIR
#
# SAMPLES_OUT is the OUT_DIR of a `scripts/cuda-samples.sh` run (its built samples under
# work/<sample>/bin/); BIN_DIR holds hrr-capture and libhrr_capture.so. Each sample below runs
# from its binary's folder plain, then under `hrr-capture -o`, alternated REPS times; for each
# figure the medians of both and the median of the per-pair captured/plain ratios are printed
# (with the lowest and highest pair's ratio: these figures are noisy),
# as "better" ratios (1.0: no cost; throughputs and iteration counts as captured/plain, times
# as plain/captured), against the goals of issue 22: asyncAPI's overlap loop and
# simpleMultiCopy's pinned bandwidth >= 0.5, simpleStreams' times >= 0.5 (captured <= 2x
# plain), the compute-bound samples' figures >= 0.97.
# Results: OUT_DIR/samples-bench.txt (and samples-bench.tsv, raw numbers); logs beside.
# Environment: HRR_BENCH_REPS (3), HRR_BENCH_STEP_TIMEOUT (120 s per run),
# HRR_BENCH_BASELINE=DIR (another build's hrr-capture and libhrr_capture.so: its captured runs
# alternate with the others, before them in every other pair, and its ratios are printed beside; every other pair runs in the
# opposite order: plain, captured, baseline then baseline, captured, plain), HRR_BENCH_ONLY=REGEX (only the
# samples whose key matches, e.g. 'TensorCoreGemm|simpleMultiCopy'), HRR_BENCH_CAPTURED_ENV='VAR=V
# ...' (set for the captured runs only, not the baseline's: one build with and without a switch,
# e.g. HRR_CAPTURE_ASYNC_DIGESTS=0 with HRR_BENCH_BASELINE the same BIN_DIR). HRR_CAPTURE_PROFILE=1 passes
# through to the captured runs: each OUT_DIR/<sample>.captured.<rep>.log then ends with capture's
# profile (which calls added time, and the `slow` ones: where a stalled pair's time went).
# HRR_BENCH_REPORT_ONLY=1 runs nothing: the table from the OUT_DIR/samples-bench.tsv an earlier
# run left (one a deadline stopped, as scripts/gpu-acceptance.sh does; no GPU needed).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
samples_args "${BASH_SOURCE[0]}" "$@"
[ -n "${HRR_BENCH_REPORT_ONLY:-}" ] || skip_without_gpu samples-bench "$OUT/samples-bench.txt"
REPS=${HRR_BENCH_REPS:-3}
STEP_TIMEOUT=${HRR_BENCH_STEP_TIMEOUT:-120}
BASE=${HRR_BENCH_BASELINE:+$(cd "$HRR_BENCH_BASELINE" && pwd)}
modes=(plain captured)
captured_env=()
[ -z "${HRR_BENCH_CAPTURED_ENV:-}" ] || read -r -a captured_env <<<"$HRR_BENCH_CAPTURED_ENV"
[ -z "$BASE" ] || modes+=(baseline)

# sample key (work/ folder) | figure | extended regex whose first group is the number | higher is
# better [| a multiplier of REPS, the pairs run: for the samples whose figure times a few microseconds of
# work, so noisy that 3 pairs cannot tell 3% (transpose: 100 kernels of 4 us back to back, its
# plain figure alone 1,199-1,663 GB/s in one run; cudaTensorCoreGemm: one launch with its
# module load, 52-71 TFLOPS plain in one run); a run of either takes 1-3 s]
FIGURES=(
    "0_Introduction_asyncAPI|overlap loop iterations|CPU executed ([0-9.]+) iterations|1"
    "0_Introduction_simpleMultiCopy|pinned H2D GB/s|Memcpy host to device.*\\(([0-9.]+) GB/s\\)|1"
    "0_Introduction_simpleMultiCopy|pinned D2H GB/s|Memcpy device to host.*\\(([0-9.]+) GB/s\\)|1"
    "0_Introduction_simpleMultiCopy|serialized GB/s|Fully serialized execution[^0-9]*([0-9.]+) GB/s|1"
    "0_Introduction_simpleStreams|memcopy ms|^memcopy:[^0-9]*([0-9.]+)|0"
    "0_Introduction_simpleStreams|non-streamed ms|^non-streamed:[^0-9]*([0-9.]+)|0"
    "0_Introduction_simpleStreams|4 streams ms|^4 streams:[^0-9]*([0-9.]+)|0"
    "0_Introduction_matrixMul|GFlop/s|Performance= *([0-9.]+) GFlop/s|1"
    "6_Performance_transpose|optimized GB/s|transpose optimized *, Throughput = ([0-9.]+)|1|3"
    "2_Concepts_and_Techniques_reduction|GB/s|Reduction, Throughput = ([0-9.]+)|1"
    "5_Domain_Specific_BlackScholes|GB/s|Effective memory bandwidth: ([0-9.]+)|1"
    "3_CUDA_Features_bf16TensorCoreGemm|TFLOPS|TFLOPS: ([0-9.]+)|1"
    "3_CUDA_Features_tf32TensorCoreGemm|TFLOPS|TFLOPS: ([0-9.]+)|1"
    "3_CUDA_Features_cudaTensorCoreGemm|TFLOPS|TFLOPS: ([0-9.]+)|1|3"
)

# The figures of the samples asked for, and those samples' keys, once each, in order.
keys=() figures=()
for f in "${FIGURES[@]}"; do
    k=${f%%|*}
    [[ -z "${HRR_BENCH_ONLY:-}" || "$k" =~ $HRR_BENCH_ONLY ]] || continue
    figures+=("$f")
    [[ " ${keys[*]} " == *" $k "* ]] || keys+=("$k")
done
[ ${#keys[@]} -gt 0 ] || { echo "[samples-bench] no sample matches HRR_BENCH_ONLY=$HRR_BENCH_ONLY" >&2; exit 2; }

tsv=$OUT/samples-bench.tsv
if [ -n "${HRR_BENCH_REPORT_ONLY:-}" ]; then
    [ -s "$tsv" ] || { echo "[samples-bench] no $tsv to report" >&2; exit 2; }
    keys=()
else
    printf 'sample\trep\tmode\tfigure\tvalue\n' >"$tsv"
fi
for k in "${keys[@]}"; do
    dir=$SAMPLES/work/$k/bin
    # the binary is named as the sample's folder, the key less its category
    name=$(sed -E 's/^[0-9]+_(Introduction|Utilities|Concepts_and_Techniques|CUDA_Features|CUDA_Libraries|Domain_Specific|Performance)_//' <<<"$k")
    if [ ! -x "$dir/$name" ]; then
        echo "[samples-bench] $k: no binary $dir/$name (build it with scripts/cuda-samples.sh)" >&2
        continue
    fi
    # REPS pairs, times the largest multiplier of the sample's figures
    mult=1
    for f in "${figures[@]}"; do
        IFS='|' read -r fk _ _ _ m <<<"$f"
        [ "$fk" = "$k" ] && [ "${m:-1}" -gt "$mult" ] && mult=$m
    done
    for rep in $(seq 1 $((REPS * mult))); do
        # every other pair runs in the opposite order, so no run gains from its place (the
        # plain run was always first before; an H100 comparison of two builds of the same code
        # paths read 0.926 one way and 1.008 with the builds' places swapped): plain, captured
        # [, baseline] then [baseline,] captured, plain
        order=("${modes[@]}")
        if [ $((rep % 2)) = 0 ]; then
            order=(captured plain)
            [ -z "$BASE" ] || order=(baseline captured plain)
        fi
        for mode in "${order[@]}"; do
            log=$OUT/$k.$mode.$rep.log
            if [ $mode = plain ]; then
                (cd "$dir" && timeout "$STEP_TIMEOUT" "./$name" >"$log" 2>&1) || true
            else
                b=$BIN extra=("${captured_env[@]}")
                [ $mode = captured ] || { b=$BASE; extra=(); }
                rm -rf "$OUT/$k.hrr"
                (cd "$dir" && env "${extra[@]}" HRR_CAPTURE_LIB="$b/libhrr_capture.so" timeout "$STEP_TIMEOUT" \
                    "$b/hrr-capture" -o "$OUT/$k.hrr" -- "./$name" >"$log" 2>&1) || true
                rm -rf "$OUT/$k.hrr"
            fi
            for f in "${figures[@]}"; do
                IFS='|' read -r fk fig re _ <<<"$f"
                [ "$fk" = "$k" ] || continue
                v=$(grep -m1 -E "$re" "$log" | sed -E "s#.*$re.*#\\1#" || true)
                printf '%s\t%s\t%s\t%s\t%s\n' "$k" "$rep" "$mode" "$fig" "${v:-NA}" >>"$tsv"
            done
        done
    done
done

python3 - "$tsv" "${figures[@]}" >"$OUT/samples-bench.txt" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]).readlines()[1:]]
higher = {tuple(f.split("|")[:2]): f.split("|")[3] == "1" for f in sys.argv[2:]}
base = any(r[2] == "baseline" for r in rows)
print(f"{'sample':<36} {'figure':<24} {'plain':>10} {'captured':>10} {'ratio':>7} {'pairs':>14}" + (f" {'baseline':>10} {'ratio':>7} {'pairs':>14}" if base else ""))
for (k, fig), up in higher.items():
    def vals(mode):
        return {r[1]: float(r[4]) for r in rows if r[0] == k and r[3] == fig and r[2] == mode and r[4] != "NA"}
    p = vals("plain")
    line = f"{k:<36} {fig:<24} " + (f"{statistics.median(p.values()):>10.2f}" if p else f"{'-':>10}")
    for mode in ["captured"] + (["baseline"] if base else []):
        c = vals(mode)
        pairs = [(p[i], c[i]) for i in p if i in c and p[i] > 0 and c[i] > 0]
        if not pairs:
            line += f" {'-':>10} {'-':>7} {'-':>14}"
            continue
        ratios = [(b / a) if up else (a / b) for a, b in pairs]
        spread = f"{len(ratios)}: {min(ratios):.2f}-{max(ratios):.2f}"
        line += f" {statistics.median(c.values()):>10.2f} {statistics.median(ratios):>7.3f} {spread:>14}"
    print(line)
print("ratio: captured/plain for throughputs and counts, plain/captured for times (1.0 = no cost); medians of pairs; pairs: how many, the lowest and highest pair's ratio")
PY
cat "$OUT/samples-bench.txt"
