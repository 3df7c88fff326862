// Context limits, function attributes and launches that carry no arguments, for
// scripts/gpu-e2e.sh (workload `limits`). Self-checking: prints one line per part and
// `limits: PASS`, exits 0; a wrong value prints what differed and exits 1. Every result is
// copied back with cudaMemcpy / cudaMemcpyFromSymbol, so replay has D2H results to compare.
//
//   heap        cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 MiB) before the first launch,
//               then a kernel whose threads take 4 KiB each with device-side malloc and `new`
//               (more than the default 8 MiB heap holds at once), fill, sum and free them
//   stack       cudaDeviceSetLimit(cudaLimitStackSize) raised before a kernel with a large
//               local array indexed at run time (the driver sizes local memory for a static
//               frame itself: this part shows the limit replayed in order, not needed)
//   noparams    a kernel without parameters bumping a __device__ counter, fed by a
//               __constant__ value set with cudaMemcpyToSymbol (replay must launch it with
//               an empty argument list and restore the constant)
//   attributes  cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, 160 KiB)
//               and cudaFuncSetCacheConfig before a launch with 160 KiB of dynamic shared
//               memory (without the attribute the launch fails)
//   cooperative cudaLaunchCooperativeKernel with a grid-wide sync between two phases
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK_PROG "limits"
#define CHECK_EXIT 1
#include "check.h"

namespace cg = cooperative_groups;

static int g_bad = 0;
static void expect(const char *what, long long got, long long want) {
    if (got != want) {
        std::printf("limits: %s: got %lld, expected %lld\n", what, got, want);
        g_bad = 1;
    }
}

// ---- heap: 4 KiB per thread from the device heap, 8192 threads (32 MiB live at once)
__global__ void heap_sum(unsigned long long *out, int words) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned *a = (unsigned *)malloc(words * sizeof(unsigned) / 2);
    unsigned *b = new unsigned[words / 2];
    if (a == nullptr || b == nullptr) {
        out[t] = ~0ull; // the heap was too small: the limit was not set
        return;
    }
    for (int i = 0; i < words / 2; i++) {
        a[i] = (unsigned)(t * 31 + i);
        b[i] = (unsigned)(t ^ i);
    }
    unsigned long long s = 0;
    for (int i = 0; i < words / 2; i++) s += a[i] + b[i];
    out[t] = s;
    free(a);
    delete[] b;
}

// ---- stack: a local array too large for the default 1 KiB stack per thread
__global__ void deep_local(const int *idx, int *out) {
    volatile int local[2048];
    int t = threadIdx.x;
    for (int i = 0; i < 2048; i++) local[i] = i * 3 + t;
    out[t] = local[idx[t] & 2047];
}

// ---- noparams
__constant__ int c_step;
__device__ int d_counter;
__global__ void bump() { atomicAdd(&d_counter, c_step); }

// ---- attributes: 160 KiB of dynamic shared memory
__global__ void big_shared(const unsigned *in, unsigned *out, int n) {
    extern __shared__ unsigned smem[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) smem[i] = in[i] * 2u + 1u;
    __syncthreads();
    unsigned s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += smem[n - 1 - i];
    atomicAdd(out, s);
}

// ---- cooperative: phase 1 writes, grid sync, phase 2 reads another block's values
__global__ void coop_sum(unsigned *buf, unsigned *out, int n) {
    cg::grid_group g = cg::this_grid();
    unsigned i = (unsigned)g.thread_rank();
    if (i < (unsigned)n) buf[i] = i * 7u + 3u;
    g.sync();
    if (i < (unsigned)n) out[i] = buf[(i + n / 2) % n] + buf[i];
}

static void heap() {
    const int threads = 8192, words = 1024; // 4 KiB a thread
    CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20));
    size_t got = 0;
    CK(cudaDeviceGetLimit(&got, cudaLimitMallocHeapSize));
    expect("heap limit", (long long)(got >= (64u << 20)), 1);
    unsigned long long *d = nullptr;
    CK(cudaMalloc(&d, threads * sizeof(unsigned long long)));
    heap_sum<<<threads / 256, 256>>>(d, words);
    CK(cudaGetLastError());
    static unsigned long long h[8192];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    unsigned long long total = 0;
    for (int t = 0; t < threads; t++) {
        unsigned long long want = 0;
        for (int i = 0; i < words / 2; i++) want += (unsigned)(t * 31 + i) + (unsigned)(t ^ i);
        if (h[t] != want) {
            expect("heap thread sum", (long long)h[t], (long long)want);
            break;
        }
        total += h[t];
    }
    std::printf("heap: %llu\n", total);
    CK(cudaFree(d));
}

