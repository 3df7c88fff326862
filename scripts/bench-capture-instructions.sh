#!/usr/bin/env bash
# Capture's cost in instructions, against the fake driver (tests/fake-cuda): each case runs once
# plain and once under `hrr-capture -o`, both under `valgrind --tool=callgrind` (every process
# of the capture counted), and the instructions capture added (captured less plain) are printed.
# Instruction counts repeat from run to run, where wall times on a shared machine do not: the
# way to measure a change to capture's hot paths on a CPU. With BASELINE=DIR (another build's
# hrr-capture and libhrr_capture.so) each case is also captured with it, and the two added
# counts and their ratio are printed.
#
#   bash scripts/bench-capture-instructions.sh [CASE...]
#   BASELINE=/tmp/old-bin bash scripts/bench-capture-instructions.sh
#
# Cases (default: all):
#   launch      per launch: `driver_app launches N 8` at N = 20000 and 40000, the difference
#               over 20000 (what one more launch costs, start-up left out)
#   chain       the same of `driver_app chain N`: two kernels alternating (15 of 16 launches
#               `axpy`, one `fill_u32`), their arguments as pointers
#   pinned      per launch of `launches N 64 pinned`: 64-word arguments (as PyTorch's kernels
#               take) beside a mapped pinned region capture tracks (a `pin_memory` DataLoader's),
#               so every launch's words are matched against the tracked regions
#   launch_cold per launch with cold caches: `launches N 8` at N = 1000 and 2000 with 4 MiB of
#               other memory touched before each launch (FAKE_APP_POLLUTE_KB, as an interpreter
#               between a framework's launches), under callgrind's cache simulation (32 KiB D1,
#               1 MiB last level): the instructions, D1 misses and last-level misses capture adds
#               to a launch, i.e. the cache lines its hook touches (on a GPU machine a launch's
#               added time is mostly these misses, not its instructions)
#   launch_lines  the cache lines a launch's hook touches: `launches N 8` at N = 2000 and 4000
#               under callgrind's cache simulation with 1 KiB first-level caches, so that
#               nearly every line a launch touches misses in them: the code lines (I1) and data
#               lines (D1) capture adds to a launch. After the driver's own launch work has run,
#               a GPU machine's first-level caches hold little of the hook's: each of these
#               lines is then a miss of its own (a few ns each), most of a hook's added time
#   multicopy   `copy_app multicopy 10 4`: simpleMultiCopy's serialized loop over 8 mapped
#               page-locked buffers (the tracker of host-visible memory, one buffer uploaded again)
#   multicopy_same  the same with every round's result the same bytes (as simpleMultiCopy's
#               kernel gives them): a result stored again costs its fingerprints only
#   d2h_reg     `copy_app d2h 4 16 registered`: a fresh blocking 16 MiB D2H result per round
#               into memory registered and mapped (simpleStreams' non-streamed loop)
#   d2h         the same into pageable memory
#   h2d         `copy_app h2d 256 16`: blocking uploads of distinct contents
#   reupload    `copy_app reupload 30`: one 1 MiB page-locked buffer uploaded again, changed
#               at two of three uploads
# Needs valgrind, a C compiler and `cargo build --release --workspace` (BIN=DIR: another folder).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "bench-capture-instructions: needs valgrind" >&2; exit 1; }
. scripts/lib/fake-bench.sh
fake_bench_setup bench-capture-instructions hrr-capture libhrr_capture.so
base=${BASELINE:-}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(launch chain pinned launch_cold launch_lines multicopy multicopy_same d2h_reg d2h h2d reupload)

# What callgrind counts and what is totalled: instructions, or (launch_cold) the cache
# simulation's events too; `events` lists the totals, each a sum of callgrind events.
vg_opts=()
events=(Ir)

# The totals (one a line, as `events` names them) of APP ARGS... run plainly.
plain_ir() {
    valgrind --tool=callgrind "${vg_opts[@]}" --callgrind-out-file="$work/cg.plain" \
        "$work/fake/$1" "${@:2}" >/dev/null 2>"$work/vg.log" || { cat "$work/vg.log" >&2; exit 1; }
    total_ir "$work/cg.plain"
}

# The totals of every process of `hrr-capture -o ARCHIVE -- APP ARGS...` with build DIR.
captured_ir() {
    local dir=$1
    rm -rf "$work/run.hrr" "$work"/cg.cap.*
    HRR_CAPTURE_LIB="$dir/libhrr_capture.so" valgrind --tool=callgrind "${vg_opts[@]}" \
        --trace-children=yes --callgrind-out-file="$work/cg.cap.%p" "$dir/hrr-capture" \
        -o "$work/run.hrr" -- "$work/fake/$2" "${@:3}" >/dev/null 2>"$work/vg.log" ||
        { cat "$work/vg.log" >&2; exit 1; }
    total_ir "$work"/cg.cap.*
}

