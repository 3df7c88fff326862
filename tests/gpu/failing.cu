// A program that fails the way GPU workloads fail, for the hand-over tests of
// scripts/gpu-e2e.sh (capture survives it, replay reproduces and classifies it).
//
//   failing fault   three good kernels (result copied back), then a gather
//                   through a corrupted index reads out of bounds:
//                   CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronisation;
//                   exits 1 after printing the error.
//   failing hang    the same good start, then a kernel that waits for a flag
//                   the host never sets: the next synchronisation never
//                   returns (the test stops it with a signal).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_PROG "failing"
#define CHECK_EXIT 1
#include "check.h"

__global__ void scale(float *y, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + 1.0f;
}

__global__ void gather_bad(const float *src, const int *idx, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = src[idx[i]];
}

__global__ void spin(volatile int *flag) {
    while (*flag == 0) {
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "fault") != 0 && std::strcmp(mode, "hang") != 0) {
        std::fprintf(stderr, "usage: failing fault|hang\n");
        return 2;
    }
    const int n = 1 << 16;
    std::vector<float> h(n);
    for (int i = 0; i < n; i++) h[i] = (float)(i % 100);
    float *y = nullptr, *out = nullptr;
    int *idx = nullptr, *flag = nullptr;
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMalloc(&out, n * sizeof(float)));
    CK(cudaMalloc(&idx, n * sizeof(int)));
    CK(cudaMalloc(&flag, sizeof(int)));
    CK(cudaMemset(flag, 0, sizeof(int)));
    CK(cudaMemcpy(y, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int k = 0; k < 3; k++) scale<<<(n + 255) / 256, 256>>>(y, n, 0.5f);
    CK(cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("good part done: y[1]=%g\n", h[1]);
    std::fflush(stdout);
    if (std::strcmp(mode, "fault") == 0) {
        std::vector<int> hidx(n);
        for (int i = 0; i < n; i++) hidx[i] = (i * 7) % n;
        hidx[4097] = 1 << 30;  // the corrupted index: 4 GiB past `y`
        CK(cudaMemcpy(idx, hidx.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        gather_bad<<<(n + 255) / 256, 256>>>(y, idx, out, n);
        cudaError_t e = cudaDeviceSynchronize();
        std::printf("synchronize: %s\n", cudaGetErrorString(e));
        return e == cudaSuccess ? 0 : 1;
    }
    spin<<<1, 1>>>(flag);
    std::printf("launched spin\n");
    std::fflush(stdout);
    CK(cudaDeviceSynchronize());  // never returns
    return 0;
}
