#!/usr/bin/env bash
# Replay's own cost per event on the CPU, against the fake driver (tests/fake-cuda), whose calls
# cost next to nothing: driver_app's workload repeated N rounds (6 launches, copies and a memset
# per round; the fake runs its kernels on the CPU) and 5 N launches of a kernel doing nothing
# (`launches`: replay's own cost per launch) are captured once each, then replayed REPS times; prints the median `execute_ms` of the
# replay summary (the timed part: events decoded, reissued, results compared) and µs per event.
# With BASELINE=DIR (a folder holding another build's hrr-playback), each repetition also
# replays with that build, alternating, and the median ratio current/baseline is printed: the
# way to compare a change against the code before it, in the same run. Then the same for a bulk
# case: copy_app's 1 GiB of blocking H2D copies in 32 MiB chunks (HRR_BENCH_H2D_MIB,
# HRR_BENCH_CHUNK_MIB), whose replay is reading the blobs and copying them. Last, two threads
# each running the workload ROUNDS/4 times (`threads`), replayed single-threaded and with
# --multi-thread, alternating: the median execute_ms ratio multi/single (the cost of the
# cross-thread gate; the fake runs kernels inside the launch call, under the backend's lock).
#   bash scripts/bench-replay-cpu.sh [ROUNDS=20000] [REPS=5]
#   BASELINE=/tmp/old-bin bash scripts/bench-replay-cpu.sh 20000 7
# Needs `cargo build --release --workspace` and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fake-bench.sh
fake_bench_args "$@"
fake_bench_setup bench-replay-cpu hrr-capture libhrr_capture.so hrr-playback
measure() { # LABEL ARCHIVE_PID_DIR
    local label=$1
    pid=$2
    local -a cur=() old=() ratios=()
    local c o
    for _ in $(seq "$reps"); do
        c=$(execute_ms "$bin")
        cur+=("$c")
        if [ -n "$base" ]; then
            o=$(execute_ms "$base")
            old+=("$o")
            ratios+=("$(python3 -c "print($c / $o)")")
            printf '%s: execute_ms current %9.1f  baseline %9.1f\n' "$label" "$c" "$o"
        else
            printf '%s: execute_ms current %9.1f\n' "$label" "$c"
        fi
    done
    local events m
    events=$("$bin/hrr-playback" "$pid" --info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
    m=$(median "${cur[@]}")
    echo "$label: events $events, median execute $m ms, $(python3 -c "print(round($m * 1000 / $events, 3))") us/event"
    if [ -n "$base" ]; then
        echo "$label: baseline median execute $(median "${old[@]}") ms; median ratio current/baseline $(median "${ratios[@]}")"
    fi
}
execute_ms() { # BIN_DIR [REPLAY_ARGS...]
    local b=$1
    shift
    "$b/hrr-playback" "$pid" "$@" --runtime "$work/fake/libcuda.so.1" --json --no-progress |
        python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["verdict"]=="PASS", j["verdict_line"]; print(j["execute_ms"])'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$bin/hrr-capture" -o "$work/run.hrr" -- "$work/fake/driver_app" loop "$rounds" >/dev/null 2>&1
measure "workload ($rounds rounds)" "$(ls -d "$work"/run.hrr/pid-*)"
"$bin/hrr-capture" -o "$work/tiny.hrr" -- "$work/fake/driver_app" launches "$((rounds * 5))" >/dev/null 2>&1
measure "tiny launches ($((rounds * 5)))" "$(ls -d "$work"/tiny.hrr/pid-*)"
"$bin/hrr-capture" -o "$work/bulk.hrr" -- "$work/fake/copy_app" h2d "${HRR_BENCH_H2D_MIB:-1024}" "${HRR_BENCH_CHUNK_MIB:-32}" >/dev/null 2>&1
measure "bulk H2D" "$(ls -d "$work"/bulk.hrr/pid-*)"
"$bin/hrr-capture" -o "$work/threads.hrr" -- "$work/fake/driver_app" threads "$((rounds / 4))" >/dev/null 2>&1
pid=$(ls -d "$work"/threads.hrr/pid-*)
single=() multi=() mratios=()
for _ in $(seq "$reps"); do
    s=$(execute_ms "$bin")
    m=$(execute_ms "$bin" --multi-thread)
    single+=("$s")
    multi+=("$m")
    mratios+=("$(python3 -c "print($m / $s)")")
    printf 'threads: execute_ms single-threaded %9.1f  --multi-thread %9.1f\n' "$s" "$m"
done
echo "threads: median execute single $(median "${single[@]}") ms, --multi-thread $(median "${multi[@]}") ms; median ratio multi/single $(median "${mratios[@]}")"
