// Streams and events ordering work between two streams, pinned host memory, async copies and
// memsets, stream-ordered allocation, an entry point found with dlsym, and the virtual memory
// API (reserve, create, map, set access, unmap, release, free); with `3d`, also 3D copies
// (hipMemcpy3D, hipMemcpy3DAsync) of a box of a host volume into pitched device memory, device to
// device at an offset, and back; with `2d`, also pitched copies
// (hipMemcpy2D and hipMemcpy2DAsync) between a wider host matrix and hipMallocPitch memory;
// with `pool`, allocations from a memory pool of the program's own (hipMemPoolCreate,
// hipMallocFromPoolAsync, hipFreeAsync, hipMemPoolTrimTo, hipMemPoolDestroy); with `memset2d`,
// 2D memsets (hipMemset2D, hipMemset2DAsync) of hipMallocPitch memory, read back.
//   streams [2d | 3d | pool | memset2d]
#include <dlfcn.h>

#include "common.h"

__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void add_into(float *d, const float *s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += s[i];
}

int main(int argc, char **argv) {
  require_device();
  const int n = 4096;
  const size_t bytes = n * sizeof(float);
  const dim3 grid(n / 256), block(256);

  hipStream_t s1, s2;
  CHECK(hipStreamCreateWithFlags(&s1, hipStreamNonBlocking));
  CHECK(hipStreamCreateWithPriority(&s2, 0, 0));
  hipEvent_t e0, e1, e2;
  CHECK(hipEventCreate(&e0));
  CHECK(hipEventCreateWithFlags(&e1, hipEventDisableTiming));
  CHECK(hipEventCreate(&e2));

  float *pinned;
  CHECK(hipHostMalloc((void **)&pinned, bytes, 0));
  for (int i = 0; i < n; i++) pinned[i] = (float)(i % 13) * 0.25f;
  float *dx, *dy, *dz;
  CHECK(hipMalloc(&dx, bytes));
  CHECK(hipMalloc(&dy, bytes));

  CHECK(hipMemcpyAsync(dx, pinned, bytes, hipMemcpyHostToDevice, s1));
  float one_half = 1.5f;
  int bits;
  memcpy(&bits, &one_half, 4);
  CHECK(hipMemsetD32Async(dy, bits, n, s2));
  CHECK(hipEventRecord(e0, s1));
  CHECK(hipStreamWaitEvent(s2, e0, 0));
  scale<<<grid, block, 0, s1>>>(dx, 3.0f, n);
  CHECK(hipEventRecord(e1, s1));
  CHECK(hipStreamWaitEvent(s2, e1, 0));
  add_into<<<grid, block, 0, s2>>>(dy, dx, n);
  CHECK(hipEventRecord(e2, s2));
  CHECK(hipMemcpyDtoHAsync(pinned, dy, bytes, s2));
  CHECK(hipStreamSynchronize(s2));
  show_f32("two_streams", pinned, n);
  float ms = 0;
  printf("%-14s %s\n", "elapsed", hipEventElapsedTime(&ms, e0, e2) == hipSuccess ? "ok" : "failed");

  CHECK(hipMallocAsync((void **)&dz, bytes, s1));
  CHECK(hipMemcpyDtoDAsync(dz, dy, bytes, s1));
  scale<<<grid, block, 0, s1>>>(dz, -1.0f, n);
  CHECK(hipMemcpyAsync(pinned, dz, bytes, hipMemcpyDeviceToHost, s1));
  CHECK(hipFreeAsync(dz, s1));
  CHECK(hipEventSynchronize(e1));
  CHECK(hipStreamSynchronize(s1));
  show_f32("stream_alloc", pinned, n);

  // An entry point looked up the way plugin loaders do.
  void *rt = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_NOLOAD);
  typedef hipError_t (*memset_d8_t)(hipDeviceptr_t, unsigned char, size_t);
  memset_d8_t memset_d8 = rt ? (memset_d8_t)dlsym(rt, "hipMemsetD8") : NULL;
  CHECK(memset_d8 ? memset_d8((hipDeviceptr_t)dx, 0x3f, bytes) : hipErrorNotFound);
  CHECK(hipMemsetD16((hipDeviceptr_t)dy, 0x4000, 2 * n));
  CHECK(hipMemsetAsync(dy, 0, 64, 0));
  CHECK(hipMemcpy(pinned, dx, bytes, hipMemcpyDeviceToHost));
  show_f32("memset_d8", pinned, n);
  CHECK(hipMemcpy(pinned, dy, bytes, hipMemcpyDeviceToHost));
  show_f32("memset_d16", pinned, n);

  // Virtual memory: two allocations mapped side by side in one reservation.
  hipMemAllocationProp prop = {};
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = 0;
  size_t gran = 0;
  CHECK(hipMemGetAllocationGranularity(&gran, &prop, hipMemAllocationGranularityMinimum));
  const size_t chunk = (bytes + gran - 1) / gran * gran;
  void *va = NULL;
  CHECK(hipMemAddressReserve(&va, 2 * chunk, 0, NULL, 0));
  hipMemGenericAllocationHandle_t h1, h2;
  CHECK(hipMemCreate(&h1, chunk, &prop, 0));
  CHECK(hipMemCreate(&h2, chunk, &prop, 0));
  char *base = (char *)va;
  CHECK(hipMemMap(base, chunk, 0, h1, 0));
  CHECK(hipMemMap(base + chunk, chunk, 0, h2, 0));
  hipMemAccessDesc access = {};
  access.location = prop.location;
  access.flags = hipMemAccessFlagsProtReadWrite;
  CHECK(hipMemSetAccess(va, 2 * chunk, &access, 1));
  for (int i = 0; i < n; i++) pinned[i] = (float)i;
  CHECK(hipMemcpyHtoD((hipDeviceptr_t)base, pinned, bytes));
  CHECK(hipMemcpyDtoD((hipDeviceptr_t)(base + chunk), (hipDeviceptr_t)base, bytes));
  add_into<<<grid, block>>>((float *)(base + chunk), (const float *)base, n);
  CHECK(hipMemcpyDtoH(pinned, (hipDeviceptr_t)(base + chunk), bytes));
  show_f32("vmm", pinned, n);
  CHECK(hipMemUnmap(base, chunk));
  CHECK(hipMemUnmap(base + chunk, chunk));
  CHECK(hipMemRelease(h1));
  CHECK(hipMemRelease(h2));
  CHECK(hipMemAddressFree(va, 2 * chunk));

  if (argc > 1 && !strcmp(argv[1], "2d")) {
    // a 48 x 20 tile of a host matrix 64 floats wide: uploaded into pitched memory, scaled,
    // copied device to device, read back into another host matrix (async, then blocking with
    // hipMemcpyDefault)
    const int w = 48, h = 20, hw = 64;
    const size_t row = w * sizeof(float), hrow = hw * sizeof(float);
    float *host = (float *)malloc(hrow * h), *back = (float *)calloc(hw * h, sizeof(float));
    for (int i = 0; i < hw * h; i++) host[i] = (float)(i % 113) * 0.5f;
    float *dp1, *dp2;
    size_t p1, p2;
    CHECK(hipMallocPitch((void **)&dp1, &p1, row, h));
    CHECK(hipMallocPitch((void **)&dp2, &p2, row, h));
    CHECK(hipMemcpy2D(dp1, p1, host, hrow, row, h, hipMemcpyHostToDevice));
    int cells = (int)(p1 / sizeof(float)) * h;
    scale<<<(cells + 255) / 256, 256>>>(dp1, 3.0f, cells);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy2DAsync(dp2, p2, dp1, p1, row, h, hipMemcpyDeviceToDevice, s1));
    CHECK(hipMemcpy2DAsync(back, hrow, dp2, p2, row, h, hipMemcpyDeviceToHost, s1));
    CHECK(hipStreamSynchronize(s1));
    show_f32("2d async", back, hw * h);
    memset(back, 0, hrow * h);
    CHECK(hipMemcpy2D(back + 3, hrow, dp1, p1, row - 3 * sizeof(float), h - 1, hipMemcpyDefault));
    show_f32("2d default", back, hw * h);
    CHECK(hipFree(dp1));
    CHECK(hipFree(dp2));
    free(host);
    free(back);
  }

  if (argc > 1 && !strcmp(argv[1], "memset2d")) {
    // a 48 x 20 byte matrix in pitched memory: zeroed, then 0x3f over columns 4..19 of rows
    // 2..17 (async), 0x7e over the first 3 bytes of row 0; read back whole rows
    const size_t w = 48, h = 20;
    unsigned char *dp, *back = (unsigned char *)malloc(w * h);
    size_t p;
    CHECK(hipMallocPitch((void **)&dp, &p, w, h));
    CHECK(hipMemset2D(dp, p, 0, w, h));
    CHECK(hipMemset2DAsync(dp + 2 * p + 4, p, 0x3f, 16, h - 4, s1));
    CHECK(hipStreamSynchronize(s1));
    CHECK(hipMemset2D(dp, p, 0x7e, 3, 1));
    CHECK(hipMemcpy2D(back, w, dp, p, w, h, hipMemcpyDeviceToHost));
    unsigned long long sum = 0;
    for (size_t i = 0; i < w * h; i++) sum = sum * 31 + back[i];
    printf("memset2d sum=%llu\n", sum);
    CHECK(hipFree(dp));
    free(back);
  }

  if (argc > 1 && !strcmp(argv[1], "3d")) {
    // a box of 10 floats x 6 rows x 5 slices of a 16 x 8 x 6 host volume: uploaded into
    // pitched memory, scaled, copied device to device one slice and two rows further, read
    // back into a zeroed volume (async, then blocking)
    const size_t hx = 16 * sizeof(float), hy = 8, hz = 6, pitch = 256, rows = 10, slices = 8;
    const size_t floats = hx / sizeof(float) * hy * hz, dev_floats = pitch * rows * slices / sizeof(float);
    float *vol = (float *)malloc(hx * hy * hz), *back = (float *)calloc(floats, sizeof(float));
    for (size_t i = 0; i < floats; i++) vol[i] = (float)(i % 113) * 0.5f;
    float *d1, *d2;
    CHECK(hipMalloc((void **)&d1, pitch * rows * slices));
    CHECK(hipMalloc((void **)&d2, pitch * rows * slices));
    CHECK(hipMemset(d1, 0, pitch * rows * slices));
    CHECK(hipMemset(d2, 0, pitch * rows * slices));
    const hipExtent box = make_hipExtent(10 * sizeof(float), 6, 5);
    hipMemcpy3DParms up = {};
    up.srcPtr = make_hipPitchedPtr(vol, hx, hx, hy);
    up.srcPos = make_hipPos(2 * sizeof(float), 1, 1);
    up.dstPtr = make_hipPitchedPtr(d1, pitch, pitch, rows);
    up.extent = box;
    up.kind = hipMemcpyHostToDevice;
    CHECK(hipMemcpy3D(&up));
    scale<<<(int)(dev_floats + 255) / 256, 256>>>(d1, 3.0f, (int)dev_floats);
    CHECK(hipDeviceSynchronize());
    hipMemcpy3DParms dd = {};
    dd.srcPtr = make_hipPitchedPtr(d1, pitch, pitch, rows);
    dd.dstPtr = make_hipPitchedPtr(d2, pitch, pitch, rows);
    dd.dstPos = make_hipPos(16, 2, 1);
    dd.extent = box;
    dd.kind = hipMemcpyDeviceToDevice;
    CHECK(hipMemcpy3DAsync(&dd, s1));
    hipMemcpy3DParms down = {};
    down.srcPtr = make_hipPitchedPtr(d2, pitch, pitch, rows);
    down.srcPos = make_hipPos(16, 2, 1);
    down.dstPtr = make_hipPitchedPtr(back, hx, hx, hy);
    down.dstPos = make_hipPos(4 * sizeof(float), 0, 0);
    down.extent = box;
    down.kind = hipMemcpyDeviceToHost;
    CHECK(hipMemcpy3DAsync(&down, s1));
    CHECK(hipStreamSynchronize(s1));
    show_f32("3d async", back, floats);
    memset(back, 0, floats * sizeof(float));
    down.kind = hipMemcpyDefault;
    CHECK(hipMemcpy3D(&down));
    show_f32("3d default", back, floats);
    CHECK(hipFree(d1));
    CHECK(hipFree(d2));
    free(vol);
    free(back);
  }

  if (argc > 1 && !strcmp(argv[1], "pool")) {
    hipMemPoolProps props = {};
    props.allocType = hipMemAllocationTypePinned;
    props.location.type = hipMemLocationTypeDevice;
    props.location.id = 0;
    hipMemPool_t pool, dflt;
    CHECK(hipMemPoolCreate(&pool, &props));
    CHECK(hipDeviceGetDefaultMemPool(&dflt, 0));
    uint64_t keep = 1 << 20;
    CHECK(hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep));
    float *pa, *pb;
    CHECK(hipMallocFromPoolAsync((void **)&pa, bytes, pool, s1));
    CHECK(hipMallocFromPoolAsync((void **)&pb, bytes, dflt, s1));
    for (int i = 0; i < n; i++) pinned[i] = (float)(i % 29);
    CHECK(hipMemcpyAsync(pa, pinned, bytes, hipMemcpyHostToDevice, s1));
    CHECK(hipMemcpyAsync(pb, pinned, bytes, hipMemcpyHostToDevice, s1));
    CHECK(hipStreamSynchronize(s1));
    scale<<<grid, block>>>(pa, 4.0f, n);
    add_into<<<grid, block>>>(pb, pa, n);
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpyAsync(pinned, pb, bytes, hipMemcpyDeviceToHost, s1));
    CHECK(hipStreamSynchronize(s1));
    show_f32("pool", pinned, n);
    CHECK(hipFreeAsync(pa, s1));
    CHECK(hipFreeAsync(pb, s1));
    CHECK(hipStreamSynchronize(s1));
    CHECK(hipMemPoolTrimTo(pool, 0));
    CHECK(hipMemPoolDestroy(pool));
  }

  CHECK(hipEventDestroy(e0));
  CHECK(hipEventDestroy(e1));
  CHECK(hipEventDestroy(e2));
  CHECK(hipStreamDestroy(s1));
  CHECK(hipStreamDestroy(s2));
  CHECK(hipHostFree(pinned));
  CHECK(hipFree(dx));
  CHECK(hipFree(dy));
  printf("streams done\n");
  return 0;
}
