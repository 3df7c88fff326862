#!/usr/bin/env bash
# Capture overhead on the CPU, against the fake driver (tests/fake-cuda): driver_app's workload
# repeated N times (6 launches, copies and a memset per round), plain and captured runs
# alternated REPS times in one run; prints each pair and the median captured/plain ratio.
# With BASELINE=DIR (a folder holding another build's hrr-capture and libhrr_capture.so), each
# round also captures with that build, and the median ratio of the two captures is printed:
# the way to compare a change against the code before it, in the same run.
#   bash scripts/bench-capture-cpu.sh [ROUNDS=20000] [REPS=5]
#   BASELINE=/tmp/old-bin bash scripts/bench-capture-cpu.sh 20000 7
# Needs `cargo build --release --workspace` and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20000}
reps=${2:-5}
bin=${BIN:-target/release}
base=${BASELINE:-}
[ -x "$bin/hrr-capture" ] && [ -f "$bin/libhrr_capture.so" ] || {
    echo "bench-capture-cpu: build first: cargo build --release --workspace" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sh tests/fake-cuda/build.sh "$work/fake"
export LD_LIBRARY_PATH=$work/fake
now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
captured() { # BIN_DIR ARCHIVE
    rm -rf "$2"
    "$1/hrr-capture" -o "$2" -- "$work/fake/driver_app" loop "$rounds" >/dev/null 2>&1
}
ratios=()
vs_base=()
for i in $(seq 1 "$reps"); do
    t0=$(now)
    "$work/fake/driver_app" loop "$rounds" >/dev/null
    t1=$(now)
    captured "$bin" "$work/a.hrr"
    t2=$(now)
    r=$(echo "($t2 - $t1) / ($t1 - $t0)" | bc -l)
    printf 'round %d: plain %.3f s  captured %.3f s  ratio %.3f' "$i" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$t2 - $t1" | bc -l)" "$r"
    ratios+=("$r")
    if [ -n "$base" ]; then
        captured "$base" "$work/b.hrr"
        t3=$(now)
        b=$(echo "($t2 - $t1) / ($t3 - $t2)" | bc -l)
        printf '  baseline captured %.3f s  this/baseline %.3f' "$(echo "$t3 - $t2" | bc -l)" "$b"
        vs_base+=("$b")
    fi
    echo
done
launches=$((rounds * 6))
echo "events: $("$bin/hrr-playback" "$work/a.hrr" --info --json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v.get("events", v.get("process", {}).get("events")))')  launches: $launches  archive: $(du -sh "$work/a.hrr" | cut -f1)"
printf 'median captured/plain: %.3f\n' "$(median "${ratios[@]}")"
if [ -n "$base" ]; then
    printf 'median captured (this build) / captured (baseline): %.3f\n' "$(median "${vs_base[@]}")"
fi