static void stack() {
    CK(cudaDeviceSetLimit(cudaLimitStackSize, 12 << 10));
    int hidx[128], hout[128];
    for (int i = 0; i < 128; i++) hidx[i] = i * 13;
    int *didx = nullptr, *dout = nullptr;
    CK(cudaMalloc(&didx, sizeof hidx));
    CK(cudaMalloc(&dout, sizeof hout));
    CK(cudaMemcpy(didx, hidx, sizeof hidx, cudaMemcpyHostToDevice));
    deep_local<<<1, 128>>>(didx, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
    long long s = 0;
    for (int i = 0; i < 128; i++) {
        expect("stack value", hout[i], ((i * 13) & 2047) * 3 + i);
        s += hout[i];
    }
    std::printf("stack: %lld\n", s);
    CK(cudaFree(didx));
    CK(cudaFree(dout));
}

static void noparams() {
    int zero = 0, step = 5;
    CK(cudaMemcpyToSymbol(d_counter, &zero, sizeof zero));
    CK(cudaMemcpyToSymbol(c_step, &step, sizeof step));
    bump<<<4, 64>>>();
    step = 2;
    CK(cudaMemcpyToSymbol(c_step, &step, sizeof step));
    bump<<<1, 32>>>();
    CK(cudaGetLastError());
    int counter = 0;
    CK(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
    expect("noparams counter", counter, 4 * 64 * 5 + 32 * 2);
    std::printf("noparams: %d\n", counter);
}

static void attributes() {
    const int n = 40 << 10; // 40 Ki words: 160 KiB
    const size_t bytes = n * sizeof(unsigned);
    CK(cudaFuncSetAttribute(big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    CK(cudaFuncSetCacheConfig(big_shared, cudaFuncCachePreferShared));
    static unsigned hin[40 << 10];
    unsigned long long want = 0;
    for (int i = 0; i < n; i++) {
        hin[i] = (unsigned)i * 2654435761u;
        want += hin[i] * 2u + 1u;
    }
    unsigned *din = nullptr, *dout = nullptr;
    CK(cudaMalloc(&din, bytes));
    CK(cudaMalloc(&dout, sizeof(unsigned)));
    CK(cudaMemcpy(din, hin, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0, sizeof(unsigned)));
    big_shared<<<2, 256, bytes>>>(din, dout, n);
    CK(cudaGetLastError());
    unsigned got = 0;
    CK(cudaMemcpy(&got, dout, sizeof got, cudaMemcpyDeviceToHost));
    expect("attributes sum", got, (unsigned)(2 * want));
    std::printf("attributes: %u\n", got);
    CK(cudaFree(din));
    CK(cudaFree(dout));
}

static void cooperative() {
    int dev = 0, supported = 0, per_sm = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, dev));
    if (!supported) {
        std::printf("limits: cooperative launch not supported\n");
        g_bad = 1;
        return;
    }
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_sum, 256, 0));
    int blocks = sms < 64 ? sms : 64; // one block a multiprocessor fits whatever the occupancy
    int n = blocks * 256;
    unsigned *buf = nullptr, *out = nullptr;
    CK(cudaMalloc(&buf, n * sizeof(unsigned)));
    CK(cudaMalloc(&out, n * sizeof(unsigned)));
    void *args[] = {&buf, &out, &n};
    CK(cudaLaunchCooperativeKernel((void *)coop_sum, blocks, 256, args, 0, nullptr));
    static unsigned h[64 * 256];
    CK(cudaMemcpy(h, out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned long long s = 0;
    for (int i = 0; i < n; i++) {
        unsigned want = ((unsigned)((i + n / 2) % n) * 7u + 3u) + ((unsigned)i * 7u + 3u);
        if (h[i] != want) {
            expect("cooperative value", h[i], want);
            break;
        }
        s += h[i];
    }
    std::printf("cooperative: %llu (occupancy %s)\n", s, per_sm >= 1 ? "ok" : "none");
    CK(cudaFree(buf));
    CK(cudaFree(out));
}

int main() {
    heap();
    stack();
    noparams();
    attributes();
    cooperative();
    CK(cudaDeviceSynchronize());
    if (g_bad) return 1;
    std::printf("limits: PASS\n");
    return 0;
}
