// cuBLAS workload for the HRR end-to-end test: SGEMM and HGEMM on 1024x1024
// matrices, results copied back and printed as sums and FNV-1a hashes.
// Build: nvcc -O2 -arch=sm_90 gemm.cu -lcublas
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CHECK_PROG "gemm"
#include "check.h"

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

// Device buffers for C = A * B of n*n elements each: A and B copied up, C left unset (the
// three allocations first, then the two copies).
template <class T>
static void operands(const std::vector<T> &a, const std::vector<T> &b, T **da, T **db, T **dc) {
    const size_t bytes = a.size() * sizeof(T);
    CK(cudaMalloc(da, bytes));
    CK(cudaMalloc(db, bytes));
    CK(cudaMalloc(dc, bytes));
    CK(cudaMemcpy(*da, a.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(*db, b.data(), bytes, cudaMemcpyHostToDevice));
}

int main() {
    const int n = 1024;
    const size_t nn = (size_t)n * n;
    std::vector<float> a(nn), b(nn), c(nn);
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
        b[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
    }
    cublasHandle_t handle;
    CB(cublasCreate(&handle));

    // ---- SGEMM: C = A * B ----
    float *da, *db, *dc;
    operands(a, b, &da, &db, &dc);
    const float one = 1.0f, zero = 0.0f;
    CB(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n));
    CK(cudaMemcpy(c.data(), dc, nn * sizeof(float), cudaMemcpyDeviceToHost));
    double ssum = 0.0;
    for (size_t i = 0; i < nn; i++) ssum += (double)c[i];
    std::printf("gemm sgemm n=%d sum=%.17g fnv=%016llx c[0]=%.9g\n", n, ssum,
                (unsigned long long)fnv1a(c.data(), nn * sizeof(float)), (double)c[0]);

    // ---- HGEMM: C = A * B in half precision ----
    std::vector<__half> ha(nn), hb(nn), hc(nn);
    for (size_t i = 0; i < nn; i++) {
        ha[i] = __float2half(a[i]);
        hb[i] = __float2half(b[i]);
    }
    __half *dha, *dhb, *dhc;
    operands(ha, hb, &dha, &dhb, &dhc);
    const __half hone = __float2half(1.0f), hzero = __float2half(0.0f);
    CB(cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &hone, dha, n, dhb, n, &hzero, dhc, n));
    CK(cudaMemcpy(hc.data(), dhc, nn * sizeof(__half), cudaMemcpyDeviceToHost));
    double hsum = 0.0;
    for (size_t i = 0; i < nn; i++) hsum += (double)__half2float(hc[i]);
    std::printf("gemm hgemm n=%d sum=%.17g fnv=%016llx c[0]=%.9g\n", n, hsum,
                (unsigned long long)fnv1a(hc.data(), nn * sizeof(__half)), (double)__half2float(hc[0]));

    CB(cublasDestroy(handle));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(dha));
    CK(cudaFree(dhb));
    CK(cudaFree(dhc));
    return 0;
}
