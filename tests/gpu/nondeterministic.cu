// A program whose result is partly its own nondeterminism, for scripts/gpu-e2e.sh: replay must
// tell those bytes apart from a divergence (`[HRR] PASS, 512 of 1024 bytes nondeterministic at
// event #N`) and `--strict` must turn them into a MISMATCH.
//
//   nondeterministic   one block of 256 threads: the first 128 values deterministic
//                      (i * 2654435761), the last 128 one byte of the GPU's global timer,
//                      read once by thread 0 and repeated into all four bytes of each value
//                      (so every noisy byte differs between two runs unless that byte happens
//                      to come out equal in two of the runs compared: about 1 in 128).
//                      Checks both halves, prints a deterministic result line, exits 0.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_PROG "nondeterministic"
#define CHECK_EXIT 1
#include "check.h"

__global__ void stamp(unsigned *out, int n) {
    __shared__ unsigned noise;
    if (threadIdx.x == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        t ^= t >> 29;
        t *= 0xbf58476d1ce4e5b9ull;
        t ^= t >> 32;
        noise = (unsigned)(t & 0xff) * 0x01010101u;
    }
    __syncthreads();
    int i = threadIdx.x;
    if (i < n) out[i] = i < n / 2 ? (unsigned)i * 2654435761u : noise;
}

int main() {
    const int n = 256;
    unsigned *d = nullptr, h[n];
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemset(d, 0, sizeof h));
    stamp<<<1, n>>>(d, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n / 2; i++) bad += h[i] != (unsigned)i * 2654435761u;
    for (int i = n / 2; i < n; i++) {
        unsigned b = h[i] & 0xff;
        bad += h[i] != b * 0x01010101u || h[i] != h[n / 2];
    }
    CK(cudaFree(d));
    if (bad) {
        std::printf("nondeterministic: FAILED (%d values wrong)\n", bad);
        return 1;
    }
    std::printf("nondeterministic: ok (%d deterministic values, %d noisy)\n", n / 2, n / 2);
    return 0;
}
