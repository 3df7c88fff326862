// Asynchronous copies, to measure what capture costs them (scripts/gpu-bench.sh) and to check
// their replay (scripts/gpu-e2e.sh):
//   - pinned H2D bandwidth with cudaMemcpyAsync: the same 64 MiB buffer copied 16 times
//     (simpleMultiCopy's pattern), and 8 distinct 64 MiB buffers;
//   - pinned D2H bandwidth: 16 copies of 64 MiB a kernel wrote;
//   - an asyncAPI-like overlap loop: H2D, a kernel, D2H and an event on one stream, then a host
//     loop counting cudaEventQuery "not ready" answers until the event completes (plain, the
//     host runs thousands of iterations while the GPU works; a capture that waits at the D2H
//     copy leaves it none).
//   async_copies [ROUNDS]     (overlap rounds, default 5)
// Every result is checked on the host; stdout gets one deterministic line, the figures go to
// stderr as "<name> <value>" lines (h2d_same_gbps, h2d_distinct_gbps, d2h_gbps, overlap_iters,
// overlap_ms). Exit 0 on success.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK_PROG "async_copies"
#include "check.h"

static const size_t kChunk = size_t(64) << 20;        // bytes per copy
static const size_t kWords = kChunk / sizeof(uint32_t);  // 32-bit words per copy

__global__ void fill_kernel(uint32_t *d, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
        d[i] = uint32_t(i) * 2654435761u + seed;
}

__global__ void increment_kernel(uint32_t *d, size_t n, uint32_t by) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
        d[i] += by;
}

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void fail(const char *what) {
    std::fprintf(stderr, "async_copies: %s\n", what);
    std::exit(1);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
    if (rounds < 1) rounds = 1;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint32_t *d = nullptr, *h = nullptr, *back = nullptr;
    CK(cudaMalloc(&d, kChunk));
    CK(cudaMallocHost(&h, kChunk));
    CK(cudaMallocHost(&back, kChunk));
    uint64_t checksum = 0;

    // ---- H2D, one buffer copied 16 times ----
    for (size_t i = 0; i < kWords; i++) h[i] = uint32_t(i) ^ 0x5a5a5a5au;
    CK(cudaMemcpyAsync(d, h, kChunk, cudaMemcpyHostToDevice, s));  // warm-up
    CK(cudaStreamSynchronize(s));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 16; i++) CK(cudaMemcpyAsync(d, h, kChunk, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
    double h2d_same = 16.0 * kChunk / seconds_since(t0) / 1e9;
    CK(cudaMemcpy(back, d, kChunk, cudaMemcpyDeviceToHost));
    if (std::memcmp(back, h, kChunk) != 0) fail("H2D copies did not arrive");

    // ---- H2D, 8 distinct buffers ----
    uint32_t *many[8];
    for (int b = 0; b < 8; b++) {
        CK(cudaMallocHost(&many[b], kChunk));
        for (size_t i = 0; i < kWords; i++) many[b][i] = uint32_t(i) * 31u + uint32_t(b);
    }
    t0 = std::chrono::steady_clock::now();
    for (int b = 0; b < 8; b++) CK(cudaMemcpyAsync(d, many[b], kChunk, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
    double h2d_distinct = 8.0 * kChunk / seconds_since(t0) / 1e9;
    CK(cudaMemcpy(back, d, kChunk, cudaMemcpyDeviceToHost));
    if (std::memcmp(back, many[7], kChunk) != 0) fail("the last distinct H2D copy did not arrive");
    for (int b = 0; b < 8; b++) CK(cudaFreeHost(many[b]));

    // ---- D2H, 16 copies of what a kernel wrote ----
    fill_kernel<<<1024, 256, 0, s>>>(d, kWords, 7u);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(back, d, kChunk, cudaMemcpyDeviceToHost, s));  // warm-up
    CK(cudaStreamSynchronize(s));
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 16; i++) CK(cudaMemcpyAsync(back, d, kChunk, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    double d2h = 16.0 * kChunk / seconds_since(t0) / 1e9;
    for (size_t i = 0; i < kWords; i++)
        if (back[i] != uint32_t(i) * 2654435761u + 7u) fail("D2H copies brought back wrong bytes");
    checksum = checksum * 1000003ull + back[kWords - 1];

    // ---- asyncAPI-like overlap: the host loop runs while the GPU works ----
    cudaEvent_t done;
    CK(cudaEventCreate(&done));
    unsigned long long iters = 0;
    t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < kWords; i++) h[i] = uint32_t(i) + uint32_t(r);
        CK(cudaMemcpyAsync(d, h, kChunk, cudaMemcpyHostToDevice, s));
        increment_kernel<<<1024, 256, 0, s>>>(d, kWords, 26u);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(back, d, kChunk, cudaMemcpyDeviceToHost, s));
        CK(cudaEventRecord(done, s));
        cudaError_t q;
        while ((q = cudaEventQuery(done)) == cudaErrorNotReady) iters++;
        CK(q);
        for (size_t i = 0; i < kWords; i++)
            if (back[i] != uint32_t(i) + uint32_t(r) + 26u) fail("overlap round: wrong result");
        checksum = checksum * 1000003ull + back[r];
    }
    double overlap_ms = seconds_since(t0) * 1e3;

    CK(cudaEventDestroy(done));
    CK(cudaFreeHost(h));
    CK(cudaFreeHost(back));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
    std::fprintf(stderr, "h2d_same_gbps %.2f\nh2d_distinct_gbps %.2f\nd2h_gbps %.2f\n", h2d_same,
                 h2d_distinct, d2h);
    std::fprintf(stderr, "overlap_iters %llu\noverlap_ms %.2f\n", iters / rounds, overlap_ms / rounds);
    std::printf("async_copies ok rounds=%d checksum=%016llx\n", rounds,
                (unsigned long long)checksum);
    return 0;
}
