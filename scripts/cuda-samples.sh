#!/usr/bin/env bash
# NVIDIA's CUDA samples as hrr's compatibility corpus: build, run plain, capture, replay.
#
#   bash scripts/cuda-samples.sh [options] SAMPLES_DIR BIN_DIR OUT_DIR
#   bash scripts/cuda-samples.sh --list [SAMPLES_DIR]
#
# SAMPLES_DIR is a checkout or export of NVIDIA/cuda-samples (Samples/, Common/,
# cmake/); BIN_DIR holds hrr-capture, hrr-playback and libhrr_capture.so; OUT_DIR
# receives the builds, logs, archives, rows/<sample>.tsv, summary.txt and
# compatibility.md (the table of docs/compatibility.md).
#
# The samples are those of the list (one Samples/ path per line, `#` comments):
#   1. build: with the samples' own CMake when cmake is present (the listed
#      folders, with Common/ and cmake/, exported under OUT_DIR/src and their
#      CMAKE_CUDA_ARCHITECTURES set to the present GPU's, from nvidia-smi
#      compute_cap), one top-level CMakeLists.txt adding them all, built with
#      -k so one failure does not stop the others; without cmake, each sample's
#      .cu/.cpp files compiled directly with nvcc (-I Common), kernels of driver
#      API samples (names ending Drv, DynlinkJIT) as .fatbin/.ptx beside the
#      binary. The build column says which was used.
#   2. each sample runs from its binary's folder, its source files copied
#      beside it (samples load .cu/.ptx/.fatbin/data from there), CUDA_PATH
#      set: plain, then captured (hrr-capture -o ARCH -- ./sample), then
#      replayed (hrr-playback ARCH --json; a root of several processes: the
#      pid-* folder with the largest events.bin), each step under `timeout`,
#      N samples at a time (xargs -P).
#   3. one row a sample: plain exit, captured exit, replay verdict, D2H checks
#      (pass/fail), kernels launched by replay, first error; then totals. A MISMATCH
#      also gets its first failed check's recorded and replayed bytes side by side
#      (scripts/mismatch-bytes.sh: work/<sample>/mismatch.txt and mismatch/).
#
# Options:
#   --list            print the samples, whether each is present in SAMPLES_DIR,
#                     the build that would be used and the GPU architecture;
#                     build and run nothing (a dry run; BIN_DIR, OUT_DIR unused)
#   -j N              samples at a time (default 4)
#   --samples-list F  the list (default /work/shared/cuda-samples/list.txt, else
#                     shared/cuda-samples/list.txt of the repository, else the copy kept
#                     beside this script, scripts/cuda-samples-list.txt)
#   --only PATTERN    only the samples whose path matches (grep -E)
#   --no-cmake        use the nvcc fallback even where cmake is present
#
# Environment: HRR_SAMPLES_TIMEOUT seconds per step (default 300),
# HRR_GPU_ARCH (e.g. 90) instead of nvidia-smi's, CUDA_PATH (default
# /usr/local/cuda), NVCC (default $CUDA_PATH/bin/nvcc or nvcc on PATH).
# Exit status: 0 when every listed sample built and its replay verdict is
# PASS or REPRODUCED, 1 otherwise, 2 on a usage error.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

# ---- row parsing (also run alone: --parse-replay FILE prints the replay fields) ----

# The replay fields of one `hrr-playback --json` line on stdin, tab-separated:
# verdict, D2H checks (`pass/fail`, `+N nondet` when some), kernels launched, error.
parse_replay() {
    local j
    j=$(grep -m1 '^{' || true)
    if [ -z "$j" ]; then
        printf 'NO JSON\t-\t-\t-\n'
        return
    fi
    local verdict pass fail nd kernels err rechecks
    verdict=$(sed -n 's/.*"verdict":"\([^"]*\)".*/\1/p' <<<"$j")
    pass=$(sed -n 's/.*"d2h_checks":{[^}]*"pass":\([0-9]*\).*/\1/p' <<<"$j")
    fail=$(sed -n 's/.*"d2h_checks":{[^}]*"fail":\([0-9]*\).*/\1/p' <<<"$j")
    nd=$(sed -n 's/.*"d2h_checks":{[^}]*"nondeterministic":\([0-9]*\).*/\1/p' <<<"$j")
    kernels=$(sed -n 's/.*"kernels_launched":\([0-9]*\).*/\1/p' <<<"$j")
    rechecks=$(sed -n 's/.*"recheck_replays":\([0-9]*\).*/\1/p' <<<"$j")
    err=$(sed -n 's/.*"error":"\(\([^"\\]\|\\.\)*\)".*/\1/p' <<<"$j")
    if [ -z "$err" ]; then # no error: the first result that differed, if any
        err=$(sed -n 's/.*"mismatches":\["\(\([^"\\]\|\\.\)*\)".*/\1/p' <<<"$j")
    fi
    if [ -z "$verdict" ]; then # an error object (hrr.error/1)
        verdict=ERROR
    fi
    local checks="${pass:--}/${fail:--}"
    if [ -n "$nd" ] && [ "$nd" != 0 ]; then
        checks="$checks +$nd nondet"
    fi
    if [ -n "$fail" ] && [ "$fail" != 0 ] && [ -n "$rechecks" ] && [ "$rechecks" != 0 ]; then
        # results still differing after the recheck: how many replays found them stable
        checks="$checks ($rechecks rechecks)"
    fi
    printf '%s\t%s\t%s\t%s\n' "$verdict" "$checks" "${kernels:--}" "$(clean "$err")"
}

