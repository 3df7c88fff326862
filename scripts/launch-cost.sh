#!/usr/bin/env bash
# What capture adds to one kernel launch on this GPU machine, in microseconds of the program's
# own thread: tests/gpu/launch_cost (bursts of launches the GPU's queue holds, timed by the
# program) run plainly and captured, alternating, ROUNDS times.
#
#   bash scripts/launch-cost.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds hrr-capture and libhrr_capture.so. With HRR_LAUNCH_BASELINE=DIR (another build)
# its captured runs join each round, the order of the builds turned round every other round.
# Prints, then writes to OUT_DIR/launch-cost.txt, one row a build: the median over rounds of
# the program's median us a launch, and of (captured - plain) in the same round, the added us a
# launch. That is the figure a hook's change is judged by: samples' self-reported throughputs
# spread +-20% between runs, this one a few hundredths of a microsecond.
# Environment: HRR_LAUNCH_ROUNDS (default 7), HRR_LAUNCH_BURSTS (default 400 bursts of 256).
# Exit status: 0 when every run succeeded, 1 otherwise, 2 on a usage error; 0 with a SKIP line
# when the machine has no GPU.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/gpu.sh"
usage_unless $# 2 "${BASH_SOURCE[0]}"
BIN=$(cd "$1" && pwd) || exit 2
OUT=$(mkdir -p "$2" && cd "$2" && pwd) || exit 2
skip_without_gpu launch-cost "$OUT/launch-cost.txt"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${HRR_LAUNCH_ROUNDS:-7}
bursts=${HRR_LAUNCH_BURSTS:-400}
base=${HRR_LAUNCH_BASELINE:-}
[ -z "$base" ] || base=$(cd "$base" && pwd) || exit 2

bash "$root/tests/gpu/build.sh" "$OUT/build" launch_cost >/dev/null 2>&1 ||
    { echo "[launch-cost] launch_cost did not build: $OUT/build/build.log" >&2; exit 1; }
prog=$OUT/build/launch_cost
# the archives, not kept (each run's replaces the last)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
: >"$OUT/runs.tsv"
# one WHO [CAPTURE_DIR]: one run, its median us a launch appended to runs.tsv as `round who us`.
one() {
    local who=$1 dir=${2:-} line
    rm -rf "$scratch/$who.hrr"
    if [ -z "$dir" ]; then
        line=$("$prog" "$bursts" 2>"$OUT/$who.err")
    else
        line=$(HRR_CAPTURE_LIB="$dir/libhrr_capture.so" "$dir/hrr-capture" -o "$scratch/$who.hrr" -- \
            "$prog" "$bursts" 2>"$OUT/$who.err")
    fi
    # shellcheck disable=SC2181
    if [ $? -ne 0 ] || [[ $line != us_per_launch* ]]; then
        echo "[launch-cost] round $r: $who failed (see $OUT/$who.err)" >&2
        status=1
        return
    fi
    echo "$r $who $(echo "$line" | awk '{print $2}')" >>"$OUT/runs.tsv"
}
for r in $(seq 1 "$rounds"); do
    one plain
    if [ -n "$base" ] && [ $((r % 2)) -eq 0 ]; then
        one baseline "$base"
        one captured "$BIN"
    else
        one captured "$BIN"
        [ -z "$base" ] || one baseline "$base"
    fi
done

python3 - "$OUT/runs.tsv" <<'EOF' | tee "$OUT/launch-cost.txt"
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, who, us = line.split()
    runs.setdefault(who, {})[r] = float(us)
plain = runs.get("plain", {})
print(f"{'build':<10} {'us/launch':>10} {'added us':>9} {'rounds':>7}")
for who in ("plain", "captured", "baseline"):
    if who not in runs:
        continue
    med = statistics.median(runs[who].values())
    added = [v - plain[r] for r, v in runs[who].items() if r in plain]
    add = f"{statistics.median(added):.3f}" if who != "plain" and added else "-"
    print(f"{who:<10} {med:>10.3f} {add:>9} {len(runs[who]):>7}")
EOF
exit $status
