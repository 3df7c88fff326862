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
#   multicopy   `copy_app multicopy 10 4`: simpleMultiCopy's serialized loop over 8 mapped
#               page-locked buffers (the tracker of host-visible memory, one buffer uploaded again)
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
[ ${#cases[@]} -gt 0 ] || cases=(launch chain multicopy d2h_reg d2h h2d reupload)

# Instructions of APP ARGS... run plainly.
plain_ir() {
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.plain" "$work/fake/$1" "${@:2}" \
        >/dev/null 2>"$work/vg.log" || { cat "$work/vg.log" >&2; exit 1; }
    total_ir "$work/cg.plain"
}

# Instructions of every process of `hrr-capture -o ARCHIVE -- APP ARGS...` with build DIR.
captured_ir() {
    local dir=$1
    rm -rf "$work/run.hrr" "$work"/cg.cap.*
    HRR_CAPTURE_LIB="$dir/libhrr_capture.so" valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$work/cg.cap.%p" "$dir/hrr-capture" -o "$work/run.hrr" -- \
        "$work/fake/$2" "${@:3}" >/dev/null 2>"$work/vg.log" || { cat "$work/vg.log" >&2; exit 1; }
    total_ir "$work"/cg.cap.*
}

# The sum of the `summary:` lines of callgrind output files.
total_ir() {
    awk '/^summary:/ { s += $2 } END { printf "%d\n", s }' "$@"
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

echo "instructions capture adds (callgrind; fake driver; build $bin${base:+, baseline $base})"
for c in "${cases[@]}"; do
    case $c in
    launch | chain)
        # launch: one kernel, arguments in `extra`; chain: two kernels alternating
        args=(launches 20000 8) more=(launches 40000 8) label="per launch"
        [ $c = launch ] || args=(chain 20000) more=(chain 40000) label="per chained"
        read -r t1 b1 <<<"$(measure driver_app "${args[@]}")"
        read -r t2 b2 <<<"$(measure driver_app "${more[@]}")"
        report "$label" $(((t2 - t1) / 20000)) ${b1:+$(((b2 - b1) / 20000))}
        ;;
    multicopy) read -r t b <<<"$(measure copy_app multicopy 10 4)" && report "$c" "$t" $b ;;
    d2h_reg) read -r t b <<<"$(measure copy_app d2h 4 16 registered)" && report "$c" "$t" $b ;;
    d2h) read -r t b <<<"$(measure copy_app d2h 4 16)" && report "$c" "$t" $b ;;
    h2d) read -r t b <<<"$(measure copy_app h2d 256 16)" && report "$c" "$t" $b ;;
    reupload) read -r t b <<<"$(measure copy_app reupload 30)" && report "$c" "$t" $b ;;
    *) echo "bench-capture-instructions: unknown case $c" >&2; exit 2 ;;
    esac
done