# One line, at most 100 characters, no tabs or table bars.
clean() {
    printf '%s' "$1" | tr '\t\n|' '  /' | cut -c1-100
}

# The last non-empty line of a log, cleaned.
last_line() {
    [ -f "$1" ] || return 0
    clean "$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)"
}

if [ "${1:-}" = "--parse-replay" ]; then
    parse_replay <"$2"
    exit 0
fi

# ---- options ----

list_only=0
jobs=4
list_file=
only=
no_cmake=0
pos=()
while [ $# -gt 0 ]; do
    case $1 in
    --list) list_only=1 ;;
    -j)
        jobs=$2
        shift
        ;;
    --samples-list)
        list_file=$2
        shift
        ;;
    --only)
        only=$2
        shift
        ;;
    --no-cmake) no_cmake=1 ;;
    --run-one) # internal: one sample, for xargs
        shift
        mode=run-one
        break
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        echo "cuda-samples.sh: unknown option $1" >&2
        exit 2
        ;;
    *) pos+=("$1") ;;
    esac
    shift
done
mode=${mode:-main}

if [ -z "$list_file" ]; then
    list_file=/work/shared/cuda-samples/list.txt
    [ -f "$list_file" ] || list_file=$repo/shared/cuda-samples/list.txt
    [ -f "$list_file" ] || list_file=$repo/scripts/cuda-samples-list.txt
fi
if [ "$mode" != run-one ] && [ ! -f "$list_file" ]; then
    echo "cuda-samples: no samples list at $list_file (give one with --samples-list F)" >&2
    exit 2
fi
step_timeout=${HRR_SAMPLES_TIMEOUT:-300}
export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
if [ -z "${NVCC:-}" ]; then
    if [ -x "$CUDA_PATH/bin/nvcc" ]; then NVCC=$CUDA_PATH/bin/nvcc; else NVCC=nvcc; fi
fi

# The samples of the list, filtered by --only.
samples() {
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$list_file" |
        if [ -n "$only" ]; then grep -E -- "$only" || true; else cat; fi
}

gpu_arch() {
    if [ -n "${HRR_GPU_ARCH:-}" ]; then
        echo "$HRR_GPU_ARCH"
    elif command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. '
    fi
}

builder() {
    if [ "$no_cmake" = 0 ] && command -v cmake >/dev/null 2>&1; then echo cmake; else echo nvcc; fi
}

# A sample's row key: its path with / as _.
key_of() { printf '%s' "${1//\//_}"; }

# ---- one sample: run plain, captured, replayed (called through xargs) ----

