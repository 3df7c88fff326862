#!/usr/bin/env bash
# What capture adds to a module load that follows large uploads, against the fake driver: the
# tensor-core GEMM samples upload 128 MiB of inputs, then load their module lazily inside their
# timed region, where capture stores the image beside the driver's load. `copy_app load MIB KIB`
# (tests/fake-cuda/apps/copy_app.c) uploads MIB in 32 MiB blocking copies, then loads a KIB
# image and prints how long the load took; it runs plain and captured, alternated REPS times,
# and the medians and the largest captured time are printed. With BASELINE=DIR (another
# build's hrr-capture and libhrr_capture.so), each round also captures with that build.
#
#   bash scripts/bench-module-load.sh [REPS=9] [MIB=128] [KIB=256]
#   BASELINE=/tmp/old-bin bash scripts/bench-module-load.sh
# Needs `cargo build --release --workspace` and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fake-bench.sh
fake_bench_setup bench-module-load hrr-capture libhrr_capture.so
reps=${1:-9} mib=${2:-128} kib=${3:-256} base=${BASELINE:-}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
largest() { printf '%s\n' "$@" | sort -g | tail -1; }
load_us() { grep -o 'load_us=[0-9.]*' | cut -d= -f2; }
captured() {
    rm -rf "$work/load.hrr"
    HRR_CAPTURE_LIB="$1/libhrr_capture.so" "$1/hrr-capture" -o "$work/load.hrr" -- \
        "$work/fake/copy_app" load "$mib" "$kib" 2>/dev/null | load_us
}
plain=() this=() other=()
for _ in $(seq 1 "$reps"); do
    plain+=("$("$work/fake/copy_app" load "$mib" "$kib" | load_us)")
    this+=("$(captured "$bin")")
    [ -z "$base" ] || other+=("$(captured "$base")")
done
echo "module load after $mib MiB of uploads, a $kib KiB image, $reps rounds (microseconds)"
printf '%-10s median %9s  largest %9s\n' plain "$(median "${plain[@]}")" "$(largest "${plain[@]}")"
printf '%-10s median %9s  largest %9s\n' captured "$(median "${this[@]}")" "$(largest "${this[@]}")"
[ -z "$base" ] || printf '%-10s median %9s  largest %9s\n' baseline "$(median "${other[@]}")" "$(largest "${other[@]}")"
