#!/usr/bin/env bash
# Build the native GPU workloads of tests/gpu/ with nvcc.
#
#   bash tests/gpu/build.sh BUILD_DIR [TARGET...]
#
# TARGETs: driver_api axpy gemm tiny_launches launch_cost bulk_copies async_copies failing graph_nodes graph_conditional copies2d hostmem limits ipc
# two_devices threads nondeterministic tma digest_kernels (default: all). Writes into
# BUILD_DIR:
#   driver_api, driver_api_kernels.cubin, driver_api_kernels.ptx
#   axpy (static cudart), axpy_shared (-cudart shared)
#   gemm (cuBLAS)
#   tiny_launches
#   launch_cost (the host's time a launch, in bursts the GPU's queue holds: capture's
#     added time a launch, scripts/launch-cost.sh)
#   bulk_copies (4 GiB of pageable H2D copies in 64 MiB chunks, 1 GiB back)
#   async_copies (pinned async copy bandwidth, an overlap loop)
#   failing (a faulting and a hanging program), failing_fixed.cubin (its fixed gather_bad)
#   graph_nodes (a CUDA graph built node by node, driver API through cudart's entry points)
#   graph_conditional (IF and WHILE conditional nodes, conditions set by kernels)
#   copies2d (2D/3D copies, arrays, texture and surface objects)
#   hostmem (zero-copy, managed and stream-ordered memory, self-checking)
#   limits (context limits, the device heap, function attributes, a kernel without
#     parameters, a cooperative launch; self-checking)
#   ipc (two processes sharing device memory through an IPC handle, self-checking)
#   two_devices (one process, two GPUs: peer access, peer copies, self-checking)
#   threads (host threads with a stream each, kernels and waits overlapping)
#   nondeterministic (half its result is the GPU's timer)
#   tma (Hopper TMA tiles through a tensor map passed by value; sm_90 and later)
#   digest_kernels (capture's GPU kernels against their C references; not a workload)
#   build.log           every command and its output
#   build.env           NVCC=..., CUDA_ROOT=..., CUBLAS_LIB_DIR=... (sourceable)
#   failed              one line per target that did not build (absent if none)
# Exit status: 0 when every requested target built, 1 otherwise, 3 if no nvcc.
# Environment: NVCC (path to nvcc), HRR_GPU_ARCH (default sm_90).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: build.sh BUILD_DIR [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(driver_api axpy gemm tiny_launches launch_cost bulk_copies async_copies failing graph_nodes graph_conditional copies2d hostmem limits ipc two_devices threads nondeterministic tma digest_kernels)
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/build.log
: >"$log"
rm -f "$out/failed"
arch=${HRR_GPU_ARCH:-sm_90}

