// Memory the host and the device share without copy calls, and stream-ordered allocation,
// for scripts/gpu-e2e.sh (workload `hostmem`). Self-checking: prints one line per part and
// `hostmem: PASS`, exits 0; a wrong value prints what differed and exits 1.
//
//   zero-copy   cudaHostAlloc(cudaHostAllocMapped) memory written by kernels through its
//               device pointer, read by the host after cudaDeviceSynchronize and written by the
//               host between kernels; cudaHostRegister(cudaHostRegisterMapped) memory written
//               by a kernel through the host pointer (unified addressing)
//   table       cudaHostAlloc(cudaHostAllocMapped) flags between device allocations (the driver
//               lays pinned memory out among device memory), reached by a kernel only through
//               a pointer kept in device memory, as NCCL keeps its pinned flags' addresses:
//               replay must re-create the flags at their recorded address; the kernel's reads
//               are copied back and checked (stderr says whether the flags lay within 32 MiB
//               of the device allocations, i.e. inside a chunk replay reserves for device memory)
//   managed     cudaMallocManaged memory written by the host between kernels and read after a
//               synchronisation
//   async       cudaMallocAsync/cudaFreeAsync on the default pool and cudaMallocFromPoolAsync on
//               a pool of its own with a release threshold: each round allocates, fills with a
//               slow kernel, checks with a second kernel and frees on the stream without
//               waiting, so the pool hands the same addresses out again while earlier kernels
//               may still run; the checks are copied back once at the end
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK_PROG "hostmem"
#define CHECK_EXIT 1
#include "check.h"

static int g_bad = 0;
static void expect(const char *what, long long got, long long want) {
    if (got != want) {
        std::printf("hostmem: %s: got %lld, expected %lld\n", what, got, want);
        g_bad = 1;
    }
}

__global__ void scale_add(float *y, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + b;
}

__global__ void via_table(unsigned *const *table, unsigned *out) {
    unsigned *flags = table[0];
    out[threadIdx.x] = flags[threadIdx.x] * 3 + 1;
    if (threadIdx.x == 0) flags[64] = 7; // the device writes the host's flags through it too
}

__global__ void fill_index(unsigned *p, int n, unsigned base) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + (unsigned)i;
}

// Slow on purpose: every element rewritten `reps` times.
__global__ void fill_slow(unsigned *p, size_t n, unsigned v, int reps) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; r++)
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            p[i] = v ^ (unsigned)(i * 2654435761u) ^ (unsigned)r;
}

// bad[round] += elements that differ from what fill_slow left.
__global__ void check_fill(const unsigned *p, size_t n, unsigned v, int reps, unsigned *bad) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned local = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        local += p[i] != (v ^ (unsigned)(i * 2654435761u) ^ (unsigned)(reps - 1));
    if (local) atomicAdd(bad, local);
}

