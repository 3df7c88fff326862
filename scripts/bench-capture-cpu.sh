#!/usr/bin/env bash
# Capture overhead on the CPU, against the fake driver (tests/fake-cuda): driver_app's workload
# repeated N times (6 launches, copies and a memset per round), then 10 N launches of 64-word
# arguments beside a mapped pinned region capture tracks (`launches 10N 64 pinned`), plain and
# captured runs alternated REPS times in one run; prints each pair and the median
# captured/plain ratio.
# With BASELINE=DIR (a folder holding another build's hrr-capture and libhrr_capture.so), each
# round also captures with that build, and the median ratio of the two captures is printed:
# the way to compare a change against the code before it, in the same run.
# Then copy cases of tests/fake-cuda/apps/copy_app, alternated the same way:
#   bulk H2D     1 GiB of blocking H2D copies in 64 MiB chunks of distinct contents
#                (HRR_BENCH_H2D_MIB, HRR_BENCH_CHUNK_MIB): median captured/plain wall time;
#   blocking D2H 10 rounds of a memset and a blocking 64 MiB D2H copy of a fresh result
#                (simpleStreams' non-streamed loop; HRR_BENCH_D2H_MIB): median captured/plain
#                wall time; `d2h_reg` the same into memory registered with the driver and
#                mapped into the device (as simpleStreams registers it), which capture's
#                tracker of host-visible memory follows;
#   multicopy    simpleMultiCopy's serialized loop: 10 rounds of async copies of 16 MiB
#                between device memory and 8 mapped page-locked buffers, two of which the
#                copies reach: median captured/plain wall time;
#   async D2H    the fake driver asynchronous (FAKE_CUDA_ASYNC_GBPS=20: copies take time,
#                host functions run on a worker thread), 10 rounds of async H2D+D2H of 16 MiB
#                and an event, the host counting cuEventQuery "not ready" answers meanwhile:
#                median captured/plain of those host-loop iterations (1.0: capture keeps the
#                copies asynchronous; 0: it waits for them at the call);
#   step         a training step's synchronisation path, 2000 rounds of an async upload of 8
#                fresh bytes, a memset, an async 8-byte download and a stream synchronisation
#                (PyTorch's `.item()`): median captured/plain of the microseconds a round takes
#                (what capture adds where a small object must be durable at each sync).
#   bash scripts/bench-capture-cpu.sh [ROUNDS=20000] [REPS=5]
# (HRR_BENCH_COPY_CASES picks copy cases: "h2d d2h d2h_reg multicopy overlap step" by default)
#   BASELINE=/tmp/old-bin bash scripts/bench-capture-cpu.sh 20000 7
# Needs `cargo build --release --workspace` and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/fake-bench.sh
fake_bench_args "$@"
fake_bench_setup bench-capture-cpu hrr-capture libhrr_capture.so
now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
captured() { # BIN_DIR ARCHIVE APP_ARGS...
    rm -rf "$2"
    "$1/hrr-capture" -o "$2" -- "$work/fake/driver_app" "${@:3}" >/dev/null 2>&1
}
# launch_case NAME LAUNCHES APP_ARGS...: driver_app APP_ARGS plain and captured, alternated
launch_case() {
    local name=$1 launches=$2 i t0 t1 t2 t3 r b
    shift 2
    local ratios=() vs_base=()
    for i in $(seq 1 "$reps"); do
        t0=$(now)
        "$work/fake/driver_app" "$@" >/dev/null
        t1=$(now)
        captured "$bin" "$work/a.hrr" "$@"
        t2=$(now)
        r=$(echo "($t2 - $t1) / ($t1 - $t0)" | bc -l)
        printf '%s round %d: plain %.3f s  captured %.3f s  ratio %.3f' "$name" "$i" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$t2 - $t1" | bc -l)" "$r"
        ratios+=("$r")
        if [ -n "$base" ]; then
            captured "$base" "$work/b.hrr" "$@"
            t3=$(now)
            b=$(echo "($t2 - $t1) / ($t3 - $t2)" | bc -l)
            printf '  baseline captured %.3f s  this/baseline %.3f' "$(echo "$t3 - $t2" | bc -l)" "$b"
            vs_base+=("$b")
        fi
        echo
    done
    echo "$name: events: $("$bin/hrr-playback" "$work/a.hrr" --info --json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v.get("events", v.get("process", {}).get("events")))')  launches: $launches  archive: $(du -sh "$work/a.hrr" | cut -f1)"
    printf '%s: median captured/plain: %.3f\n' "$name" "$(median "${ratios[@]}")"
    if [ -n "$base" ]; then
        printf '%s: median captured (this build) / captured (baseline): %.3f\n' "$name" "$(median "${vs_base[@]}")"
    fi
}
# the launch loop: 6 launches, copies and a memset per round
launch_case loop $((rounds * 6)) loop "$rounds"
# launches whose 64-word arguments are matched against a tracked mapped pinned region
launch_case pinned $((rounds * 10)) launches $((rounds * 10)) 64 pinned

