// nvcc <<<>>> workload for the HRR end-to-end test: ten axpy launches with
// cudaMemcpy both ways. Built twice: with the static cudart (nvcc's default)
// and with `-cudart shared`.
//
// The kernel adds a constant `b` besides a*x: with every uploaded buffer
// zeroed (the e2e script's "did replay really run the GPU work" check) the
// result is then neither zero nor the recorded one, whether a replay compares
// against recorded bytes or against zeroed ones.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_PROG "axpy"
#include "check.h"

__global__ void axpy_kernel(int n, float a, const float *x, float *y, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] + b;
}

int main(int argc, char **argv) {
    // Optional element count (default 1 Mi); a small n makes a small archive (examples/).
    const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
    if (n <= 0) {
        std::fprintf(stderr, "usage: axpy [N > 0]\n");
        return 2;
    }
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) * 0.001f;
        y[i] = 1.0f - (float)(i % 7) * 0.125f;
    }
    float *dx = nullptr, *dy = nullptr;
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&dy, n * sizeof(float)));
    CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int k = 0; k < 10; k++) {
        float a = 0.5f + 0.1f * (float)k;
        axpy_kernel<<<(n + 255) / 256, 256>>>(n, a, dx, dy, 0.25f);
        CK(cudaGetLastError());
    }
    CK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(dx));
    CK(cudaFree(dy));

    double sum = 0.0;
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = reinterpret_cast<const unsigned char *>(y.data());
    for (size_t i = 0; i < n * sizeof(float); i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    for (int i = 0; i < n; i++) sum += (double)y[i];
    std::printf("axpy n=%d launches=10 sum=%.17g fnv=%016llx y[0]=%.9g y[n-1]=%.9g\n", n, sum,
                (unsigned long long)h, (double)y[0], (double)y[n - 1]);
    return 0;
}