static double fsum(const float *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

static void zero_copy() {
    const int n = 1 << 16;
    float *h = nullptr, *d = nullptr;
    CK(cudaHostAlloc(&h, n * sizeof(float), cudaHostAllocMapped));
    for (int i = 0; i < n; i++) h[i] = (float)(i % 10);
    CK(cudaHostGetDevicePointer((void **)&d, h, 0));
    scale_add<<<(n + 255) / 256, 256>>>(d, n, 2.0f, 1.0f);
    CK(cudaDeviceSynchronize());
    double s1 = fsum(h, n);
    expect("mapped after kernel 1", (long long)h[7], 15);
    for (int i = 0; i < n; i += 2) h[i] = 0.0f; // host writes between kernels
    scale_add<<<(n + 255) / 256, 256>>>(d, n, 1.0f, 3.0f);
    CK(cudaDeviceSynchronize());
    expect("mapped host write seen", (long long)h[4], 3);
    expect("mapped after kernel 2", (long long)h[7], 18);
    double s2 = fsum(h, n);

    const int m = 1 << 15;
    unsigned *reg = nullptr;
    if (posix_memalign((void **)&reg, 4096, m * sizeof(unsigned))) std::exit(1);
    for (int i = 0; i < m; i++) reg[i] = 7;
    CK(cudaHostRegister(reg, m * sizeof(unsigned), cudaHostRegisterMapped));
    fill_index<<<(m / 2 + 255) / 256, 256>>>(reg + m / 2, m / 2, 100); // host pointer, UVA
    CK(cudaDeviceSynchronize());
    unsigned long long rs = 0;
    for (int i = 0; i < m; i++) rs += reg[i];
    expect("registered untouched half", reg[10], 7);
    expect("registered written half", reg[m / 2 + 5], 105);
    CK(cudaHostUnregister(reg));
    std::free(reg);
    CK(cudaFreeHost(h));
    std::printf("zero-copy: mapped %.1f %.1f registered %llu\n", s1, s2, rs);
}

static void managed() {
    const int n = 1 << 18;
    float *m = nullptr;
    CK(cudaMallocManaged(&m, n * sizeof(float)));
    for (int i = 0; i < n; i++) m[i] = (float)(i % 4);
    scale_add<<<(n + 255) / 256, 256>>>(m, n, 3.0f, 0.0f);
    CK(cudaDeviceSynchronize());
    expect("managed after kernel 1", (long long)m[3], 9);
    double s1 = fsum(m, n);
    for (int i = 0; i < n; i++) m[i] += 1.0f; // host writes between kernels
    scale_add<<<(n + 255) / 256, 256>>>(m, n, 0.5f, 0.0f);
    CK(cudaDeviceSynchronize());
    expect("managed after kernel 2 (x2)", (long long)(m[3] * 2), 10);
    double s2 = fsum(m, n);
    CK(cudaFree(m));
    std::printf("managed: %.1f %.1f\n", s1, s2);
}

static void async_rounds(cudaStream_t s, cudaMemPool_t pool, const char *what, unsigned *bad_d,
                         int first, int rounds) {
    const size_t n = (size_t)16 << 20; // 64 MiB of unsigned
    const int reps = 8;
    for (int r = 0; r < rounds; r++) {
        unsigned *p = nullptr;
        if (pool) CK(cudaMallocFromPoolAsync((void **)&p, n * sizeof(unsigned), pool, s));
        else CK(cudaMallocAsync((void **)&p, n * sizeof(unsigned), s));
        unsigned v = 0x9e3779b9u * (unsigned)(first + r + 1);
        fill_slow<<<264, 256, 0, s>>>(p, n, v, reps);
        check_fill<<<264, 256, 0, s>>>(p, n, v, reps, bad_d + first + r);
        CK(cudaFreeAsync(p, s)); // no wait: the next round's allocation reuses it
    }
    (void)what;
}

static void async_alloc() {
    const int rounds = 6;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *bad_d = nullptr;
    CK(cudaMalloc(&bad_d, 2 * rounds * sizeof(unsigned)));
    CK(cudaMemsetAsync(bad_d, 0, 2 * rounds * sizeof(unsigned), s));

    cudaMemPool_t def;
    CK(cudaDeviceGetDefaultMemPool(&def, 0));
    uint64_t keep = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &keep));
    async_rounds(s, nullptr, "default pool", bad_d, 0, rounds);

    cudaMemPoolProps props;
    std::memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    uint64_t threshold = (uint64_t)256 << 20;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    async_rounds(s, pool, "own pool", bad_d, rounds, rounds);

    unsigned bad[2 * rounds];
    CK(cudaMemcpyAsync(bad, bad_d, sizeof bad, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    unsigned long long total = 0;
    for (int i = 0; i < 2 * rounds; i++) {
        char what[64];
        std::snprintf(what, sizeof what, "async round %d wrong elements", i);
        expect(what, bad[i], 0);
        total += bad[i];
    }
    CK(cudaMemPoolTrimTo(pool, 0));
    CK(cudaMemPoolDestroy(pool));
    CK(cudaFree(bad_d));
    CK(cudaStreamDestroy(s));
    std::printf("async: %d rounds, %llu wrong elements\n", 2 * rounds, total);
}

static void pointer_table() {
    unsigned *before = nullptr, *flags = nullptr, *out = nullptr, **table = nullptr;
    CK(cudaMalloc(&before, 1 << 20));
    CK(cudaHostAlloc(&flags, 4096, cudaHostAllocMapped));
    CK(cudaMalloc(&out, 64 * sizeof(unsigned)));
    CK(cudaMalloc(&table, sizeof(unsigned *)));
    for (int i = 0; i < 65; i++) flags[i] = 100 + i;
    unsigned *dflags = nullptr;
    CK(cudaHostGetDevicePointer((void **)&dflags, flags, 0));
    CK(cudaMemcpy(table, &dflags, sizeof dflags, cudaMemcpyHostToDevice));
    via_table<<<1, 64>>>(table, out);
    unsigned h[64];
    CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaDeviceSynchronize());
    unsigned long long sum = 0;
    for (int i = 0; i < 64; i++) sum += h[i];
    expect("pointer table read", h[5], 316);
    expect("pointer table write", flags[64], 7);
    auto apart = [](const void *a, const void *b) {
        uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
        return x > y ? x - y : y - x;
    };
    const uintptr_t chunk = 32u << 20;
    std::fprintf(stderr, "hostmem: flags at %p, %s device memory (%p, %p)\n", (void *)flags,
                 apart(flags, before) < chunk || apart(flags, out) < chunk ? "among" : "apart from",
                 (void *)before, (void *)out);
    CK(cudaFree(table));
    CK(cudaFree(out));
    CK(cudaFreeHost(flags));
    CK(cudaFree(before));
    std::printf("pointer table: %llu\n", sum);
}

int main() {
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    zero_copy();
    pointer_table();
    managed();
    async_alloc();
    if (g_bad) {
        std::printf("hostmem: FAIL\n");
        return 1;
    }
    std::printf("hostmem: PASS\n");
    return 0;
}
