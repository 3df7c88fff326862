// What one kernel launch costs the host: the time `<<<>>>` takes to return, in bursts short
// enough that the GPU's queue never fills (a full queue makes the launch wait for the GPU, and
// the figure would be the kernel's, not the host's).
//   launch_cost [BURSTS [BURST]]     (default 400 bursts of 256 launches)
// Each burst launches BURST kernels of 4 arguments (two pointers, two integers, as transpose's
// do) into one stream, timing only the launches; then it synchronises (not timed). Prints
// `us_per_launch MEDIAN P10 P90` over the bursts (each burst's time / BURST) on stdout, and
// checks the kernels' result (each adds its k to out[0]: the sum is known).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_PROG "launch_cost"
#include "check.h"

__global__ void add_k(unsigned long long *out, const unsigned int *in, int k, int n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] += (unsigned long long)k + (n > 0 ? in[0] : 0u);
}

int main(int argc, char **argv) {
    int bursts = argc > 1 ? std::atoi(argv[1]) : 400;
    int burst = argc > 2 ? std::atoi(argv[2]) : 256;
    if (bursts < 1) bursts = 1;
    if (burst < 1) burst = 1;
    unsigned long long *out = nullptr;
    unsigned int *in = nullptr;
    CK(cudaMalloc(&out, sizeof(unsigned long long)));
    CK(cudaMalloc(&in, sizeof(unsigned int)));
    CK(cudaMemset(out, 0, sizeof(unsigned long long)));
    CK(cudaMemset(in, 0, sizeof(unsigned int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // warm up: the module loaded, the first launch's work done
    add_k<<<1, 32, 0, s>>>(out, in, 0, 0);
    CK(cudaStreamSynchronize(s));
    std::vector<double> per_launch;
    unsigned long long expect = 0;
    for (int b = 0; b < bursts; b++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < burst; i++) add_k<<<1, 32, 0, s>>>(out, in, i & 7, 0);
        auto t1 = std::chrono::steady_clock::now();
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < burst; i++) expect += (unsigned long long)(i & 7);
        per_launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / burst);
    }
    unsigned long long got = 0;
    CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    if (got != expect) CHECK_FAIL("sum %llu, expected %llu", got, expect);
    std::sort(per_launch.begin(), per_launch.end());
    auto at = [&](double q) { return per_launch[(size_t)(q * (per_launch.size() - 1))]; };
    std::printf("us_per_launch %.3f %.3f %.3f\n", at(0.5), at(0.1), at(0.9));
    CK(cudaFree(out));
    CK(cudaFree(in));
    return 0;
}
