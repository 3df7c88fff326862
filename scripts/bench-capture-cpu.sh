#!/usr/bin/env bash
# Capture overhead on the CPU, against the fake driver (tests/fake-cuda): driver_app's workload
# repeated N times (6 launches, copies and a memset per round), plain and captured runs
# alternated REPS times in one run; prints each pair and the median captured/plain ratio.
#   bash scripts/bench-capture-cpu.sh [ROUNDS=20000] [REPS=5]
# Needs `cargo build --release --workspace` and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20000}
reps=${2:-5}
bin=target/release
[ -x "$bin/hrr-capture" ] && [ -f "$bin/libhrr_capture.so" ] || {
    echo "bench-capture-cpu: build first: cargo build --release --workspace" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sh tests/fake-cuda/build.sh "$work/fake"
export LD_LIBRARY_PATH=$work/fake
now() { date +%s.%N; }
ratios=()
for i in $(seq 1 "$reps"); do
    t0=$(now)
    "$work/fake/driver_app" loop "$rounds" >/dev/null
    t1=$(now)
    rm -rf "$work/a.hrr"
    "$bin/hrr-capture" -o "$work/a.hrr" -- "$work/fake/driver_app" loop "$rounds" >/dev/null 2>&1
    t2=$(now)
    r=$(echo "($t2 - $t1) / ($t1 - $t0)" | bc -l)
    printf 'pair %d: plain %.3f s  captured %.3f s  ratio %.3f\n' "$i" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$t2 - $t1" | bc -l)" "$r"
    ratios+=("$r")
done
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
launches=$((rounds * 6))
echo "events: $("$bin/hrr-playback" "$work/a.hrr" --info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')  launches: $launches  archive: $(du -sh "$work/a.hrr" | cut -f1)"
printf 'median captured/plain: %.3f\n' "$median"
