/*
 * copies_app - 2D/3D copies, CUDA arrays, mipmapped arrays, texture and
 * surface objects, and stream memory operations (values written and waited
 * for in stream order) through the driver API (linked with -lcuda, versioned
 * export names).  Prints one line per result, a function of the data only,
 * and "copies_app: OK" when every result matched what the host computed.
 *
 * usage: copies_app   ($COPIES_APP_STALE_TEXTURE: first launch the texture kernel
 *                      with a value no object has, which must fail)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_cuda_abi.h"

typedef void *CUarray, *CUmipmappedArray;
typedef unsigned long long CUtexObject, CUsurfObject;

typedef struct {
  int addressMode[3];
  int filterMode;
  unsigned flags, maxAnisotropy;
  int mipmapFilterMode;
  float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
  float borderColor[4];
  int reserved[12];
} CUDA_TEXTURE_DESC;

enum { HOST = 1, DEVICE = 2, ARRAY = 3, UNIFIED = 4 };
#define FORMAT_U32 0x03
#define FORMAT_FLOAT 0x20
#define SURFACE_LDST 2u

CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream);
CUresult cuMemsetD2D8_v2(CUdeviceptr, size_t, unsigned char, size_t, size_t);
CUresult cuMemsetD2D32Async(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream);
CUresult cuStreamWriteValue32_v2(CUstream, CUdeviceptr, uint32_t, unsigned);
CUresult cuStreamWriteValue64_v2(CUstream, CUdeviceptr, uint64_t, unsigned);
CUresult cuStreamWaitValue32_v2(CUstream, CUdeviceptr, uint32_t, unsigned);
CUresult cuStreamWaitValue64_v2(CUstream, CUdeviceptr, uint64_t, unsigned);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *);
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *);
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *, CUstream);
CUresult cuMemcpyHtoA_v2(CUarray, size_t, const void *, size_t);
CUresult cuMemcpyAtoH_v2(void *, CUarray, size_t, size_t);
CUresult cuMemcpyAtoHAsync_v2(void *, CUarray, size_t, size_t, CUstream);
CUresult cuMemcpyAtoD_v2(CUdeviceptr, CUarray, size_t, size_t);
CUresult cuMemcpyDtoA_v2(CUarray, size_t, CUdeviceptr, size_t);
CUresult cuMemcpyAtoA_v2(CUarray, size_t, CUarray, size_t, size_t);
CUresult cuArrayCreate_v2(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
CUresult cuArray3DCreate_v2(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
CUresult cuArrayDestroy(CUarray);
CUresult cuMipmappedArrayCreate(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
CUresult cuMipmappedArrayGetLevel(CUarray *, CUmipmappedArray, unsigned);
CUresult cuMipmappedArrayDestroy(CUmipmappedArray);
CUresult cuTexObjectCreate(CUtexObject *, const CUDA_RESOURCE_DESC *, const CUDA_TEXTURE_DESC *, const void *);
CUresult cuTexObjectDestroy(CUtexObject);
CUresult cuSurfObjectCreate(CUsurfObject *, const CUDA_RESOURCE_DESC *);
CUresult cuSurfObjectDestroy(CUsurfObject);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);

static int g_bad;
#define CHECK_PROG "copies_app"
#include "check.h"

static uint32_t sum(const uint32_t *v, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i < n; i++) s = s * 31u + v[i];
  return s;
}
static void expect(const char *what, const uint32_t *got, const uint32_t *want, size_t n) {
  int ok = !memcmp(got, want, n * 4);
  if (!ok) g_bad = 1;
  printf("%s: %08x %s\n", what, sum(got, n), ok ? "ok" : "WRONG");
}

/* The packed host side of a copy of h rows (d slices) of w bytes: its source or its destination,
 * and the copy's extent. */
static void host_src_2d(CUDA_MEMCPY2D *c, const void *p, size_t w, size_t h) {
  c->srcMemoryType = HOST;
  c->srcHost = p;
  c->srcPitch = c->WidthInBytes = w;
  c->Height = h;
}
static void host_dst_2d(CUDA_MEMCPY2D *c, void *p, size_t w, size_t h) {
  c->dstMemoryType = HOST;
  c->dstHost = p;
  c->dstPitch = c->WidthInBytes = w;
  c->Height = h;
}
static void host_src_3d(CUDA_MEMCPY3D *v, const void *p, size_t w, size_t h, size_t d) {
  v->srcMemoryType = HOST;
  v->srcHost = p;
  v->srcPitch = v->WidthInBytes = w;
  v->srcHeight = v->Height = h;
  v->Depth = d;
}
static void host_dst_3d(CUDA_MEMCPY3D *v, void *p, size_t w, size_t h, size_t d) {
  v->dstMemoryType = HOST;
  v->dstHost = p;
  v->dstPitch = v->WidthInBytes = w;
  v->dstHeight = v->Height = h;
  v->Depth = d;
}

