#!/usr/bin/env bash
# Benchmark of the offline reader on a large capture: builds release, generates EVENTS events
# (default 1,000,000 of ~1 KiB: an events.bin of ~1 GiB) from THREADS distinct thread ids
# (default 4) of about EVENT_BYTES each (default 1056) into a temp folder, then times
#   hrr-playback DIR --info            (complete capture)
#   hrr-playback DIR --repair          (after tearing the tail)
#   hrr-playback DIR --info            (repaired capture)
# and reports wall time and peak RSS of each. Goal: --info < 2 s and < 100 MiB RSS; with many
# threads --info stays linear in the events (a hash set of thread ids): the thread-heavy case
#   scripts/bench-info.sh 10000000 400000 64     # 10 M events, 400,000 thread ids, ~0.9 GB
# took > 600 s before (a linear search per event) and must take under 5 s.
#
#   scripts/bench-info.sh [EVENTS [THREADS [EVENT_BYTES]]]   # BENCH_DIR=... to choose where
set -euo pipefail

EVENTS="${1:-1000000}"
THREADS="${2:-4}"
EVENT_BYTES="${3:-1056}"
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (for peak RSS)..." >&2
    if command -v apt-get >/dev/null; then
        (apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y time >/dev/null 2>&1; }) || true
    fi
fi

cargo build --release -q -p hrr-playback --bin hrr-playback
cargo build --release -q -p hrr-archive --example gen_big
BIN=target/release/hrr-playback
GEN=target/release/examples/gen_big

WORK="$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/hrr-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
ARCHIVE="$WORK/big.hrr"

echo "generating $EVENTS events from $THREADS threads into $ARCHIVE ..."
start=$(date +%s.%N)
"$GEN" "$ARCHIVE" "$EVENTS" "$THREADS" "$EVENT_BYTES" >/dev/null
gen_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
DIR="$ARCHIVE/pid-4242"
SIZE=$(stat -c %s "$DIR/events.bin")

# measure NAME CMD...: prints wall seconds and max RSS (KiB) of CMD, output discarded.
declare -a REPORT
measure() {
    local name="$1"; shift
    local log="$WORK/time.log"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v "$@" >"$WORK/out.txt" 2>"$log" || { cat "$log" >&2; exit 1; }
        local wall rss
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
        REPORT+=("$(printf '%-28s wall %-10s max RSS %6.1f MiB' "$name" "$wall" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')")")
    else
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >"$WORK/out.txt"
        t1=$(date +%s.%N)
        REPORT+=("$(printf '%-28s wall %.3f s  (max RSS unknown: GNU time missing)' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")")
    fi
}

sync
if echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then
    measure "--info (page cache dropped)" "$BIN" "$DIR" --info
else
    measure "--info (first run)" "$BIN" "$DIR" --info
fi
measure "--info (warm cache)" "$BIN" "$DIR" --info
measure "--info on the root" "$BIN" "$ARCHIVE" --info
measure "--events --json | wc" sh -c "'$BIN' '$DIR' --events --json | wc -l"
# tear the tail: cut the trailer and half of the last record
truncate -s $((SIZE - 44 - 500)) "$DIR/events.bin"
measure "--info (torn tail)" "$BIN" "$DIR" --info
measure "--repair (torn tail)" "$BIN" "$DIR" --repair
cp "$WORK/out.txt" "$WORK/repair.txt"
measure "--info (repaired)" "$BIN" "$DIR" --info

echo
echo "hrr-playback reader benchmark: $EVENTS events from $THREADS threads, events.bin $SIZE bytes ($((SIZE / 1048576)) MiB), generated in ${gen_s}s"
printf '%s\n' "${REPORT[@]}"
echo "repair said: $(cat "$WORK/repair.txt")"
