// 2D/3D copies, CUDA arrays, texture and surface objects through the runtime API.
//   copies2d
// Pitched device memory (cudaMallocPitch, cudaMalloc3D) filled and read back with
// cudaMemcpy2D/cudaMemcpy3D around a kernel that changes it; a 2D array
// (cudaMallocArray, surface load/store) filled with cudaMemcpy2DToArray, read by
// a texture-object kernel, written by a surface-object kernel and read back with
// cudaMemcpy2DFromArray; a 3D array (cudaMalloc3DArray) filled with cudaMemcpy3D
// and read by a texture-object kernel. Every result is checked on the host
// (integer-valued floats, point sampling: exact); prints one line per part and
// "copies2d ok" (exit 0) or "copies2d MISMATCH" (exit 1).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_PROG "copies2d"
#include "check.h"

constexpr int W = 37, H = 23, D = 5;

__global__ void scale2d(float *p, size_t pitch, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float *row = (float *)((char *)p + y * pitch);
        row[x] = row[x] * 3.0f + 1.0f;
    }
}

__global__ void add3d(cudaPitchedPtr p, int w, int h, int d) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    for (int z = 0; z < d; z++) {
        float *row = (float *)((char *)p.ptr + (z * p.ysize + y) * p.pitch);
        row[x] += (float)(z * 100);
    }
}

__global__ void tex2d_fetch(cudaTextureObject_t t, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f) * 2.0f + 1.0f;
}

__global__ void surf2d_write(cudaSurfaceObject_t s, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite((float)(x * 1000 + y), s, x * (int)sizeof(float), y);
}

__global__ void tex3d_fetch(cudaTextureObject_t t, float *out, int w, int h, int d) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    for (int z = 0; z < d; z++) out[(z * h + y) * w + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f) - 7.0f;
}

static bool g_ok = true;

static void check(const char *what, const std::vector<float> &got, const std::vector<float> &want) {
    bool ok = got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0;
    uint64_t sum = 0;
    for (float v : got) sum = sum * 1000003ull + (uint64_t)(int64_t)v;
    std::printf("%s: %016llx %s\n", what, (unsigned long long)sum, ok ? "ok" : "MISMATCH");
    if (!ok) g_ok = false;
}