#define W 13 /* elements per row */
#define H 7
#define HP 20 /* host pitch in elements */
#define D 3

int main(void) {
  CUcontext ctx;
  CUmodule mod;
  CUfunction tex_fetch, surf_write;
  CUstream st;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, ".entry tex_fetch\n.entry surf_write\n"));
  CK(cuModuleGetFunction(&tex_fetch, mod, "tex_fetch"));
  CK(cuModuleGetFunction(&surf_write, mod, "surf_write"));
  CK(cuStreamCreate(&st, 0));

  /* 2D: a pitched host block (offset 2 elements, 1 row) into pitched device memory and back. */
  static uint32_t host2d[(H + 1) * HP], back2d[W * H], want2d[W * H];
  for (size_t i = 0; i < (H + 1) * HP; i++) host2d[i] = (uint32_t)(i * 2654435761u);
  for (size_t y = 0; y < H; y++)
    for (size_t x = 0; x < W; x++) want2d[y * W + x] = host2d[(y + 1) * HP + 2 + x];
  CUdeviceptr dp;
  size_t pitch;
  CK(cuMemAllocPitch_v2(&dp, &pitch, W * 4, H, 4));
  CUDA_MEMCPY2D c = {0};
  c.srcMemoryType = HOST;
  c.srcHost = host2d;
  c.srcPitch = HP * 4;
  c.srcXInBytes = 8;
  c.srcY = 1;
  c.dstMemoryType = DEVICE;
  c.dstDevice = dp;
  c.dstPitch = pitch;
  c.WidthInBytes = W * 4;
  c.Height = H;
  CK(cuMemcpy2D_v2(&c));
  /* columns 1.. of rows 2.. (a result unlike the source, so a wrong source is seen) */
  static uint32_t part[(W - 1) * (H - 2)], wantpart[(W - 1) * (H - 2)];
  for (size_t y = 0; y < H - 2; y++)
    for (size_t x = 0; x < W - 1; x++) wantpart[y * (W - 1) + x] = want2d[(y + 2) * W + x + 1];
  memset(&c, 0, sizeof c);
  c.srcMemoryType = DEVICE;
  c.srcDevice = dp;
  c.srcPitch = pitch;
  c.srcXInBytes = 4;
  c.srcY = 2;
  host_dst_2d(&c, part, (W - 1) * 4, H - 2);
  CK(cuMemcpy2D_v2(&c));
  expect("2d h2d/d2h", part, wantpart, (W - 1) * (H - 2));
  c.srcXInBytes = 0;
  c.srcY = 0;
  c.dstPitch = W * 4;
  c.WidthInBytes = W * 4;
  c.Height = H;
  /* the same through unified pointers and the async and unaligned variants */
  memset(back2d, 0, sizeof back2d);
  c.srcMemoryType = UNIFIED;
  c.srcDevice = dp;
  c.srcHost = NULL;
  c.dstMemoryType = UNIFIED;
  c.dstDevice = (CUdeviceptr)(uintptr_t)back2d;
  c.dstHost = NULL;
  CK(cuMemcpy2DAsync_v2(&c, st));
  CK(cuStreamSynchronize(st));
  expect("2d unified async", back2d, want2d, W * H);
  memset(back2d, 0, sizeof back2d);
  c.srcMemoryType = DEVICE;
  c.dstMemoryType = HOST;
  c.dstHost = back2d;
  c.dstDevice = 0;
  CK(cuMemcpy2DUnaligned_v2(&c));
  expect("2d unaligned", back2d, want2d, W * H);
  /* 2D memsets: a 32-bit value over columns 1..W-2 of rows 1.. (async), the byte 0x11 over the
     first element of row 0; read back with the same 2D copy. */
  CK(cuMemsetD2D32Async(dp + pitch + 4, pitch, 0xabad1deau, W - 2, H - 1, st));
  CK(cuStreamSynchronize(st));
  CK(cuMemsetD2D8_v2(dp, pitch, 0x11, 4, 1));
  for (size_t y = 1; y < H; y++)
    for (size_t x = 1; x < W - 1; x++) want2d[y * W + x] = 0xabad1deau;
  want2d[0] = 0x11111111u;
  memset(back2d, 0, sizeof back2d);
  CK(cuMemcpy2D_v2(&c));
  expect("2d memsets", back2d, want2d, W * H);

  /* 3D: a host volume into a device volume (pitch 64 bytes, 9 rows a slice), back asynchronously. */
  enum { VW = 5, VH = 4, VP = 16, VSH = 9 };
  static uint32_t vol[VH * VW * D], volback[VH * VW * D];
  for (size_t i = 0; i < VH * VW * D; i++) vol[i] = (uint32_t)(i * 7 + 3);
  CUdeviceptr dv;
  CK(cuMemAlloc_v2(&dv, VP * 4 * VSH * D));
  CUDA_MEMCPY3D v = {0};
  host_src_3d(&v, vol, VW * 4, VH, D);
  v.dstMemoryType = DEVICE;
  v.dstDevice = dv;
  v.dstPitch = VP * 4;
  v.dstHeight = VSH;
  v.dstY = 2;
  CK(cuMemcpy3D_v2(&v));
  memset(&v, 0, sizeof v);
  v.srcMemoryType = DEVICE;
  v.srcDevice = dv;
  v.srcPitch = VP * 4;
  v.srcHeight = VSH;
  v.srcY = 2;
  v.srcZ = 1; /* slices 1.. (a result unlike the source) */
  host_dst_3d(&v, volback, VW * 4, VH, D - 1);
  CK(cuMemcpy3DAsync_v2(&v, st));
  CK(cuStreamSynchronize(st));
  expect("3d h2d/d2h", volback, vol + VH * VW, VH * VW * (D - 1));

  /* A 2D float array with surface access: filled by a 2D copy, read back, fetched by a texture. */
  enum { AW = 6, AH = 4 };
  static uint32_t img[AW * AH], imgback[AW * AH], fetched[AW * AH];
  for (size_t i = 0; i < AW * AH; i++) img[i] = (uint32_t)(0x3f800000u + i * 0x1000u);
  CUarray arr;
  CUDA_ARRAY3D_DESCRIPTOR ad = {AW, AH, 0, FORMAT_FLOAT, 1, SURFACE_LDST};
  CK(cuArray3DCreate_v2(&arr, &ad));
  memset(&c, 0, sizeof c);
  host_src_2d(&c, img, AW * 4, AH);
  c.dstMemoryType = ARRAY;
  c.dstArray = arr;
  CK(cuMemcpy2D_v2(&c));
  memset(&c, 0, sizeof c);
  c.srcMemoryType = ARRAY;
  c.srcArray = arr;
  host_dst_2d(&c, imgback, AW * 4, AH);
  CK(cuMemcpy2D_v2(&c));
  expect("array 2d", imgback, img, AW * AH);

  CUDA_RESOURCE_DESC rd;
  memset(&rd, 0, sizeof rd);
  rd.resType = 0;
  rd.res.array.hArray = arr;
  CUDA_TEXTURE_DESC td;
  memset(&td, 0, sizeof td);
  CUtexObject tex;
  CK(cuTexObjectCreate(&tex, &rd, &td, NULL));
  CUdeviceptr dout;
  CK(cuMemAlloc_v2(&dout, sizeof fetched));
  int n = AW * AH;
  void *targs[] = {&tex, &dout, &n};
  if (getenv("COPIES_APP_STALE_TEXTURE")) { /* a value no object has: the kernel must fail */
    CUtexObject stale = tex + 0x100;
    void *bad[] = {&stale, &dout, &n};
    CK(cuLaunchKernel(tex_fetch, 1, 1, 1, 32, 1, 1, 0, NULL, bad, NULL));
  }
  CK(cuLaunchKernel(tex_fetch, 1, 1, 1, 32, 1, 1, 0, NULL, targs, NULL));
  CK(cuMemcpyDtoH_v2(fetched, dout, sizeof fetched));
  expect("texture fetch", fetched, img, AW * AH);

  CUsurfObject surf;
  CK(cuSurfObjectCreate(&surf, &rd));
  unsigned base = 1000;
  void *sargs[] = {&surf, &base, &n};
  CK(cuLaunchKernel(surf_write, 1, 1, 1, 32, 1, 1, 0, NULL, sargs, NULL));
  for (int i = 0; i < n; i++) img[i] = base + (unsigned)i;
  memset(&v, 0, sizeof v); /* array -> host through a 3D copy */
  v.srcMemoryType = ARRAY;
  v.srcArray = arr;
  host_dst_3d(&v, imgback, AW * 4, AH, 1);
  CK(cuMemcpy3D_v2(&v));
  expect("surface write", imgback, img, AW * AH);
  CK(cuSurfObjectDestroy(surf));
  CK(cuTexObjectDestroy(tex));

  /* 1D arrays: host -> array -> array -> device -> array -> host. */
  enum { LN = 16 };
  static uint32_t line[LN], lineback[LN], want1[LN];
  for (int i = 0; i < LN; i++) line[i] = (uint32_t)(i * i + 11);
  CUarray a1, a2;
  CUDA_ARRAY_DESCRIPTOR d1 = {LN, 0, FORMAT_U32, 1};
  CK(cuArrayCreate_v2(&a1, &d1));
  CK(cuArrayCreate_v2(&a2, &d1));
  CK(cuMemcpyHtoA_v2(a1, 0, line, sizeof line));
  CK(cuMemcpyAtoA_v2(a2, 8, a1, 0, sizeof line - 8));
  CUdeviceptr d1p;
  CK(cuMemAlloc_v2(&d1p, sizeof line));
  CK(cuMemcpyAtoD_v2(d1p, a2, 0, sizeof line));
  CK(cuMemcpyDtoA_v2(a1, 0, d1p, sizeof line));
  CK(cuMemcpyAtoH_v2(lineback, a1, 0, sizeof line));
  memset(want1, 0, sizeof want1);
  memcpy(want1 + 2, line, sizeof line - 8);
  expect("array 1d", lineback, want1, LN);
  memset(lineback, 0, sizeof lineback);
  CK(cuMemcpyAtoHAsync_v2(lineback, a2, 0, sizeof line, st));
  CK(cuStreamSynchronize(st));
  expect("array 1d async", lineback, want1, LN);

  /* A mipmapped array: level 1 filled by a 3D copy, level 0 fetched through a texture. */
  CUmipmappedArray mm;
  CUDA_ARRAY3D_DESCRIPTOR md = {8, 8, 0, FORMAT_U32, 1, 0};
  CK(cuMipmappedArrayCreate(&mm, &md, 3));
  CUarray l0, l1;
  CK(cuMipmappedArrayGetLevel(&l0, mm, 0));
  CK(cuMipmappedArrayGetLevel(&l1, mm, 1));
  static uint32_t lev[64], levback[16];
  for (int i = 0; i < 64; i++) lev[i] = (uint32_t)(500 + i);
  memset(&c, 0, sizeof c);
  host_src_2d(&c, lev, 32, 8);
  c.dstMemoryType = ARRAY;
  c.dstArray = l0;
  CK(cuMemcpy2D_v2(&c));
  host_src_2d(&c, lev, 16, 4);
  c.dstArray = l1;
  CK(cuMemcpy2D_v2(&c));
  memset(&c, 0, sizeof c);
  c.srcMemoryType = ARRAY;
  c.srcArray = l1;
  host_dst_2d(&c, levback, 16, 4);
  CK(cuMemcpy2D_v2(&c));
  expect("mipmap level 1", levback, lev, 16);
  memset(&rd, 0, sizeof rd);
  rd.resType = 1;
  rd.res.mipmap.hMipmappedArray = mm;
  CK(cuTexObjectCreate(&tex, &rd, &td, NULL));
  static uint32_t mfetch[64];
  n = AW * AH; /* the first rows of level 0 */
  CK(cuLaunchKernel(tex_fetch, 1, 1, 1, 64, 1, 1, 0, NULL, targs, NULL));
  CK(cuMemcpyDtoH_v2(mfetch, dout, sizeof fetched));
  expect("mipmap texture", mfetch, lev, AW * AH);
  CK(cuTexObjectDestroy(tex));

  /* Stream memory operations: values written in stream order, then waited for (EQ, GEQ). */
  CUdeviceptr dvals;
  CK(cuMemAlloc_v2(&dvals, 16));
  CK(cuMemsetD32Async(dvals, 0, 4, st));
  CK(cuStreamWriteValue32_v2(st, dvals, 0x600dcafeu, 0));
  CK(cuStreamWriteValue64_v2(st, dvals + 8, 0x1122334455667788ull, 0));
  CK(cuStreamWaitValue32_v2(st, dvals, 0x600dcafeu, 1));
  CK(cuStreamWaitValue64_v2(st, dvals + 8, 0x1122334455667700ull, 0));
  CK(cuStreamSynchronize(st));
  static uint32_t vals[4];
  static const uint32_t wantvals[4] = {0x600dcafeu, 0, 0x55667788u, 0x11223344u};
  CK(cuMemcpyDtoH_v2(vals, dvals, sizeof vals));
  expect("stream values", vals, wantvals, 4);
  CK(cuMemFree_v2(dvals));

  CK(cuMipmappedArrayDestroy(mm));
  CK(cuArrayDestroy(a1));
  CK(cuArrayDestroy(a2));
  CK(cuArrayDestroy(arr));
  CK(cuMemFree_v2(dout));
  CK(cuMemFree_v2(d1p));
  CK(cuMemFree_v2(dv));
  CK(cuMemFree_v2(dp));
  CK(cuStreamDestroy_v2(st));
  printf("copies_app: %s\n", g_bad ? "WRONG" : "OK");
  return g_bad;
}