run_one() {
    local sample=$1 out=$2 bin=$3
    local name key dir
    name=$(basename "$sample")
    key=$(key_of "$sample")
    dir=$out/work/$key
    local row=$out/rows/$key.tsv build
    build=$(cat "$dir/build-method" 2>/dev/null || echo "?")
    local exe=$dir/bin/$name
    if [ ! -x "$exe" ]; then
        printf '%s\t%s\tnot built\t-\t-\t-\t-\t%s\n' "$sample" "$build" \
            "$(last_line "$dir/build.log")" >"$row"
        return 0
    fi
    local plain=- captured=- verdict=- checks=- kernels=- err=
    (cd "$dir/bin" && timeout "$step_timeout" "./$name" >"$dir/plain.log" 2>&1) && plain=0 || plain=$?
    rm -rf "$dir/archive.hrr"
    (cd "$dir/bin" && timeout "$step_timeout" \
        "$bin/hrr-capture" -o "$dir/archive.hrr" -- "./$name" >"$dir/captured.log" 2>&1) &&
        captured=0 || captured=$?
    local target=$dir/archive.hrr
    if [ -d "$target" ]; then
        local n
        n=$(find "$target" -maxdepth 1 -name 'pid-*' -type d | wc -l)
        if [ "$n" -gt 1 ]; then
            # several processes: the one with the most recorded work
            target=$(dirname "$(ls -S "$target"/pid-*/events.bin | head -n 1)")
        fi
        local replay_rc=0
        (cd "$dir/bin" && timeout "$step_timeout" "$bin/hrr-playback" "$target" --json --no-progress \
            >"$dir/replay.json" 2>"$dir/replay.log") || replay_rc=$?
        IFS=$'\t' read -r verdict checks kernels err < <(parse_replay <"$dir/replay.json")
        if [ "$verdict" = "NO JSON" ]; then
            # killed by the step timeout, or ended without a report: say which
            case $replay_rc in
            124 | 137) verdict=TIMEOUT err="replay ran past ${step_timeout}s (HRR_SAMPLES_TIMEOUT)" ;;
            *) err="replay exit $replay_rc: $(last_line "$dir/replay.log")" ;;
            esac
        fi
        if [ "$verdict" = MISMATCH ]; then
            # the first failed check's recorded and replayed bytes, side by side
            local seq
            seq=$(grep -o '"mismatches":\["event #[0-9]*' "$dir/replay.json" | grep -o '[0-9]*$' || true)
            [ -z "$seq" ] || (cd "$dir/bin" && timeout "$step_timeout" bash "$here/mismatch-bytes.sh" \
                "$bin" "$target" "$dir/mismatch" "$seq" >"$dir/mismatch.txt" 2>&1) || true
        fi
    else
        verdict="NO ARCHIVE"
    fi
    if [ -z "$err" ]; then
        if [ "$plain" != 0 ]; then
            err="plain: $(last_line "$dir/plain.log")"
        elif [ "$captured" != 0 ]; then
            err="captured: $(last_line "$dir/captured.log")"
        elif [ "$verdict" != PASS ] && [ "$verdict" != REPRODUCED ]; then
            err="replay: $(last_line "$dir/replay.log")"
        fi
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sample" "$build" "$plain" "$captured" "$verdict" \
        "$checks" "$kernels" "$(clean "$err")" >"$row"
    printf '%-52s %s\n' "$sample" "$verdict" >&2
}

if [ "$mode" = run-one ]; then
    run_one "$@"
    exit 0
fi

# ---- --list: a dry run ----

if [ "$list_only" = 1 ]; then
    sdir=${pos[0]:-}
    arch=$(gpu_arch)
    echo "list: $list_file"
    echo "build: $(builder)$([ "$(builder)" = cmake ] || echo ' (cmake absent or --no-cmake: nvcc per sample)')"
    echo "architecture: ${arch:-unknown (no nvidia-smi; set HRR_GPU_ARCH)}"
    total=0
    present=0
    while read -r s; do
        total=$((total + 1))
        state=
        if [ -n "$sdir" ]; then
            if [ -d "$sdir/Samples/$s" ]; then
                state=present
                present=$((present + 1))
            else
                state=missing
            fi
        fi
        printf '%s%s\n' "$s" "${state:+	$state}"
    done < <(samples)
    if [ -n "$sdir" ]; then
        echo "$total samples, $present present in $sdir"
    else
        echo "$total samples"
    fi
    exit 0
fi

