#!/usr/bin/env bash
# What capture adds to one launch in wall time on this CPU, against the fake driver, with the
# first-level instruction cache emptied before each launch (FAKE_APP_POLLUTE_CODE=1: 128 KiB of
# other code run between launches, as a real driver's launch path runs between two of the
# program's launches on a GPU machine). A hook's added time on a GPU machine is mostly the code
# and data lines it touches (scripts/bench-capture-instructions.sh launch_lines); this is the
# wall-time counterpart of that count, runnable without a GPU.
#
#   bash scripts/bench-launch-wall.sh [REPS=7]
#   BASELINE=/tmp/old-bin bash scripts/bench-launch-wall.sh
#
# Each rep runs `driver_app launches 100000 8` plainly and captured (and captured with
# BASELINE's build, the builds' order turned round every other rep); the app times its own launch
# loop (FAKE_APP_LOOP_TIME=1: start-up and the archive's finish left out), and a rep's added ns a
# launch is captured less plain. Prints the median over reps for each build, and their ratio.
# HRR_BENCH_POLLUTE_CODE=0 leaves the instruction cache as the launches leave it.
# Needs a C compiler and `cargo build --release --workspace` (BIN=DIR: another folder); x86-64.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fake-bench.sh
fake_bench_setup bench-launch-wall hrr-capture libhrr_capture.so
reps=${1:-7}
base=${BASELINE:-}

export FAKE_APP_LOOP_TIME=1 FAKE_APP_POLLUTE_CODE=${HRR_BENCH_POLLUTE_CODE:-1}
# loop DIR: the ns a launch of one run's loop, plain when DIR is empty.
loop() {
    local dir=$1
    rm -rf "$work/run.hrr"
    if [ -z "$dir" ]; then
        "$work/fake/driver_app" launches 100000 8 2>&1 >/dev/null
    else
        HRR_CAPTURE_LIB="$dir/libhrr_capture.so" "$dir/hrr-capture" \
            -o "$work/run.hrr" -- "$work/fake/driver_app" launches 100000 8 2>&1 >/dev/null
    fi | awk '/^loop_ns_per_launch/ { print $2 }'
}

: >"$work/runs"
for r in $(seq 1 "$reps"); do
    builds=(this)
    [ -z "$base" ] || { [ $((r % 2)) = 1 ] && builds=(this baseline) || builds=(baseline this); }
    plain=$(loop "")
    for b in "${builds[@]}"; do
        dir=$bin
        [ $b = this ] || dir=$base
        echo "$b $plain $(loop "$dir")" >>"$work/runs"
    done
done
python3 - "$work/runs" <<'EOF'
import statistics, sys
added = {}
for line in open(sys.argv[1]):
    b, plain, captured = line.split()
    added.setdefault(b, []).append(float(captured) - float(plain))
print("ns capture adds to a launch in the program's loop (fake driver)")
for b, v in added.items():
    print(f"{b:<9} median {statistics.median(v):7.1f}  ({', '.join(f'{x:.0f}' for x in v)})")
if "baseline" in added:
    print(f"this/baseline {statistics.median(added['this']) / statistics.median(added['baseline']):.3f}")
EOF
