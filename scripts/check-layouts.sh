#!/usr/bin/env bash
# Whether the argument layouts capture reads from the code (crates/hrr-capture/src/api/cuda/
# param_info.rs, on by default since d46d293) equal the driver's, over real programs on an NVIDIA GPU.
#
#   bash scripts/check-layouts.sh SAMPLES_CHECKOUT BIN_DIR OUT_DIR
#
# SAMPLES_CHECKOUT is an export of NVIDIA/cuda-samples (as for scripts/cuda-samples.sh), BIN_DIR
# holds hrr-capture, hrr-playback and libhrr_capture.so. With HRR_CAPTURE_CHECK_LAYOUTS=1, under
# which capture reads every layout it can from the code, asks the driver too, records the
# driver's answer and reports each difference, it runs scripts/cuda-samples.sh (the listed
# samples, captured and replayed) and scripts/gpu-e2e.sh (PyTorch, Triton, cuBLAS, CuPy and
# our own workloads; HRR_E2E_WORKLOADS chooses), then sums capture's counts from their logs:
# OUT_DIR/check-layouts.txt gives the processes, the layouts checked, the differing ones (each
# kernel named), and the layouts checked by sample. Exit 1 when a layout differs or when none
# was checked (a check of nothing has not passed), 0 otherwise, and 0 with a SKIP line
# without a GPU. HRR_SAMPLES_LIST=FILE passes `--samples-list FILE` to cuda-samples.sh,
# HRR_SAMPLES_JOBS=N its `-j N` (samples at a time).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/lib/gpu.sh"
samples_args "${BASH_SOURCE[0]}" "$@"
report=$OUT/check-layouts.txt
skip_without_gpu check-layouts "$report"

export HRR_CAPTURE_CHECK_LAYOUTS=1
list=()
[ -z "${HRR_SAMPLES_LIST:-}" ] || list=(--samples-list "$HRR_SAMPLES_LIST")
[ -z "${HRR_SAMPLES_JOBS:-}" ] || list+=(-j "$HRR_SAMPLES_JOBS")
echo "[check-layouts] CUDA samples (scripts/cuda-samples.sh)"
bash "$root/scripts/cuda-samples.sh" "${list[@]}" "$SAMPLES" "$BIN" "$OUT/corpus" \
    >"$OUT/corpus.log" 2>&1 || echo "[check-layouts] cuda-samples.sh failed (corpus.log): its logs are counted all the same"
echo "[check-layouts] end-to-end workloads (scripts/gpu-e2e.sh)"
bash "$root/scripts/gpu-e2e.sh" "$BIN" "$OUT/e2e" >"$OUT/e2e.log" 2>&1 ||
    echo "[check-layouts] gpu-e2e.sh failed (e2e.log): its logs are counted all the same"

# capture's exit line: `hrr-capture: argument layouts read from the code and checked against
# the driver: N, differing: M`; each difference: `hrr-capture: argument layout of K ...`
mapfile -t logs < <(grep -rl --include='*.log' --include='*.txt' \
    "checked against the driver" "$OUT/corpus" "$OUT/e2e" 2>/dev/null || true)
sum() {
    [ ${#logs[@]} -gt 0 ] || { echo "0 0 0"; return; }
    { grep -h "checked against the driver" "${logs[@]}" || true; } |
        sed -E 's/.*driver: ([0-9]+), differing: ([0-9]+).*/\1 \2/' |
        awk '{c += $1; d += $2; n++} END {print n + 0, c + 0, d + 0}'
}
read -r processes checked differing < <(sum)
{
    echo "processes that reported: $processes, layouts checked: $checked, differing: $differing"
    [ ${#logs[@]} -eq 0 ] || { grep -h "differs from the driver" "${logs[@]}" || true; } | sort | uniq -c | sort -rn
    echo "layouts checked by sample:"
    for dir in "$OUT"/corpus/work/*/; do
        n=$({ grep -h "checked against the driver" "$dir"captured.log 2>/dev/null || true; } |
            sed -E 's/.*driver: ([0-9]+),.*/\1/' | awk '{c += $1} END {print c + 0}')
        echo "  $(basename "$dir") $n"
    done
} >"$report"
cat "$report"
if [ "$checked" -eq 0 ]; then
    echo "[check-layouts] FAIL: no layout was read from the code and checked: nothing was compared"
    exit 1
fi
if [ "$differing" -ne 0 ]; then
    echo "[check-layouts] FAIL: $differing layouts read from the code differ from the driver's"
    exit 1
fi
echo "[check-layouts] PASS: $checked layouts read from the code equal the driver's"