find_nvcc() {
    if [ -n "${NVCC:-}" ] && [ -x "$NVCC" ]; then echo "$NVCC"; return 0; fi
    if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return 0; fi
    local c
    for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc /opt/cuda/bin/nvcc; do
        [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

nvcc=$(find_nvcc) || {
    echo "build.sh: nvcc not found (PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin)" | tee -a "$log" >&2
    exit 3
}
cuda_root=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)

# run LABEL CMD...: log and run one build command.
run() {
    local label=$1
    shift
    {
        echo "### $label"
        printf '%q ' "$@"
        echo
    } >>"$log"
    if "$@" >>"$log" 2>&1; then
        echo "    ok" >>"$log"
        return 0
    fi
    echo "    FAILED" >>"$log"
    return 1
}

fail() {
    echo "$1" >>"$out/failed"
    echo "build.sh: $1 did not build (see $log)" >&2
}

# ---- cuBLAS: the toolkit's own, else the pip wheels PyTorch uses ----
cublas_inc=""
cublas_libdir=""
cublas_lib=""
find_cublas() {
    local d f
    for d in "$cuda_root/include" "$cuda_root/targets/x86_64-linux/include"; do
        [ -f "$d/cublas_v2.h" ] && { cublas_inc=$d; break; }
    done
    for d in "$cuda_root/lib64" "$cuda_root/targets/x86_64-linux/lib" "$cuda_root/lib"; do
        ls "$d"/libcublas.so* >/dev/null 2>&1 && { cublas_libdir=$d; break; }
    done
    if [ -z "$cublas_inc" ] || [ -z "$cublas_libdir" ]; then
        # nvidia-cublas wheels: site-packages/nvidia/cu13/{include,lib} (or nvidia/cublas/...)
        local roots
        roots=$(python3 -c 'import nvidia, os; print("\n".join(os.path.abspath(p) for p in nvidia.__path__))' 2>/dev/null || true)
        for d in $roots /usr/local /opt /usr/lib; do
            [ -d "$d" ] || continue
            if [ -z "$cublas_inc" ]; then
                f=$(find "$d" -maxdepth 6 -name cublas_v2.h 2>/dev/null | head -1)
                [ -n "$f" ] && cublas_inc=$(dirname "$f")
            fi
            if [ -z "$cublas_libdir" ]; then
                f=$(find "$d" -maxdepth 6 -name 'libcublas.so*' 2>/dev/null | head -1)
                [ -n "$f" ] && cublas_libdir=$(dirname "$f")
            fi
        done
    fi
    [ -n "$cublas_inc" ] && [ -n "$cublas_libdir" ] || return 1
    if [ -e "$cublas_libdir/libcublas.so" ]; then
        cublas_lib="-lcublas"
    else
        f=$(cd "$cublas_libdir" && ls libcublas.so.[0-9]* 2>/dev/null | sort | head -1)
        [ -n "$f" ] || return 1
        cublas_lib="-l:$f"
    fi
    return 0
}

want() {
    local t
    for t in "${targets[@]}"; do [ "$t" = "$1" ] && return 0; done
    return 1
}

common=(-O2 -arch="$arch")
status=0

# single TARGET: a program of one source file, TARGET.cu, when asked for.
single() {
    want "$1" || return 0
    run "$1" "$nvcc" "${common[@]}" -o "$out/$1" "$here/$1.cu" || { fail "$1"; status=1; }
}

if want driver_api; then
    ok=1
    run "driver_api cubin" "$nvcc" "${common[@]}" -cubin -o "$out/driver_api_kernels.cubin" "$here/driver_api_kernels.cu" || ok=0
    run "driver_api ptx" "$nvcc" "${common[@]}" -ptx -o "$out/driver_api_kernels.ptx" "$here/driver_api_kernels.cu" || ok=0
    # Host program: nvcc's own -L (lib64/stubs) first, then the driver's libcuda.so.1.
    if ! run "driver_api host" "$nvcc" -O2 -o "$out/driver_api" "$here/driver_api.c" -lcuda; then
        linked=0
        for lc in /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 \
            $(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF}'); do
            [ -e "$lc" ] || continue
            if run "driver_api host ($lc)" "$nvcc" -O2 -o "$out/driver_api" "$here/driver_api.c" "$lc"; then
                linked=1
                break
            fi
        done
        [ $linked = 1 ] || ok=0
    fi
    [ $ok = 1 ] || { fail driver_api; status=1; }
fi

if want axpy; then
    run "axpy (static cudart)" "$nvcc" "${common[@]}" -o "$out/axpy" "$here/axpy.cu" || { fail axpy; status=1; }
    run "axpy (shared cudart)" "$nvcc" "${common[@]}" -cudart shared -o "$out/axpy_shared" "$here/axpy.cu" ||
        { fail axpy_shared; status=1; }
fi

if want gemm; then
    if find_cublas; then
        echo "cuBLAS: include $cublas_inc, lib $cublas_libdir ($cublas_lib)" >>"$log"
        run "gemm" "$nvcc" "${common[@]}" -I"$cublas_inc" -o "$out/gemm" "$here/gemm.cu" \
            -L"$cublas_libdir" "$cublas_lib" -Xlinker -rpath -Xlinker "$cublas_libdir" ||
            { fail gemm; status=1; }
    else
        echo "cuBLAS not found (no cublas_v2.h / libcublas.so*)" >>"$log"
        fail gemm
        status=1
    fi
fi

single tiny_launches
single launch_cost
single bulk_copies

single async_copies

if want failing; then
    run "failing" "$nvcc" "${common[@]}" -o "$out/failing" "$here/failing.cu" ||
        { fail failing; status=1; }
    # The fixed gather_bad, as a cubin for --replace-kernel (issue 18).
    run "failing fixed cubin" "$nvcc" "${common[@]}" -cubin -o "$out/failing_fixed.cubin" "$here/failing_fixed.cu" ||
        { fail failing_fixed; status=1; }
fi
single graph_nodes
single graph_conditional
single copies2d
single hostmem
single limits
single ipc
single two_devices
single threads

single nondeterministic
single tma
if want digest_kernels; then
    run digest_kernels "$nvcc" -O2 -o "$out/digest_kernels" "$here/digest_kernels.cu" -lcuda || { fail digest_kernels; status=1; }
fi

{
    printf 'NVCC=%q\n' "$nvcc"
    printf 'CUDA_ROOT=%q\n' "$cuda_root"
    printf 'CUBLAS_INC=%q\n' "$cublas_inc"
    printf 'CUBLAS_LIB_DIR=%q\n' "$cublas_libdir"
    printf 'GPU_ARCH=%q\n' "$arch"
} >"$out/build.env"
exit $status
