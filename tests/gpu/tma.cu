// Hopper TMA: tiles of a 2D float tensor loaded into shared memory by the Tensor Memory
// Accelerator, through a tensor map passed by value (a __grid_constant__ CUtensorMap), as
// Triton, CUTLASS 3 and FlashAttention-3 kernels take them.
//   tma
// The map is encoded with cuTensorMapEncodeTiled (fetched as cudart's entry point, as Triton
// and PyTorch fetch it: no -lcuda), the kernel scales every tile into `out`; then
// cuTensorMapReplaceAddress points the map at a second tensor and the kernel runs again. Every
// result is checked on the host (exact); prints one line per part and "tma ok" (exit 0) or
// "tma MISMATCH" (exit 1). Needs sm_90 or later.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK_PROG "tma"
#include "check.h"
#include "entry_point.h"

constexpr int W = 256, H = 64, BX = 32, BY = 16;

__device__ __forceinline__ unsigned shared_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// out[y][x] = in[y][x] * 2 + 1, one BY x BX tile per block, loaded by one bulk tensor copy
// that completes on a shared-memory barrier.
__global__ void tma_scale(const __grid_constant__ CUtensorMap map, float *out) {
    __shared__ alignas(128) float tile[BY][BX];
    __shared__ alignas(8) unsigned long long bar;
    const int x0 = blockIdx.x * BX, y0 = blockIdx.y * BY;
    const unsigned b = shared_address(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
                     "r"((unsigned)sizeof(tile))
                     : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(shared_address(tile)),
                     "l"(reinterpret_cast<uint64_t>(&map)), "r"(x0), "r"(y0), "r"(b)
                     : "memory");
    }
    unsigned done = 0;
    const unsigned phase = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(b), "r"(phase)
                     : "memory");
    }
    for (int i = threadIdx.x; i < BX * BY; i += blockDim.x) {
        const int ty = i / BX, tx = i % BX;
        out[(y0 + ty) * W + x0 + tx] = tile[ty][tx] * 2.0f + 1.0f;
    }
}

typedef CUresult (*EncodeTiled_t)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                  const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                  const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef CUresult (*ReplaceAddress_t)(CUtensorMap *, void *);

// Run the kernel over the tensor `map` describes; compare with `in` scaled.
static bool scaled(const char *what, const CUtensorMap &map, float *out, const std::vector<float> &in) {
    CK(cudaMemset(out, 0, in.size() * sizeof(float)));
    tma_scale<<<dim3(W / BX, H / BY), 128>>>(map, out);
    CK(cudaGetLastError());
    std::vector<float> got(in.size());
    CK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < in.size(); i++) bad += got[i] != in[i] * 2.0f + 1.0f;
    std::printf("%s: %zu of %zu elements wrong\n", what, bad, in.size());
    return bad == 0;
}

int main() {
    int major = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major < 9) {
        std::fprintf(stderr, "tma: needs compute capability 9.0 or later (this GPU: %d.x)\n", major);
        return 2;
    }
    EncodeTiled_t encode;
    ReplaceAddress_t replace;
    driver_entry_point(encode, "cuTensorMapEncodeTiled", 12000);
    driver_entry_point(replace, "cuTensorMapReplaceAddress", 12000);

    std::vector<float> a(W * H), b(W * H);
    for (int i = 0; i < W * H; i++) {
        a[i] = (float)(i % 1009);
        b[i] = (float)(5000 - i % 997);
    }
    float *da, *db, *out;
    CK(cudaMalloc(&da, a.size() * sizeof(float)));
    CK(cudaMalloc(&db, b.size() * sizeof(float)));
    CK(cudaMalloc(&out, a.size() * sizeof(float)));
    CK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));

    CUtensorMap map;
    const cuuint64_t dims[2] = {W, H}, strides[1] = {W * sizeof(float)};
    const cuuint32_t box[2] = {BX, BY}, elem[2] = {1, 1};
    CU(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, da, dims, strides, box, elem,
              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
              CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    bool ok = scaled("tiled", map, out, a);
    CU(replace(&map, db));
    ok = scaled("replaced", map, out, b) && ok;

    CK(cudaFree(out));
    CK(cudaFree(db));
    CK(cudaFree(da));
    std::printf(ok ? "tma ok\n" : "tma MISMATCH\n");
    return ok ? 0 : 1;
}