# ---- copies: bulk H2D and async D2H overlap (copy_app) ----
h2d_mib=${HRR_BENCH_H2D_MIB:-1024}
chunk_mib=${HRR_BENCH_CHUNK_MIB:-64}
# field NAME FILE: the number after "NAME=" in FILE
field() { sed -nE "s/.*$1=([0-9.]+).*/\1/p" "$2" | head -1; }
d2h_mib=${HRR_BENCH_D2H_MIB:-64}
for case in ${HRR_BENCH_COPY_CASES:-h2d d2h d2h_reg multicopy overlap step}; do
    # metric: the program's own figure compared (empty: the process's wall time)
    metric=
    case $case in
    h2d) args=(h2d "$h2d_mib" "$chunk_mib"); envs=() ;;
    d2h) args=(d2h 10 "$d2h_mib"); envs=() ;;
    d2h_reg) args=(d2h 10 "$d2h_mib" registered); envs=() ;;
    multicopy) args=(multicopy 10 16); envs=() ;;
    overlap) args=(overlap 10 16); envs=(FAKE_CUDA_ASYNC_GBPS=20); metric=host_loop ;;
    step) args=(step 2000); envs=(); metric=us_per_round ;;
    esac
    r_plain=()
    r_base=()
    for i in $(seq 1 "$reps"); do
        sync # dirty pages of the last run written back first: each run starts alike
        t0=$(now)
        env "${envs[@]}" "$work/fake/copy_app" "${args[@]}" >"$work/plain.out"
        t1=$(now)
        rm -rf "$work/c.hrr"
        sync
        t1c=$(now)
        env "${envs[@]}" "$bin/hrr-capture" -o "$work/c.hrr" -- "$work/fake/copy_app" "${args[@]}" >"$work/cap.out" 2>/dev/null
        t2=$(now)
        if [ -z "$metric" ]; then
            a=$(echo "$t1 - $t0" | bc -l)
            b=$(echo "$t2 - $t1c" | bc -l)
            unit=s
        else
            a=$(field "$metric" "$work/plain.out")
            b=$(field "$metric" "$work/cap.out")
            unit=" $metric"
        fi
        r=$(echo "$b / $a" | bc -l)
        printf '%s round %d: plain %.3f%s  captured %.3f%s  ratio %.3f' "$case" "$i" "$a" "$unit" "$b" "$unit" "$r"
        r_plain+=("$r")
        if [ -n "$base" ]; then
            rm -rf "$work/b.hrr"
            sync
            t3=$(now)
            env "${envs[@]}" "$base/hrr-capture" -o "$work/b.hrr" -- "$work/fake/copy_app" "${args[@]}" >"$work/base.out" 2>/dev/null
            t4=$(now)
            if [ -z "$metric" ]; then c=$(echo "$t4 - $t3" | bc -l); else c=$(field "$metric" "$work/base.out"); fi
            rb=$(echo "$c / $a" | bc -l)
            printf '  baseline captured %.3f%s  baseline ratio %.3f' "$c" "$unit" "$rb"
            r_base+=("$rb")
        fi
        echo
    done
    printf '%s: median captured/plain: %.3f' "$case" "$(median "${r_plain[@]}")"
    [ -n "$base" ] && printf '  (baseline build: %.3f)' "$(median "${r_base[@]}")"
    echo
done