if [ ${#pos[@]} -ne 3 ]; then
    usage >&2
    exit 2
fi
sdir=$(cd "${pos[0]}" && pwd)
bin=$(cd "${pos[1]}" && pwd)
mkdir -p "${pos[2]}"
out=$(cd "${pos[2]}" && pwd)
for f in hrr-capture hrr-playback libhrr_capture.so; do
    [ -e "$bin/$f" ] || {
        echo "cuda-samples.sh: $bin/$f missing" >&2
        exit 2
    }
done
[ -d "$sdir/Samples" ] && [ -d "$sdir/Common" ] || {
    echo "cuda-samples.sh: $sdir is not a cuda-samples checkout (no Samples/ and Common/)" >&2
    exit 2
}
arch=$(gpu_arch)
[ -n "$arch" ] || {
    echo "cuda-samples.sh: no GPU architecture (nvidia-smi failed; set HRR_GPU_ARCH)" >&2
    exit 2
}
method=$(builder)
mapfile -t all < <(samples)
rm -rf "$out/rows"
mkdir -p "$out/rows" "$out/work"
echo "[samples] ${#all[@]} samples, sm_$arch, build: $method, $jobs at a time, ${step_timeout}s a step" >&2

# ---- build ----

# Source files of a sample copied beside its binary (and its build folder).
copy_sources() {
    local src=$1 to=$2
    mkdir -p "$to"
    find "$src" -maxdepth 1 -type f ! -name CMakeLists.txt ! -name 'README*' ! -name Makefile \
        -exec cp -f {} "$to/" \;
    if [ -d "$src/data" ]; then cp -rf "$src/data" "$to/"; fi
}

build_nvcc() {
    local s=$1 src=$sdir/Samples/$1 dir=$out/work/$(key_of "$1") name
    name=$(basename "$s")
    mkdir -p "$dir/bin"
    echo nvcc >"$dir/build-method"
    local mains=() kernels=() libs=(-lcuda) flags=(-O2 "-arch=sm_$arch" -I "$sdir/Common" -I "$src")
    local f
    for f in "$src"/*.cu "$src"/*.cpp "$src"/*.c; do
        [ -f "$f" ] || continue
        if grep -q 'main[[:space:]]*(' "$f"; then mains+=("$f"); else kernels+=("$f"); fi
    done
    if grep -qs 'cublas' "$src"/*; then libs+=(-lcublas); fi
    if grep -qs 'cufft' "$src"/*; then libs+=(-lcufft); fi
    if grep -qs 'curand' "$src"/*; then libs+=(-lcurand); fi
    if grep -qs 'cusparse' "$src"/*; then libs+=(-lcusparse); fi
    if grep -qs 'cusolver' "$src"/*; then libs+=(-lcusolver); fi
    if grep -qs 'nvrtc.h' "$src"/*; then libs+=(-lnvrtc); fi
    if grep -qs 'omp.h' "$src"/*; then flags+=(-Xcompiler -fopenmp); fi
    case $name in cdp* | *Cdp*) flags+=(-rdc=true) libs+=(-lcudadevrt) ;; esac
    local srcs=("${mains[@]}")
    case $name in
    *Drv | *DynlinkJIT | *_nvrtc) # kernels loaded at run time, not linked
        for f in "${kernels[@]}"; do
            case $f in *.cu)
                local b
                b=$(basename "$f" .cu)
                "$NVCC" "${flags[@]}" -fatbin -o "$dir/bin/${b}64.fatbin" "$f" &&
                    "$NVCC" "${flags[@]}" -ptx -o "$dir/bin/${b}64.ptx" "$f" || return 1
                ;;
            esac
        done
        ;;
    *) srcs+=("${kernels[@]}") ;;
    esac
    [ ${#srcs[@]} -gt 0 ] || {
        echo "no sources with main() in $src"
        return 1
    }
    "$NVCC" "${flags[@]}" -o "$dir/bin/$name" "${srcs[@]}" "${libs[@]}"
}

if [ "$method" = cmake ]; then
    # Export the listed samples with Common/ and cmake/, their architectures set to this GPU's.
    exp=$out/src
    rm -rf "$exp" "$out/build"
    mkdir -p "$exp/Samples" "$out/build"
    cp -r "$sdir/Common" "$exp/"
    [ -d "$sdir/cmake" ] && cp -r "$sdir/cmake" "$exp/"
    top=$exp/CMakeLists.txt
    {
        echo "cmake_minimum_required(VERSION 3.20)"
        echo "project(hrr_cuda_samples LANGUAGES C CXX CUDA)"
        echo "find_package(CUDAToolkit REQUIRED)"
    } >"$top"
    for s in "${all[@]}"; do
        [ -d "$sdir/Samples/$s" ] || continue
        mkdir -p "$exp/Samples/$(dirname "$s")"
        cp -r "$sdir/Samples/$s" "$exp/Samples/$s"
        rm -rf "$exp/Samples/$s/doc"
        sed -i "s/set(CMAKE_CUDA_ARCHITECTURES[^)]*)/set(CMAKE_CUDA_ARCHITECTURES $arch)/" \
            "$exp/Samples/$s/CMakeLists.txt" 2>/dev/null || true
        echo "add_subdirectory(Samples/$s $(key_of "$s"))" >>"$top"
    done
    echo "[samples] cmake configure" >&2
    cmake -S "$exp" -B "$out/build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$out/cmake-configure.log" 2>&1 ||
        echo "[samples] cmake configure failed (see $out/cmake-configure.log); building what it made" >&2
    echo "[samples] cmake build" >&2
    cmake --build "$out/build" -j "$(nproc)" -- -k >"$out/cmake-build.log" 2>&1 || true
    for s in "${all[@]}"; do
        k=$(key_of "$s")
        name=$(basename "$s")
        dir=$out/work/$k
        rm -rf "$dir"
        mkdir -p "$dir"
        echo cmake >"$dir/build-method"
        exe=$(find "$out/build/$k" -type f -name "$name" -perm -u+x 2>/dev/null | head -n 1)
        if [ -z "$exe" ]; then
            if [ -d "$sdir/Samples/$s" ]; then
                grep -E "Samples/$s/.*(error|Error)" "$out/cmake-build.log" | head -n 5 >"$dir/build.log" || true
                [ -s "$dir/build.log" ] || echo "cmake built no $name (see cmake-build.log)" >"$dir/build.log"
            else
                echo "not in $sdir/Samples" >"$dir/build.log"
            fi
            continue
        fi
        # The binary's folder with everything the build put there (fatbins, ptx) and the sources.
        cp -r "$(dirname "$exe")" "$dir/bin"
        copy_sources "$sdir/Samples/$s" "$dir/bin"
    done
else
    echo "[samples] cmake absent: nvcc per sample" >&2
    export -f build_nvcc copy_sources key_of
    for s in "${all[@]}"; do
        k=$(key_of "$s")
        dir=$out/work/$k
        rm -rf "$dir"
        mkdir -p "$dir"
        echo nvcc >"$dir/build-method"
        if [ ! -d "$sdir/Samples/$s" ]; then
            echo "not in $sdir/Samples" >"$dir/build.log"
            continue
        fi
        printf '%s\n' "$s"
    done | sdir=$sdir out=$out arch=$arch NVCC=$NVCC xargs -P "$jobs" -I{} bash -c \
        'build_nvcc "$1" >"$out/work/$(key_of "$1")/build.log" 2>&1 || true' _ {}
    for s in "${all[@]}"; do
        dir=$out/work/$(key_of "$s")
        [ -x "$dir/bin/$(basename "$s")" ] && copy_sources "$sdir/Samples/$s" "$dir/bin"
    done
fi

# ---- run ----

printf '%s\n' "${all[@]}" |
    xargs -P "$jobs" -I{} bash "${BASH_SOURCE[0]}" --run-one {} "$out" "$bin"

# ---- table ----

summary=$out/summary.txt
md=$out/compatibility.md
{
    echo "| Sample | Build | Plain exit | Captured exit | Replay verdict | D2H checks (pass/fail) | Kernels | First error |"
    echo "|---|---|---|---|---|---|---|---|"
} >"$md"
: >"$summary"
total=0
built=0
plain_ok=0
cap_ok=0
pass=0
printf '%-52s %-5s %-5s %-8s %-14s %-12s %-7s %s\n' Sample Build Plain Captured Verdict D2H Kernels "First error" |
    tee -a "$summary"
for s in "${all[@]}"; do
    row=$out/rows/$(key_of "$s").tsv
    [ -f "$row" ] || printf '%s\t?\tnot run\t-\t-\t-\t-\t\n' "$s" >"$row"
    IFS=$'\t' read -r sample build plain captured verdict checks kernels err <"$row"
    total=$((total + 1))
    if [ "$plain" != "not built" ] && [ "$plain" != "not run" ]; then built=$((built + 1)); fi
    [ "$plain" = 0 ] && plain_ok=$((plain_ok + 1))
    [ "$captured" = 0 ] && cap_ok=$((cap_ok + 1))
    case $verdict in PASS | REPRODUCED) pass=$((pass + 1)) ;; esac
    printf '%-52s %-5s %-5s %-8s %-14s %-12s %-7s %s\n' "$sample" "$build" "$plain" "$captured" \
        "$verdict" "$checks" "$kernels" "$err" | tee -a "$summary"
    echo "| $sample | $build | $plain | $captured | $verdict | $checks | $kernels | ${err:-} |" >>"$md"
done
totals="$total samples: $built built ($method), $plain_ok exit 0 plain, $cap_ok exit 0 captured, $pass replay PASS/REPRODUCED (sm_$arch)"
echo "$totals" | tee -a "$summary"
printf '\n%s\n' "$totals" >>"$md"
echo "[samples] table: $md; logs and archives: $out/work/<sample>/" >&2
[ "$pass" -eq "$total" ] && [ "$total" -gt 0 ]