static cudaTextureObject_t point_texture(cudaArray_t a) {
    cudaResourceDesc rd;
    std::memset(&rd, 0, sizeof rd);
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td;
    std::memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 0;
    cudaTextureObject_t t = 0;
    CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

int main() {
    const dim3 block(16, 16), grid((W + 15) / 16, (H + 15) / 16);

    // ---- 2D: a pitched host block (offset 3 columns, 2 rows) into cudaMallocPitch memory ----
    const int HP = W + 9;  // host pitch in elements
    std::vector<float> host((H + 2) * HP);
    for (size_t i = 0; i < host.size(); i++) host[i] = (float)(i % 977);
    float *dp = nullptr;
    size_t pitch = 0;
    CK(cudaMallocPitch(&dp, &pitch, W * sizeof(float), H));
    CK(cudaMemcpy2D(dp, pitch, host.data() + 2 * HP + 3, HP * sizeof(float), W * sizeof(float), H,
                    cudaMemcpyHostToDevice));
    scale2d<<<grid, block>>>(dp, pitch, W, H);
    CK(cudaGetLastError());
    std::vector<float> back(W * H), want(W * H);
    CK(cudaMemcpy2D(back.data(), W * sizeof(float), dp, pitch, W * sizeof(float), H, cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) want[y * W + x] = host[(y + 2) * HP + 3 + x] * 3.0f + 1.0f;
    check("memcpy2d pitched", back, want);
    // the same rows again, asynchronously on a stream
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    std::fill(back.begin(), back.end(), 0.0f);
    CK(cudaMemcpy2DAsync(back.data(), W * sizeof(float), dp, pitch, W * sizeof(float), H, cudaMemcpyDeviceToHost,
                         st));
    CK(cudaStreamSynchronize(st));
    check("memcpy2d async", back, want);

    // ---- 3D: cudaMalloc3D memory, cudaMemcpy3D in and out around a kernel ----
    std::vector<float> vol(W * H * D), volback(W * H * D), volwant(W * H * D);
    for (size_t i = 0; i < vol.size(); i++) vol[i] = (float)((i * 7) % 1013);
    cudaPitchedPtr pp;
    CK(cudaMalloc3D(&pp, make_cudaExtent(W * sizeof(float), H, D)));
    cudaMemcpy3DParms p3;
    std::memset(&p3, 0, sizeof p3);
    p3.srcPtr = make_cudaPitchedPtr(vol.data(), W * sizeof(float), W, H);
    p3.dstPtr = pp;
    p3.extent = make_cudaExtent(W * sizeof(float), H, D);
    p3.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&p3));
    add3d<<<grid, block>>>(pp, W, H, D);
    CK(cudaGetLastError());
    std::memset(&p3, 0, sizeof p3);
    p3.srcPtr = pp;
    p3.dstPtr = make_cudaPitchedPtr(volback.data(), W * sizeof(float), W, H);
    p3.extent = make_cudaExtent(W * sizeof(float), H, D);
    p3.kind = cudaMemcpyDeviceToHost;
    CK(cudaMemcpy3D(&p3));
    for (int z = 0; z < D; z++)
        for (int i = 0; i < W * H; i++) volwant[z * W * H + i] = vol[z * W * H + i] + (float)(z * 100);
    check("memcpy3d pitched", volback, volwant);

    // ---- a 2D array: filled by cudaMemcpy2DToArray, read by a texture, written by a surface ----
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t arr = nullptr;
    CK(cudaMallocArray(&arr, &fd, W, H, cudaArraySurfaceLoadStore));
    std::vector<float> img(W * H);
    for (int i = 0; i < W * H; i++) img[i] = (float)((i * 13) % 501);
    CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
    cudaTextureObject_t tex = point_texture(arr);
    float *dout = nullptr;
    CK(cudaMalloc(&dout, W * H * D * sizeof(float)));
    tex2d_fetch<<<grid, block>>>(tex, dout, W, H);
    CK(cudaGetLastError());
    std::vector<float> fetched(W * H), fwant(W * H);
    CK(cudaMemcpy(fetched.data(), dout, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < W * H; i++) fwant[i] = img[i] * 2.0f + 1.0f;
    check("texture object 2d", fetched, fwant);

    cudaResourceDesc rd;
    std::memset(&rd, 0, sizeof rd);
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaSurfaceObject_t surf = 0;
    CK(cudaCreateSurfaceObject(&surf, &rd));
    surf2d_write<<<grid, block>>>(surf, W, H);
    CK(cudaGetLastError());
    std::vector<float> sback(W * H), swant(W * H);
    CK(cudaMemcpy2DFromArray(sback.data(), W * sizeof(float), arr, 0, 0, W * sizeof(float), H,
                             cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) swant[y * W + x] = (float)(x * 1000 + y);
    check("surface object 2d", sback, swant);

    // ---- a 3D array: filled by cudaMemcpy3D, read by a texture, read back by cudaMemcpy3D ----
    cudaArray_t arr3 = nullptr;
    CK(cudaMalloc3DArray(&arr3, &fd, make_cudaExtent(W, H, D)));
    std::memset(&p3, 0, sizeof p3);
    p3.srcPtr = make_cudaPitchedPtr(vol.data(), W * sizeof(float), W, H);
    p3.dstArray = arr3;
    p3.extent = make_cudaExtent(W, H, D);  // elements for an array
    p3.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&p3));
    cudaTextureObject_t tex3 = point_texture(arr3);
    dim3 grid3((W + 15) / 16, (H + 15) / 16);
    tex3d_fetch<<<grid3, block>>>(tex3, dout, W, H, D);
    CK(cudaGetLastError());
    std::vector<float> f3(W * H * D), f3want(W * H * D);
    CK(cudaMemcpy(f3.data(), dout, f3.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < f3.size(); i++) f3want[i] = vol[i] - 7.0f;
    check("texture object 3d", f3, f3want);
    std::memset(&p3, 0, sizeof p3);
    p3.srcArray = arr3;
    p3.dstPtr = make_cudaPitchedPtr(volback.data(), W * sizeof(float), W, H);
    p3.extent = make_cudaExtent(W, H, D);
    p3.kind = cudaMemcpyDeviceToHost;
    CK(cudaMemcpy3D(&p3));
    check("memcpy3d array", volback, vol);

    CK(cudaDestroyTextureObject(tex3));
    CK(cudaDestroySurfaceObject(surf));
    CK(cudaDestroyTextureObject(tex));
    CK(cudaFreeArray(arr3));
    CK(cudaFreeArray(arr));
    CK(cudaFree(dout));
    CK(cudaFree(pp.ptr));
    CK(cudaFree(dp));
    CK(cudaStreamDestroy(st));
    std::printf("copies2d %s\n", g_ok ? "ok" : "MISMATCH");
    return g_ok ? 0 : 1;
}
