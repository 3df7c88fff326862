// Many tiny kernel launches, to measure what capture costs per launch.
//   tiny_launches [COUNT]     (default 100000)
// Each launch adds k*(t+1) to counter[t] for its 32 threads; integer
// arithmetic, so the result is exact and checked against the host's formula.
// The launch loop's own wall time goes to stderr (stdout stays deterministic).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_PROG "tiny_launches"
#include "check.h"

__global__ void tiny_kernel(unsigned int *counter, unsigned int k) {
    counter[threadIdx.x] += k * (threadIdx.x + 1u);
}

int main(int argc, char **argv) {
    long count = argc > 1 ? std::atol(argv[1]) : 100000;
    if (count < 1) count = 1;
    unsigned int *d = nullptr;
    CK(cudaMalloc(&d, 32 * sizeof(unsigned int)));
    CK(cudaMemset(d, 0, 32 * sizeof(unsigned int)));
    CK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < count; i++) tiny_kernel<<<1, 32>>>(d, (unsigned int)(i & 0xffff));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    auto t1 = std::chrono::steady_clock::now();
    unsigned int h[32];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));

    unsigned int ksum = 0;  // sum of k over all launches, mod 2^32
    for (long i = 0; i < count; i++) ksum += (unsigned int)(i & 0xffff);
    uint64_t checksum = 0;
    bool ok = true;
    for (unsigned int t = 0; t < 32; t++) {
        if (h[t] != ksum * (t + 1u)) ok = false;
        checksum = checksum * 1000003ull + h[t];
    }
    double secs = std::chrono::duration<double>(t1 - t0).count();
    std::fprintf(stderr, "[tiny_launches] %ld launches in %.6f s (%.3f us/launch)\n", count, secs,
                 secs * 1e6 / (double)count);
    std::printf("tiny_launches count=%ld checksum=%016llx %s\n", count, (unsigned long long)checksum,
                ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
}