# The sums of the `summary:` lines of callgrind output files, a line for each of `events`
# (an entry such as "DLmr DLmw" adds those events' columns).
total_ir() {
    local e
    for e in "${events[@]}"; do
        awk -v want="$e" '
            /^events:/ { for (i = 2; i <= NF; i++) col[$i] = i }
            /^summary:/ { n = split(want, w, " "); for (k = 1; k <= n; k++) s += $(col[w[k]]) }
            END { printf "%d\n", s }' "$@"
    done
}

# added COUNT_PLAIN COUNT_CAPTURED: capture's instructions.
added() { echo $(($2 - $1)); }

# One line: CASE, added by this build, and by the baseline with the ratio.
report() {
    local name=$1 this=$2 before=${3:-}
    if [ -n "$before" ]; then
        awk -v n="$name" -v t="$this" -v b="$before" \
            'BEGIN { printf "%-10s %14d  baseline %14d  this/baseline %.3f\n", n, t, b, t / b }'
    else
        printf '%-10s %14d\n' "$name" "$this"
    fi
}

# measure APP ARGS...: capture's added instructions with this build (and the baseline's).
measure() {
    local p t b=""
    p=$(plain_ir "$@")
    t=$(added "$p" "$(captured_ir "$bin" "$@")")
    [ -z "$base" ] || b=$(added "$p" "$(captured_ir "$base" "$@")")
    echo "$t $b"
}

# per_launch_sim N LABEL...: under the callgrind options `vg_opts`, `launches N 8` and
# `launches 2N 8` plainly and captured (and by the baseline); for each of `events` (LABEL names
# it), per launch: (captured - plain) at 2N less the same at N, over N. `vg_opts` and `events`
# are left as they were before the case set them.
per_launch_sim() {
    local n=$1 m k i runs=() this before=()
    shift
    for m in "$n" $((2 * n)); do
        runs+=("$(plain_ir driver_app launches "$m" 8)" "$(captured_ir "$bin" driver_app launches "$m" 8)")
        [ -z "$base" ] || runs+=("$(captured_ir "$base" driver_app launches "$m" 8)")
    done
    vg_opts=()
    events=(Ir)
    k=$((${#runs[@]} / 2))
    # added A B: the per-launch difference of build A's runs (1: this, 2: the baseline's)
    added_per() {
        paste <(echo "${runs[0]}") <(echo "${runs[$1]}") <(echo "${runs[$k]}") <(echo "${runs[$((k + $1))]}") |
            awk -v n="$n" '{ printf "%d ", (($4 - $3) - ($2 - $1)) / n }'
    }
    read -r -a this <<<"$(added_per 1)"
    [ -z "$base" ] || read -r -a before <<<"$(added_per 2)"
    for i in $(seq 0 $(($# - 1))); do
        report "${@:$((i + 1)):1}" "${this[$i]}" ${base:+"${before[$i]}"}
    done
}

echo "instructions capture adds (callgrind; fake driver; build $bin${base:+, baseline $base})"
for c in "${cases[@]}"; do
    case $c in
    launch | chain | pinned)
        # launch: one kernel, arguments in `extra`; chain: two kernels alternating; pinned:
        # 64-word arguments beside a tracked region
        args=(launches 20000 8) more=(launches 40000 8) label="per launch"
        [ $c != chain ] || args=(chain 20000) more=(chain 40000) label="per chained"
        [ $c != pinned ] || args=(launches 20000 64 pinned) more=(launches 40000 64 pinned) label="per pinned"
        read -r t1 b1 <<<"$(measure driver_app "${args[@]}")"
        read -r t2 b2 <<<"$(measure driver_app "${more[@]}")"
        report "$label" $(((t2 - t1) / 20000)) ${b1:+$(((b2 - b1) / 20000))}
        ;;
    launch_cold)
        vg_opts=(--cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64)
        events=(Ir "D1mr D1mw" "DLmr DLmw")
        FAKE_APP_POLLUTE_KB=4096 per_launch_sim 1000 "cold instr" "cold D1 miss" "cold LL miss"
        ;;
    launch_lines)
        vg_opts=(--cache-sim=yes --I1=1024,2,64 --D1=1024,2,64 --LL=1048576,16,64)
        events=("I1mr" "D1mr D1mw")
        per_launch_sim 2000 "code lines" "data lines"
        ;;
    multicopy) read -r t b <<<"$(measure copy_app multicopy 10 4)" && report "$c" "$t" $b ;;
    multicopy_same) read -r t b <<<"$(measure copy_app multicopy 10 4 same)" && report "$c" "$t" $b ;;
    d2h_reg) read -r t b <<<"$(measure copy_app d2h 4 16 registered)" && report "$c" "$t" $b ;;
    d2h) read -r t b <<<"$(measure copy_app d2h 4 16)" && report "$c" "$t" $b ;;
    h2d) read -r t b <<<"$(measure copy_app h2d 256 16)" && report "$c" "$t" $b ;;
    reupload) read -r t b <<<"$(measure copy_app reupload 30)" && report "$c" "$t" $b ;;
    *) echo "bench-capture-instructions: unknown case $c" >&2; exit 2 ;;
    esac
done
