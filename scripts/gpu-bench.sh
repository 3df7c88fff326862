#!/usr/bin/env bash
# What capture costs, and how replay compares with the original, on a GPU.
#
#   bash scripts/gpu-bench.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds hrr-capture, hrr-playback and libhrr_capture.so. Measures, in
# one run on one machine:
#   - capture overhead on tests/gpu/tiny_launches (100,000 launches) and on the
#     PyTorch MLP steps (tests/gpu/mlp.py): plain and captured runs alternate,
#     REPS times each, and the median of the per-pair ratios is reported, for
#     the process's wall time and for the time the program measures itself
#     (its launch loop / training steps, printed on stderr);
#   - PyTorch MLP and transformer (tests/gpu/transformer.py: a 6-layer decoder, bf16 autocast,
#     AdamW) steps: capture overhead as above, and replay with --timing against the program's
#     own step time (scaled to every recorded step), with the GPU time --timing sums and the
#     kernel with the most of it (what a receiver of a slow workload looks at);
#   - replay against the original for gemm and mlp: replay wall time (and the
#     "[HRR] Wall time" line when replay prints one) against the plain run;
#   - asynchronous copies (tests/gpu/async_copies): pinned H2D/D2H bandwidth and the
#     overlap loop's host iterations, plain and captured alternated REPS times, medians and
#     the median captured/plain ratio of each figure (goals: overlap >= 0.5, bandwidth >= 0.5).
#   - bulk copies (tests/gpu/bulk_copies): the copy times the program measures, plain and
#     captured alternated, and replay's execute time against the plain copy time (goals:
#     capture <= 1.5, replay <= 1.0);
#   - a multi-threaded program (tests/gpu/threads): replay's execute time single-threaded and
#     with --multi-thread against the program's own threaded section;
#   - replay's execute time (the summary's `execute_ms`: events issued, results compared)
#     against the program's own launch loop for tiny_launches (goal: <= 0.8); with
#     HRR_BENCH_BASELINE=DIR (another build's hrr-playback), replays with it alternate and the
#     median current/baseline ratio is printed; where DIR also holds that build's hrr-capture
#     and libhrr_capture.so, the capture-overhead cases capture with it too, in the same
#     alternation (plain, this build, the baseline), and the median ratio of the self-timed
#     figure captured by this build over captured by the baseline is printed beside.
# Results go to OUT_DIR/bench.txt (and bench.tsv, raw numbers); logs beside.
# Exit status 0 unless a run failed; 0 with a SKIP message when there is no GPU.
#
# Environment: HRR_BENCH_CASES (the cases run, default "tiny_launches mlp transformer gemm async_copies
# bulk_copies threads"),
# HRR_BENCH_SAMPLES (the OUT_DIR of a scripts/cuda-samples.sh run: its samples' own figures,
# plain and captured, through scripts/samples-bench.sh),
# HRR_BENCH_BASELINE, HRR_BENCH_REPS (3), HRR_BENCH_TINY_COUNT (100000),
# HRR_BENCH_TRANSFORMER_STEPS (30),
# HRR_BENCH_STEP_TIMEOUT (300 s per step), HRR_BENCH_KEEP=1 keeps the work
# directory, PYTHON (python3), NVCC / HRR_GPU_ARCH (see tests/gpu/build.sh).
set -euo pipefail

if [ $# -ne 2 ]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
BIN=$(cd "$1" 2>/dev/null && pwd) || { echo "gpu-bench: BIN_DIR $1 does not exist" >&2; exit 2; }
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
REPS=${HRR_BENCH_REPS:-3}
# timed transformer steps per run: a step is ~30 ms on the H200, and runs differ by more than
# the capture's cost in 10 steps
TSTEPS=${HRR_BENCH_TRANSFORMER_STEPS:-30}
TINY_COUNT=${HRR_BENCH_TINY_COUNT:-100000}
STEP_TIMEOUT=${HRR_BENCH_STEP_TIMEOUT:-300}
PY=${PYTHON:-python3}

log() { echo "[gpu-bench] $*"; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
skip_without_gpu gpu-bench "$OUT/bench.txt"
for f in hrr-capture hrr-playback libhrr_capture.so; do
    [ -e "$BIN/$f" ] || { echo "gpu-bench: $BIN/$f is missing" >&2; exit 2; }
done
export HRR_CAPTURE_LIB="$BIN/libhrr_capture.so"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hrr-bench.XXXXXX")
cleanup() {
    if [ "${HRR_BENCH_KEEP:-0}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# the programs of the cases asked for (CASES is set below; read here first)
built=()
for p in tiny_launches gemm async_copies bulk_copies threads; do
    [[ " ${HRR_BENCH_CASES:-tiny_launches gemm async_copies bulk_copies threads} " == *" $p "* ]] && built+=("$p")
done
if [ ${#built[@]} -gt 0 ]; then
    log "building ${built[*]}"
    bash "$root/tests/gpu/build.sh" "$WORK/build" "${built[@]}" || true
fi
cp "$WORK/build/build.log" "$OUT/build.log" 2>/dev/null || true
B=$WORK/build

failures=0
: >"$OUT/failures.txt"
fail_note() {
    failures=$((failures + 1))
    echo "$1" >>"$OUT/failures.txt"
    log "FAIL: $1"
}

# run_timed PREFIX CMD... -> LAST_RC, LAST_SECS (wall), PREFIX.out / PREFIX.err
LAST_RC=0
LAST_SECS=0
run_timed() {
    local prefix=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    set +e
    timeout -k 10 "$STEP_TIMEOUT" "$@" >"$prefix.out" 2>"$prefix.err" </dev/null
    LAST_RC=$?
    set -e
    t1=$(date +%s.%N)
    LAST_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
    return 0
}

median() {
    printf '%s\n' "$@" | { grep -E '^[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?$' || true; } | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.3f", a / b; else print "-" }'; }
# self_time FILE REGEX: the number in the first line matching "REGEX <number> s"
self_time() { sed -nE "s/.*$2 ([0-9.]+) s.*/\1/p" "$1" 2>/dev/null | head -1; }

: >"$OUT/bench.tsv"
printf 'case\trep\tmode\trc\twall_s\tself_s\tarchive_bytes\n' >>"$OUT/bench.tsv"

# overhead NAME SELF_REGEX ENV... -- CMD...: alternate plain and captured REPS times.
declare -A RES
overhead() {
    local name=$1 rx=$2
    shift 2
    local -a envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local d=$OUT/$name
    mkdir -p "$d"
    local -a pw=() cw=() ps=() cs=() rw=() rs=() rb=()
    local r arch bytes=- p_self c_self b_self
    for r in $(seq 1 "$REPS"); do
        run_timed "$d/plain.$r" env "${envs[@]}" "$@"
        [ $LAST_RC = 0 ] || fail_note "$name: plain run $r exit status $LAST_RC"
        pw+=("$LAST_SECS")
        p_self=$(self_time "$d/plain.$r.err" "$rx")
        ps+=("${p_self:--}")
        printf '%s\t%s\tplain\t%s\t%s\t%s\t-\n' "$name" "$r" "$LAST_RC" "$LAST_SECS" "${p_self:--}" >>"$OUT/bench.tsv"

        arch=$WORK/$name.hrr
        rm -rf "$arch"
        run_timed "$d/capture.$r" env "${envs[@]}" "$BIN/hrr-capture" -o "$arch" -- "$@"
        [ $LAST_RC = 0 ] || fail_note "$name: captured run $r exit status $LAST_RC"
        cmp -s "$d/plain.$r.out" "$d/capture.$r.out" || fail_note "$name: captured run $r printed different output"
        cw+=("$LAST_SECS")
        c_self=$(self_time "$d/capture.$r.err" "$rx")
        cs+=("${c_self:--}")
        bytes=$(du -sb "$arch" 2>/dev/null | cut -f1 || echo -)
        printf '%s\t%s\tcaptured\t%s\t%s\t%s\t%s\n' "$name" "$r" "$LAST_RC" "$LAST_SECS" "${c_self:--}" "$bytes" >>"$OUT/bench.tsv"
        rw+=("$(ratio "$LAST_SECS" "${pw[-1]}")")
        rs+=("$(ratio "${c_self:--}" "${p_self:--}")")
        log "  $name rep $r: plain ${pw[-1]}s (self ${p_self:--}) captured $LAST_SECS s (self ${c_self:--})"
        if [ -n "$BASE_CAPTURE" ]; then
            rm -rf "$arch.base"
            run_timed "$d/base.$r" env "${envs[@]}" HRR_CAPTURE_LIB="$BASE/libhrr_capture.so" \
                "$BASE_CAPTURE" -o "$arch.base" -- "$@"
            [ $LAST_RC = 0 ] || fail_note "$name: baseline-captured run $r exit status $LAST_RC"
            b_self=$(self_time "$d/base.$r.err" "$rx")
            printf '%s\t%s\tbaseline\t%s\t%s\t%s\t-\n' "$name" "$r" "$LAST_RC" "$LAST_SECS" "${b_self:--}" >>"$OUT/bench.tsv"
            rb+=("$(ratio "${c_self:--}" "${b_self:--}")")
            log "  $name rep $r: baseline captured $LAST_SECS s (self ${b_self:--})"
            rm -rf "$arch.base"
        fi
    done
    [ ${#rb[@]} = 0 ] || RES[$name.vs_base]=$(median "${rb[@]}")
    RES[$name.plain]=$(median "${pw[@]}")
    RES[$name.captured]=$(median "${cw[@]}")
    RES[$name.ratio]=$(median "${rw[@]}")
    RES[$name.plain_self]=$(median "${ps[@]}")
    RES[$name.captured_self]=$(median "${cs[@]}")
    RES[$name.ratio_self]=$(median "${rs[@]}")
    RES[$name.bytes]=$bytes
    RES[$name.archive]=$arch # the last capture stays for the replay measurement
}

# replay_vs NAME ARCH: replay REPS times; ORIGINAL = RES[NAME.plain]
replay_vs() {
    local name=$1 arch=$2
    local d=$OUT/$name
    mkdir -p "$d"
    local -a w=() s=()
    local r t target=$arch
    local -a pids=()
    mapfile -t pids < <(find "$arch" -mindepth 1 -maxdepth 1 -type d -name 'pid-*' 2>/dev/null)
    if [ ${#pids[@]} -gt 1 ]; then # the process with the largest events.bin
        target=$(for p in "${pids[@]}"; do echo "$(stat -c %s "$p/events.bin" 2>/dev/null || echo 0) $p"; done | sort -n | tail -1 | cut -d' ' -f2-)
    fi
    for r in $(seq 1 "$REPS"); do
        run_timed "$d/replay.$r" "$BIN/hrr-playback" "$target"
        if [ $LAST_RC = 0 ] && grep -q '\[HRR\] PASS' "$d/replay.$r.out" "$d/replay.$r.err"; then :; else
            fail_note "$name: replay $r did not PASS (exit $LAST_RC)"
        fi
        w+=("$LAST_SECS")
        t=$(sed -nE 's/.*Wall time *: *([0-9.]+) *ms.*/\1/p' "$d/replay.$r.out" "$d/replay.$r.err" 2>/dev/null | head -1)
        [ -n "$t" ] && t=$(awk -v m="$t" 'BEGIN { printf "%.4f", m / 1000 }')
        s+=("${t:--}")
        printf '%s\t%s\treplay\t%s\t%s\t%s\t-\n' "$name" "$r" "$LAST_RC" "$LAST_SECS" "${t:--}" >>"$OUT/bench.tsv"
        log "  $name replay $r: ${LAST_SECS}s (replay's own wall ${t:--}s)"
    done
    RES[$name.replay]=$(median "${w[@]}")
    RES[$name.replay_self]=$(median "${s[@]}")
}

# replay_timing NAME ARCH SCALE: replay with --timing REPS times; RES[NAME.t_exec] (median
# execute_ms in s), RES[NAME.t_gpu] (median of the GPU time the timing table sums, s),
# RES[NAME.t_top] (the kernel with the most GPU time: name, launches, total ms),
# RES[NAME.t_orig] = the program's self-timed seconds x SCALE (SCALE: recorded steps / timed
# steps, the warm-up steps being recorded too).
replay_timing() {
    local name=$1 arch=$2 scale=$3 r line
    local target
    target=$(find "$arch" -mindepth 1 -maxdepth 1 -type d -name 'pid-*' | head -1)
    local -a ex=() gx=()
    for r in $(seq 1 "$REPS"); do
        line=$("$BIN/hrr-playback" "$target" --timing --json --no-progress 2>"$OUT/$name/timing.$r.err" |
            "$PY" -c 'import json,sys
j=json.load(sys.stdin)
t=j["timing"]
ok=j["verdict"]=="PASS"
top=max(t, key=lambda k: k["total_ms"]) if t else None
print(j["execute_ms"]/1000 if ok else "-", sum(k["total_ms"] for k in t)/1000 if ok else "-",
      ("%s|%d|%.3f" % (top["kernel"][:60].replace(" ", "_"), top["launches"], top["total_ms"])) if top else "-")')
        read -r e g top <<<"${line:-- - -}"
        [ "$e" = - ] && fail_note "$name: replay --timing $r did not PASS"
        ex+=("$e")
        gx+=("$g")
        RES[$name.t_top]=$top
        log "  $name replay --timing $r: execute ${e}s, GPU time of launches ${g}s, top $top"
    done
    RES[$name.t_exec]=$(median "${ex[@]}")
    RES[$name.t_gpu]=$(median "${gx[@]}")
    RES[$name.t_orig]=$(awk -v s="${RES[$name.plain_self]:--}" -v k="$scale" 'BEGIN { if (s == "-") print "-"; else printf "%.6f", s * k }')
}

# replay_exec NAME ARCH [FLAG...]: replay REPS times with FLAGs (alternating with
# HRR_BENCH_BASELINE's build when set); RES[NAME.exec] (median execute_ms in s),
# RES[NAME.exec_base], RES[NAME.exec_vs_base].
replay_exec() {
    local name=$1 arch=$2 r e b
    shift 2
    local -a flags=("$@")
    local d=$OUT/$name target
    target=$(find "$arch" -mindepth 1 -maxdepth 1 -type d -name 'pid-*' | head -1)
    local -a ex=() bx=() rx=()
    exec_s() { "$1/hrr-playback" "$target" "${flags[@]}" --json --no-progress 2>/dev/null |
        "$PY" -c 'import json,sys; j=json.load(sys.stdin); print(j["execute_ms"] / 1000 if j["verdict"] == "PASS" else "-")'; }
    for r in $(seq 1 "$REPS"); do
        e=$(exec_s "$BIN")
        ex+=("$e")
        if [ -n "$BASE" ]; then
            b=$(exec_s "$BASE")
            bx+=("$b")
            rx+=("$(ratio "$e" "$b")")
        fi
        [ "$e" = - ] && fail_note "$name: replay $r did not PASS"
        log "  $name replay $r: execute ${e}s${BASE:+ (baseline ${b}s)}"
    done
    RES[$name.exec]=$(median "${ex[@]}")
    [ -n "$BASE" ] && RES[$name.exec_base]=$(median "${bx[@]}") && RES[$name.exec_vs_base]=$(median "${rx[@]}")
    return 0
}

CASES=${HRR_BENCH_CASES:-tiny_launches mlp transformer gemm async_copies bulk_copies threads}
BASE=${HRR_BENCH_BASELINE:-}
# the baseline build's capture, when HRR_BENCH_BASELINE holds one (with its own library)
BASE_CAPTURE=
if [ -n "$BASE" ] && [ -x "$BASE/hrr-capture" ] && [ -e "$BASE/libhrr_capture.so" ]; then
    BASE_CAPTURE=$BASE/hrr-capture
fi
case_on() { [[ " $CASES " == *" $1 "* ]]; }

# ---- capture overhead ----
if ! case_on tiny_launches; then :
elif [ -x "$B/tiny_launches" ]; then
    log "== tiny_launches x$REPS ($TINY_COUNT launches)"
    overhead tiny_launches "launches in" TRITON_CACHE_DIR="$WORK/tc" -- "$B/tiny_launches" "$TINY_COUNT"
    replay_exec tiny_launches "${RES[tiny_launches.archive]}"
else
    fail_note "tiny_launches did not build"
fi
if ! case_on mlp; then :
elif "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    log "== mlp x$REPS"
    overhead mlp "steps in" CUBLAS_WORKSPACE_CONFIG=:4096:8 -- "$PY" "$root/tests/gpu/mlp.py"
    replay_vs mlp "${RES[mlp.archive]}"
    replay_timing mlp "${RES[mlp.archive]}" 1
else
    fail_note "mlp: no torch with CUDA in $PY"
fi
if ! case_on transformer; then :
elif "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    log "== transformer x$REPS"
    overhead transformer "steps in" CUBLAS_WORKSPACE_CONFIG=:4096:8 -- "$PY" "$root/tests/gpu/transformer.py" --steps "$TSTEPS"
    # TSTEPS + 2 steps recorded (2 warm-up), TSTEPS timed
    replay_timing transformer "${RES[transformer.archive]}" "$(awk -v n="$TSTEPS" 'BEGIN { printf "%.4f", (n + 2) / n }')"
else
    fail_note "transformer: no torch with CUDA in $PY"
fi

# ---- a multi-threaded program: replay single-threaded and with --multi-thread ----
if ! case_on threads; then :
elif [ -x "$B/threads" ]; then
    log "== threads x$REPS"
    overhead threads "iterations in" -- "$B/threads"
    replay_exec threads "${RES[threads.archive]}"
    replay_exec threads_mt "${RES[threads.archive]}" --multi-thread
else
    fail_note "threads did not build"
fi

# ---- replay vs original: gemm (plain and one capture come from overhead) ----
if ! case_on gemm; then :
elif [ -x "$B/gemm" ]; then
    log "== gemm x$REPS"
    overhead gemm "no-self-time" TRITON_CACHE_DIR="$WORK/tc" -- "$B/gemm"
    replay_vs gemm "${RES[gemm.archive]}"
else
    fail_note "gemm did not build"
fi

# figures NAME FIGURE... -- CMD...: alternate plain and captured REPS times; each FIGURE is read
# from a "FIGURE <number>" line of the program's stderr; RES[NAME.FIGURE.{plain,captured,ratio}].
figures() {
    local name=$1
    shift
    local -a figs=()
    while [ "$1" != -- ]; do figs+=("$1"); shift; done
    shift
    local d=$OUT/$name f r mode x line
    mkdir -p "$d"
    local -A vals=() cur=()
    for r in $(seq 1 "$REPS"); do
        for mode in plain captured; do
            if [ $mode = plain ]; then
                run_timed "$d/plain.$r" "$@"
            else
                rm -rf "$WORK/$name.hrr"
                run_timed "$d/captured.$r" "$BIN/hrr-capture" -o "$WORK/$name.hrr" -- "$@"
            fi
            [ $LAST_RC = 0 ] || fail_note "$name: $mode run $r exit status $LAST_RC"
            # (the archive's dirty pages written out now, not during the next run)
            sync
            for f in "${figs[@]}"; do
                x=$(sed -nE "s/^$f ([0-9.]+)$/\1/p" "$d/$mode.$r.err" | head -1)
                cur[$f.$mode]=${x:--}
                vals[$f.$mode]+="${x:--} "
            done
        done
        cmp -s "$d/plain.$r.out" "$d/captured.$r.out" || fail_note "$name: captured run $r printed different output"
        line=""
        for f in "${figs[@]}"; do
            vals[$f.ratio]+="$(ratio "${cur[$f.captured]}" "${cur[$f.plain]}") "
            printf '%s\t%s\t%s\t-\t%s\t%s\t-\n' "$name" "$r" "$f" "${cur[$f.plain]}" "${cur[$f.captured]}" >>"$OUT/bench.tsv"
            line+="$f ${cur[$f.plain]}/${cur[$f.captured]}  "
        done
        log "  $name rep $r (plain/captured): $line"
    done
    for f in "${figs[@]}"; do
        RES[$name.$f.plain]=$(median ${vals[$f.plain]})
        RES[$name.$f.captured]=$(median ${vals[$f.captured]})
        RES[$name.$f.ratio]=$(median ${vals[$f.ratio]})
    done
}

ASYNC_FIGS=(h2d_same_gbps h2d_distinct_gbps d2h_gbps overlap_iters overlap_ms)
if ! case_on async_copies; then :
elif [ -x "$B/async_copies" ]; then
    log "== async_copies x$REPS"
    figures async_copies "${ASYNC_FIGS[@]}" -- "$B/async_copies" 5
else
    fail_note "async_copies did not build"
fi

# How tiny launches can be issued at all (tests/gpu/tiny_launches MODE): the program's <<<>>>
# loop, cuLaunchKernel (what replay issues), one prebuilt graph (the GPU's own cost), graphs
# built node by node in runs of 1024 (what replaying runs as graphs would cost): medians.
TINY_MODES=(runtime driver graph graphs)
if case_on tiny_launches && [ -x "$B/tiny_launches" ]; then
    log "== tiny_launches modes x$REPS"
    for m in "${TINY_MODES[@]}"; do
        vals=()
        for r in $(seq 1 "$REPS"); do
            "$B/tiny_launches" "$TINY_COUNT" "$m" >/dev/null 2>"$OUT/tiny_mode.$m.$r.err" ||
                fail_note "tiny_launches $m: run $r failed"
            vals+=("$(sed -nE 's/^loop_s ([0-9.]+)$/\1/p' "$OUT/tiny_mode.$m.$r.err")")
        done
        RES[tiny_mode.$m]=$(median "${vals[@]}")
    done
fi

BULK_FIGS=(copy_s h2d_s d2h_s)
if ! case_on bulk_copies; then :
elif [ -x "$B/bulk_copies" ]; then
    log "== bulk_copies x$REPS"
    figures bulk_copies "${BULK_FIGS[@]}" -- "$B/bulk_copies"
    replay_exec bulk_copies "$WORK/bulk_copies.hrr"
else
    fail_note "bulk_copies did not build"
fi

# NVIDIA's samples by their own figures (HRR_BENCH_SAMPLES: the OUT_DIR of a
# scripts/cuda-samples.sh run, whose built samples it runs; scripts/samples-bench.sh).
if [ -n "${HRR_BENCH_SAMPLES:-}" ]; then
    log "== CUDA samples (scripts/samples-bench.sh)"
    HRR_BENCH_REPS=$REPS bash "$root/scripts/samples-bench.sh" "$HRR_BENCH_SAMPLES" "$BIN" "$OUT/samples" \
        >"$OUT/samples-bench.log" 2>&1 || fail_note "samples-bench failed (samples-bench.log)"
fi

v() { echo "${RES[$1]:--}"; }
{
    echo "HRR capture/replay benchmark, $(date -u '+%Y-%m-%dT%H:%M:%SZ'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "medians of $REPS alternated runs; ratios are medians of the per-pair ratios"
    echo
    echo "capture overhead (process wall time / time the program measured itself)"
    echo "(self_vs_base: this build's captured self time / the baseline build's, HRR_BENCH_BASELINE)"
    printf '%-15s %10s %11s %8s   %10s %11s %8s %14s %13s\n' case plain_s captured_s ratio plain_self captured_self ratio archive_bytes self_vs_base
    for n in tiny_launches mlp transformer gemm; do
        printf '%-15s %10s %11s %8s   %10s %11s %8s %14s %13s\n' "$n" "$(v $n.plain)" "$(v $n.captured)" "$(v $n.ratio)" \
            "$(v $n.plain_self)" "$(v $n.captured_self)" "$(v $n.ratio_self)" "$(v $n.bytes)" "$(v $n.vs_base)"
    done
    echo
    echo "replay vs original (process wall time; replay_self = replay's own '[HRR] Wall time')"
    printf '%-15s %10s %10s %8s %12s\n' case original_s replay_s ratio replay_self_s
    for n in gemm mlp; do
        printf '%-15s %10s %10s %8s %12s\n' "$n" "$(v $n.plain)" "$(v $n.replay)" "$(ratio "$(v $n.replay)" "$(v $n.plain)")" "$(v $n.replay_self)"
    done
    echo
    echo "replay with --timing vs the original steps (execute_s: the summary's execute_ms; orig_steps_s: the program's"
    echo "self-timed steps scaled to all recorded steps; gpu_s: GPU time of every launch, summed by --timing)"
    printf '%-15s %12s %10s %8s %10s  %s\n' case orig_steps_s execute_s ratio gpu_s "top kernel|launches|total_ms"
    for n in mlp transformer; do
        printf '%-15s %12s %10s %8s %10s  %s\n' "$n" "$(v $n.t_orig)" "$(v $n.t_exec)" \
            "$(ratio "$(v $n.t_exec)" "$(v $n.t_orig)")" "$(v $n.t_gpu)" "$(v $n.t_top)"
    done
    echo
    echo "replay execute (the summary's execute_ms) vs the program's own launch loop (goal <= 0.8)"
    printf '%-15s %10s %10s %8s %12s %16s\n' case loop_s execute_s ratio baseline_s current/baseline
    printf '%-15s %10s %10s %8s %12s %16s\n' tiny_launches "$(v tiny_launches.plain_self)" "$(v tiny_launches.exec)" \
        "$(ratio "$(v tiny_launches.exec)" "$(v tiny_launches.plain_self)")" "$(v tiny_launches.exec_base)" "$(v tiny_launches.exec_vs_base)"
    echo
    echo "multi-threaded program (tests/gpu/threads: 4 host threads, a stream each, kernels of ~0.1 ms and"
    echo "stream waits overlapping): replay execute vs the program's threaded section; baseline: HRR_BENCH_BASELINE's"
    printf '%-15s %10s %10s %8s %12s %16s\n' replay program_s execute_s ratio baseline_s current/baseline
    printf '%-15s %10s %10s %8s %12s %16s\n' single-thread "$(v threads.plain_self)" "$(v threads.exec)" \
        "$(ratio "$(v threads.exec)" "$(v threads.plain_self)")" "$(v threads.exec_base)" "$(v threads.exec_vs_base)"
    printf '%-15s %10s %10s %8s %12s %16s\n' multi-thread "$(v threads.plain_self)" "$(v threads_mt.exec)" \
        "$(ratio "$(v threads_mt.exec)" "$(v threads.plain_self)")" "$(v threads_mt.exec_base)" "$(v threads_mt.exec_vs_base)"
    echo
    echo "tiny launches issued other ways (loop_s of tests/gpu/tiny_launches MODE; ratio to runtime)"
    printf '%-15s %10s %8s\n' mode loop_s ratio
    for m in "${TINY_MODES[@]}"; do
        printf '%-15s %10s %8s\n' "$m" "$(v tiny_mode.$m)" "$(ratio "$(v tiny_mode.$m)" "$(v tiny_mode.runtime)")"
    done
    echo
    echo "asynchronous copies (tests/gpu/async_copies; figures the program measured; ratio = captured/plain)"
    printf '%-20s %12s %12s %8s\n' figure plain captured ratio
    for f in "${ASYNC_FIGS[@]}"; do
        printf '%-20s %12s %12s %8s\n' "$f" "$(v async_copies.$f.plain)" "$(v async_copies.$f.captured)" "$(v async_copies.$f.ratio)"
    done
    echo
    echo "bulk copies (tests/gpu/bulk_copies: 4 GiB H2D in 64 MiB pageable chunks, 1 GiB back; goals: capture <= 1.5, replay <= 1.0)"
    printf '%-20s %12s %12s %8s\n' figure plain captured ratio
    for f in "${BULK_FIGS[@]}"; do
        printf '%-20s %12s %12s %8s\n' "$f" "$(v bulk_copies.$f.plain)" "$(v bulk_copies.$f.captured)" "$(v bulk_copies.$f.ratio)"
    done
    printf '%-20s %12s %12s %8s %12s %16s\n' "replay execute_s" "$(v bulk_copies.copy_s.plain)" "$(v bulk_copies.exec)" \
        "$(ratio "$(v bulk_copies.exec)" "$(v bulk_copies.copy_s.plain)")" "$(v bulk_copies.exec_base)" "$(v bulk_copies.exec_vs_base)"
    if [ -s "$OUT/samples/samples-bench.txt" ]; then
        echo
        echo "CUDA samples, by the figures they print (scripts/samples-bench.sh; goals: issue 22)"
        cat "$OUT/samples/samples-bench.txt"
    fi
    echo
    if [ $failures = 0 ]; then echo "result: all runs succeeded"; else echo "result: $failures failure(s):"; cat "$OUT/failures.txt"; fi
} >"$OUT/bench.txt"
echo
cat "$OUT/bench.txt"
[ $failures = 0 ] || exit 1
exit 0
