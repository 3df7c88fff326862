/*
 * hostmem_app - memory the host and the device share without copy calls, and stream-ordered
 * allocation, through the driver's exports (linked with -lcuda, like direct_app):
 *
 *   zerocopy  cuMemHostAlloc(DEVICEMAP) and cuMemHostRegister(DEVICEMAP) memory written by
 *             kernels through its device pointer and read by the host after a synchronisation;
 *             the host writes it between kernels
 *   managed   cuMemAllocManaged memory written by the host between kernels and read after a
 *             synchronisation
 *   regasync  an async, then a blocking D2H copy into registered (DEVICEMAP) memory: each
 *             recorded once, as the copy's result, not again as a host read of the region
 *   regloop   simpleStreams' non-streamed loop: three times a kernel, then a blocking D2H copy
 *             of its output into registered (DEVICEMAP) memory, which the next kernel's launch
 *             looks at for host writes (none: the host only reads it)
 *   regthen   an async D2H copy into registered (DEVICEMAP) memory whose result is recorded at
 *             once (a host-memory call claims it), then a kernel on the same stream writing
 *             the same memory: what the kernel wrote is read at the synchronisation
 *   table     mapped flags a kernel reads only through pointers kept in device memory
 *   hosttable as table, the pointers kept in managed memory the host writes
 *   texmapped mapped memory a kernel reads only through a texture object over it
 *   blockingcopy  mapped memory a kernel writes, a blocking cuMemcpy / cuMemcpy2D, host writes
 *             to that memory, a kernel reading it: the host's writes are the second's input
 *   escape    mapped memory the host rewrites between kernels that reach device memory only,
 *             then hands to a kernel as its input: read before that kernel only (with
 *             HOSTMEM_APP_ASK set its device pointer is asked first: read at every round;
 *             with HOSTMEM_APP_PITCHED its downloads are 2D copies)
 *   pitcheddown  a kernel's result copied into mapped memory by a blocking copy (a 2D one with
 *             HOSTMEM_APP_PITCHED)
 *   memsetgap mapped memory the host fills, then a 2D memset of rows with a gap between them
 *   nocopy    kernels writing device memory that is freed unread (nothing copied back): what
 *             each free releases is what replay can check
 *   halfwritten  a buffer a kernel writes half of, freed unread: its other half is what the
 *             memory held before
 *   manyfrees 70 buffers filled and freed unread: more than capture checks
 *   vmmnocopy two 2 MiB VMM mappings side by side filled by a kernel and unmapped unread in one
 *             call (nothing copied back): what the unmap releases is what replay can check;
 *             then a mapping never opened to the device, unmapped (nothing may read it)
 *   h2dsrc    async H2D copies of 2 MiB from memory a kernel may write (device-mapped pinned,
 *             managed): their sources are recorded at the call, not read after it
 *   async     cuMemAllocAsync/cuMemFreeAsync reusing an address on one stream (a kernel is
 *             still in flight on the freed memory), and a pool of its own
 *             (cuMemPoolCreate, attributes, access, trim, cuMemAllocFromPoolAsync)
 *
 * Prints only values computed from the data.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_cuda_abi.h"
#include "sums.h"

typedef struct CUpool_st *CUmemoryPool;

CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxSynchronize(void);
CUresult cuLibraryLoadData(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned);
CUresult cuLibraryGetKernel(CUkernel *, CUlibrary, const char *);
CUresult cuKernelGetFunction(CUfunction *, CUkernel);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        CUstream, void **, void **);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpy(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *);
CUresult cuMemsetD2D32_v2(CUdeviceptr, size_t, unsigned, size_t, size_t);
CUresult cuTexObjectCreate(unsigned long long *, const CUDA_RESOURCE_DESC *, const void *, const void *);
CUresult cuTexObjectDestroy(unsigned long long);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemFreeHost(void *);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemPoolCreate(CUmemoryPool *, const CUmemPoolProps *);
CUresult cuMemPoolDestroy(CUmemoryPool);
CUresult cuMemPoolSetAttribute(CUmemoryPool, int, void *);
CUresult cuMemPoolGetAttribute(CUmemoryPool, int, void *);
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t);
CUresult cuMemPoolSetAccess(CUmemoryPool, const CUmemAccessDesc *, size_t);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *, CUdevice);
CUresult cuDeviceGetMemPool(CUmemoryPool *, CUdevice);
CUresult cuDeviceSetMemPool(CUdevice, CUmemoryPool);
#include "vmm.h"

#define CHECK_PROG "hostmem_app"
#include "check.h"

#define N 4096
#define BLOCK 256
#define GRID ((N + BLOCK - 1) / BLOCK)

static const char k_lib_text[] =
    "// hrr fake-cuda fatbin payload\n.entry axpy\n.entry fill_u32\n.entry axpy_params\n.entry gather\n"
    ".entry tex_fetch\n";
static CUfunction g_axpy, g_fill, g_axpy_params, g_gather, g_tex_fetch;

static void setup(CUdevice *dev) {
  static unsigned char fatbin[256] __attribute__((aligned(16)));
  size_t plen = sizeof k_lib_text, fat = (plen + 7) & ~(size_t)7;
  uint32_t magic = 0xBA55ED50u;
  uint16_t version = 1, hsize = 16;
  uint64_t fsize = fat;
  memcpy(fatbin, &magic, 4);
  memcpy(fatbin + 4, &version, 2);
  memcpy(fatbin + 6, &hsize, 2);
  memcpy(fatbin + 8, &fsize, 8);
  memcpy(fatbin + 16, k_lib_text, plen);
  static struct { int magic, version; const void *data; void *unused; } wrapper = {0x466243B1, 1, fatbin, NULL};
  CUcontext ctx;
  CUlibrary lib;
  CUkernel k;
  CK(cuInit(0));
  CK(cuDeviceGet(dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, *dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
  CK(cuLibraryGetKernel(&k, lib, "axpy"));
  CK(cuKernelGetFunction(&g_axpy, k));
  CK(cuLibraryGetKernel(&k, lib, "fill_u32"));
  CK(cuKernelGetFunction(&g_fill, k));
  CK(cuLibraryGetKernel(&k, lib, "axpy_params"));
  CK(cuKernelGetFunction(&g_axpy_params, k));
  CK(cuLibraryGetKernel(&k, lib, "gather"));
  CK(cuKernelGetFunction(&g_gather, k));
  CK(cuLibraryGetKernel(&k, lib, "tex_fetch"));
  CK(cuKernelGetFunction(&g_tex_fetch, k));
}

static void axpy(float a, CUdeviceptr x, CUdeviceptr y, CUstream s) {
  int n = N;
  void *params[] = {&a, &x, &y, &n};
  CK(cuLaunchKernel(g_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
}
static void fill(CUdeviceptr p, unsigned v, unsigned long long n, CUstream s) {
  void *params[] = {&p, &v, &n};
  CK(cuLaunchKernel(g_fill, (unsigned)((n + BLOCK - 1) / BLOCK), 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
}

/* y = a * x + y on the default stream, a synchronisation, then the sum of y (h: the host's view
 * of it) printed as `what` */
static void axpy_shown(const char *what, float a, CUdeviceptr x, CUdeviceptr y, const float *h) {
  axpy(a, x, y, NULL);
  CK(cuCtxSynchronize());
  printf("%s sum=%.3f\n", what, fsum(h, N));
}

/* x = i % 7 on the device */
static CUdeviceptr device_x(void) {
  static float hx[N];
  CUdeviceptr x;
  for (int i = 0; i < N; i++) hx[i] = (float)(i % 7);
  CK(cuMemAlloc_v2(&x, sizeof hx));
  CK(cuMemcpyHtoD_v2(x, hx, sizeof hx));
  return x;
}

/* N floats of managed memory (attached globally); the host's view of them in *h */
static CUdeviceptr managed_floats(float **h) {
  CUdeviceptr m;
  CK(cuMemAllocManaged(&m, N * sizeof(float), 1 /* CU_MEM_ATTACH_GLOBAL */));
  *h = (float *)(uintptr_t)m;
  return m;
}

static void zerocopy(CUdevice dev, CUdeviceptr x) {
  float *hy;
  CK(cuMemHostAlloc((void **)&hy, N * sizeof(float), 2 /* DEVICEMAP */));
  for (int i = 0; i < N; i++) hy[i] = (float)(i % 5); /* host writes before the first kernel */
  CUdeviceptr dy;
  CK(cuMemHostGetDevicePointer_v2(&dy, hy, 0));
  axpy_shown("mapped1", 2.0f, x, dy, hy);
  for (int i = 0; i < N; i += 3) hy[i] = -1.0f; /* host writes between kernels */
  axpy_shown("mapped2", 0.5f, x, dy, hy);

  unsigned *reg;
  if (posix_memalign((void **)&reg, 4096, 2 * N * sizeof(unsigned))) exit(1);
  for (int i = 0; i < 2 * N; i++) reg[i] = (unsigned)i;
  CK(cuMemHostRegister_v2(reg, 2 * N * sizeof(unsigned), 2 /* DEVICEMAP */));
  fill((CUdeviceptr)(uintptr_t)(reg + N / 2), 7u, N, NULL); /* the host pointer, by UVA */
  CK(cuCtxSynchronize());
  printf("registered1 sum=%llu\n", usum(reg, 2 * N));
  reg[0] = 1000000u; /* host write, then a kernel that leaves it */
  fill((CUdeviceptr)(uintptr_t)(reg + N), 3u, 16, NULL);
  CK(cuCtxSynchronize());
  printf("registered2 sum=%llu\n", usum(reg, 2 * N));
  CK(cuMemHostUnregister(reg));
  free(reg);
  CK(cuMemFreeHost(hy));
}

/* Mapped memory read by a kernel only through a texture object over it (linear): the host
 * rewrites it between rounds, each round's kernel the first work after a synchronisation */
static void texmapped(CUdevice dev, CUdeviceptr x) {
  enum { T = 256 };
  uint32_t *h;
  CK(cuMemHostAlloc((void **)&h, T * sizeof(uint32_t), 2 /* DEVICEMAP */));
  CUDA_RESOURCE_DESC rd;
  memset(&rd, 0, sizeof rd);
  rd.resType = 2 /* LINEAR */;
  rd.res.linear.devPtr = (CUdeviceptr)(uintptr_t)h;
  rd.res.linear.format = 0x03 /* UNSIGNED_INT32 */;
  rd.res.linear.numChannels = 1;
  rd.res.linear.sizeInBytes = T * sizeof(uint32_t);
  unsigned char td[104] = {0}; /* CUDA_TEXTURE_DESC, all defaults */
  unsigned long long tex;
  CK(cuTexObjectCreate(&tex, &rd, td, NULL));
  CUdeviceptr out;
  CK(cuMemAlloc_v2(&out, T * sizeof(uint32_t)));
  static uint32_t back[T];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < T; i++) h[i] = (uint32_t)(1000 * round + i);
    int n = T;
    void *params[] = {&tex, &out, &n};
    CK(cuLaunchKernel(g_tex_fetch, 1, 1, 1, T, 1, 1, 0, NULL, params, NULL));
    CK(cuMemcpyDtoH_v2(back, out, sizeof back));
    printf("texmapped%d sum=%llu\n", round, usum(back, T));
  }
  CK(cuTexObjectDestroy(tex));
  CK(cuMemFree_v2(out));
  CK(cuMemFreeHost(h));
}

/* Mapped memory a kernel writes, a blocking copy through cuMemcpy (unified addressing: its
 * direction known only from the pointers) or cuMemcpy2D, the host rewriting the memory, a
 * kernel reading and writing it again: the blocking copy waited for the first kernel, so what
 * the host wrote after it is an input of the second */
static void blockingcopy(CUdevice dev, CUdeviceptr x) {
  float *hy;
  CK(cuMemHostAlloc((void **)&hy, N * sizeof(float), 2 /* DEVICEMAP */));
  CUdeviceptr y = (CUdeviceptr)(uintptr_t)hy;
  static float back[N];
  memset(hy, 0, N * sizeof(float));
  for (int round = 0; round < 2; round++) {
    axpy(1.0f, x, y, NULL);
    if (round == 0) {
      CK(cuMemcpy((CUdeviceptr)(uintptr_t)back, x, sizeof back));
    } else {
      CUDA_MEMCPY2D c = {0};
      c.srcMemoryType = 2 /* DEVICE */;
      c.srcDevice = x;
      c.srcPitch = sizeof back;
      c.dstMemoryType = 1 /* HOST */;
      c.dstHost = back;
      c.dstPitch = sizeof back;
      c.WidthInBytes = sizeof back;
      c.Height = 1;
      CK(cuMemcpy2D_v2(&c));
    }
    for (int i = 0; i < N; i += 2) hy[i] = (float)(round + 5);
    axpy(2.0f, x, y, NULL);
    CK(cuCtxSynchronize());
    printf("blockingcopy%d sum=%.1f back=%.1f\n", round, fsum(hy, N), fsum(back, N));
  }
  CK(cuMemFreeHost(hy));
}

/* A blocking download of `n` bytes at `src` into `dst`: a 2D copy of one row with
 * HOSTMEM_APP_PITCHED set (its reach is told from its descriptor), else cuMemcpyDtoH */
static void download(void *dst, CUdeviceptr src, size_t n) {
  const char *pitched = getenv("HOSTMEM_APP_PITCHED");
  if (!pitched || !*pitched) {
    CK(cuMemcpyDtoH_v2(dst, src, n));
    return;
  }
  CUDA_MEMCPY2D c = {0};
  c.srcMemoryType = 2 /* DEVICE */;
  c.srcDevice = src;
  c.srcPitch = n;
  c.dstMemoryType = 1 /* HOST */;
  c.dstHost = dst;
  c.dstPitch = n;
  c.WidthInBytes = n;
  c.Height = 1;
  CK(cuMemcpy2D_v2(&c));
}

/* Mapped memory the host rewrites between kernels whose arguments point into device memory
 * only (each the first work after a synchronisation), then hands to a kernel as its input */
static void escape(CUdevice dev, CUdeviceptr x) {
  float *hy;
  CK(cuMemHostAlloc((void **)&hy, N * sizeof(float), 2 /* DEVICEMAP */));
  if (getenv("HOSTMEM_APP_ASK")) { /* asked for its device pointer: handed to device code */
    CUdeviceptr dy;
    CK(cuMemHostGetDevicePointer_v2(&dy, hy, 0));
  }
  CUdeviceptr y;
  CK(cuMemAlloc_v2(&y, N * sizeof(float)));
  static float back[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) hy[i] = (float)(10 * round + i % 3);
    fill(y, 0u, N, NULL);
    axpy(1.0f, x, y, NULL);
    download(back, y, sizeof back);
    printf("escape%d sum=%.1f\n", round, fsum(back, N));
  }
  axpy(2.0f, (CUdeviceptr)(uintptr_t)hy, y, NULL); /* the kernel reads it: by UVA */
  CK(cuMemcpyDtoH_v2(back, y, sizeof back));
  printf("escaped sum=%.1f\n", fsum(back, N));
  CK(cuMemFree_v2(y));
  CK(cuMemFreeHost(hy));
}

enum { F = 64 };

/* Two rounds of `gather` reading mapped flags through a table of pointers to them at `ptrs`:
 * the host writes the flags, `point` puts the round's pointers where the table is, the kernel
 * reads the flags through them; printed as `what` */
static void gather_rounds(const char *what, CUdeviceptr ptrs, void (*point)(CUdeviceptr ptrs, CUdeviceptr dflags, int round)) {
  float *flags;
  CK(cuMemHostAlloc((void **)&flags, F * sizeof(float), 2 /* DEVICEMAP */));
  /* the host pointer, by UVA: a device pointer asked for would mark the flags as handed to
   * device code by itself; here only the pointers the kernel finds in memory do */
  CUdeviceptr dflags = (CUdeviceptr)(uintptr_t)flags, out;
  CK(cuMemAlloc_v2(&out, F * sizeof(float)));
  float back[F];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < F; i++) flags[i] = (float)(100 * round + i);
    point(ptrs, dflags, round);
    int n = F;
    void *params[] = {&ptrs, &out, &n};
    CK(cuLaunchKernel(g_gather, 1, 1, 1, F, 1, 1, 0, NULL, params, NULL));
    CK(cuMemcpyDtoH_v2(back, out, sizeof back));
    printf("%s%d sum=%.1f first=%.1f\n", what, round + 1, fsum(back, F), back[0]);
  }
  CK(cuMemFree_v2(ptrs));
  CK(cuMemFree_v2(out));
  CK(cuMemFreeHost(flags));
}

/* The round's pointers to the flags, reversed and rotated by the round */
static void pointers(CUdeviceptr *table, CUdeviceptr dflags, int round) {
  for (int i = 0; i < F; i++) table[i] = dflags + (CUdeviceptr)(((F - 1 - i + round) % F) * sizeof(float));
}

static void upload_pointers(CUdeviceptr ptrs, CUdeviceptr dflags, int round) {
  CUdeviceptr table[F];
  pointers(table, dflags, round);
  CK(cuMemcpyHtoD_v2(ptrs, table, sizeof table));
}

static void write_pointers(CUdeviceptr ptrs, CUdeviceptr dflags, int round) {
  pointers((CUdeviceptr *)(uintptr_t)ptrs, dflags, round);
}

/* Mapped flags a kernel reaches only through pointers kept in device memory (as NCCL keeps its
 * pinned flags' addresses): the host writes them, copies the pointers to the device, and
 * `gather` reads the flags through them; twice, the host changing the flags between. */
static void table(CUdevice dev, CUdeviceptr x) {
  CUdeviceptr ptrs;
  CK(cuMemAlloc_v2(&ptrs, F * sizeof(CUdeviceptr)));
  gather_rounds("table", ptrs, upload_pointers);
}

/* As `table`, the pointers kept in managed memory the host writes (not uploaded): the flags are
 * reached through what the host wrote there */
static void hosttable(CUdevice dev, CUdeviceptr x) {
  CUdeviceptr ptrs;
  CK(cuMemAllocManaged(&ptrs, F * sizeof(CUdeviceptr), 1 /* CU_MEM_ATTACH_GLOBAL */));
  gather_rounds("hosttable", ptrs, write_pointers);
}

static void managed(CUdevice dev, CUdeviceptr x) {
  float *hm;
  CUdeviceptr m = managed_floats(&hm);
  for (int i = 0; i < N; i++) hm[i] = (float)(i % 3);
  axpy_shown("managed1", 3.0f, x, m, hm);
  for (int i = 0; i < N; i++) hm[i] *= 0.25f;
  axpy_shown("managed2", 1.0f, x, m, hm);
  /* the managed pointer inside a by-value struct parameter (as cuBLAS passes its arguments) */
  struct { float a; int n; CUdeviceptr x, y; } p = {2.0f, N, x, m};
  void *params[] = {&p};
  CK(cuLaunchKernel(g_axpy_params, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
  CK(cuCtxSynchronize());
  printf("managed3 sum=%.3f\n", fsum(hm, N));
  CK(cuMemFree_v2(m));
}

/* A host task beside a device task (UnifiedMemoryStreams): the host computes into a managed
 * buffer no kernel is given while a kernel works on another, then one synchronisation; the
 * host's buffer then feeds a kernel. Capture must take the host's buffer for an input replay
 * writes, not for a result the device produced. */
static void concurrent(CUdevice dev, CUdeviceptr x) {
  float *hm, *hh;
  CUdeviceptr m = managed_floats(&hm), h = managed_floats(&hh);
  for (int i = 0; i < N; i++) hm[i] = (float)(i % 3);
  axpy(3.0f, x, m, NULL);
  for (int i = 0; i < N; i++) hh[i] = (float)(i % 11) * 0.5f; /* while the kernel may run */
  CK(cuCtxSynchronize());
  printf("concurrent device sum=%.3f host sum=%.3f\n", fsum(hm, N), fsum(hh, N));
  axpy_shown("concurrent fed", 1.0f, h, m, hm);
  CK(cuMemFree_v2(h));
  CK(cuMemFree_v2(m));
}

/* Two streams, a kernel on each writing a managed buffer of its own, then each stream
 * synchronised in turn: capture reads each buffer once its own stream completed (a stream's
 * synchronisation says nothing of the other's work). */
static void streams(CUdevice dev, CUdeviceptr x) {
  CUstream a, b;
  CK(cuStreamCreate(&a, 1 /* NON_BLOCKING */));
  CK(cuStreamCreate(&b, 1));
  float *ha, *hb;
  CUdeviceptr ma = managed_floats(&ha), mb = managed_floats(&hb);
  for (int i = 0; i < N; i++) {
    ha[i] = (float)(i % 3);
    hb[i] = (float)(i % 4);
  }
  axpy(2.0f, x, ma, a);
  axpy(3.0f, x, mb, b);
  CK(cuStreamSynchronize(a));
  printf("streams a sum=%.3f\n", fsum(ha, N));
  CK(cuStreamSynchronize(b));
  printf("streams b sum=%.3f\n", fsum(hb, N));
  CK(cuMemFree_v2(mb));
  CK(cuMemFree_v2(ma));
}

#define BIG ((size_t)4 << 20)
static void async(CUdevice dev, CUdeviceptr x) {
  CUstream s;
  CK(cuStreamCreate(&s, 1));
  static unsigned h[N];
  CUdeviceptr a, b;
  CK(cuMemAllocAsync(&a, BIG, s));
  fill(a, 5u, BIG / 4, s);
  CK(cuMemFreeAsync(a, s)); /* the kernel above may still run */
  CK(cuMemAllocAsync(&b, BIG, s));
  printf("reused=%d\n", a == b);
  fill(b, 9u, N, s);
  CK(cuMemcpyDtoHAsync_v2(h, b, sizeof h, s));
  CK(cuStreamSynchronize(s));
  printf("async sum=%llu\n", usum(h, N));
  CK(cuMemFreeAsync(b, s));

  CUmemoryPool def, pool, cur;
  CK(cuDeviceGetDefaultMemPool(&def, dev));
  unsigned long long threshold = BIG;
  CK(cuMemPoolSetAttribute(def, 4 /* RELEASE_THRESHOLD */, &threshold));
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = 1; /* PINNED */
  props.location.type = 1; /* DEVICE */
  props.location.id = dev;
  CK(cuMemPoolCreate(&pool, &props));
  int reuse = 0;
  CK(cuMemPoolSetAttribute(pool, 2 /* REUSE_ALLOW_OPPORTUNISTIC */, &reuse));
  CUmemAccessDesc desc = {{1, dev}, 3 /* READWRITE */};
  CK(cuMemPoolSetAccess(pool, &desc, 1));
  CK(cuDeviceSetMemPool(dev, pool));
  CK(cuDeviceGetMemPool(&cur, dev));
  CUdeviceptr c;
  CK(cuMemAllocFromPoolAsync(&c, BIG, cur, s));
  fill(c, 11u, N, s);
  CK(cuMemcpyDtoHAsync_v2(h, c, sizeof h, s));
  CK(cuStreamSynchronize(s));
  printf("pool sum=%llu\n", usum(h, N));
  CK(cuMemFreeAsync(c, s));
  CK(cuStreamSynchronize(s));
  CK(cuMemPoolTrimTo(pool, 0));
  CK(cuMemPoolGetAttribute(pool, 2, &reuse));
  printf("pool reuse=%d\n", reuse);
  CK(cuDeviceSetMemPool(dev, def));
  CK(cuMemPoolDestroy(pool));
  CK(cuStreamDestroy_v2(s));
}

static void h2dsrc(CUdevice dev, CUdeviceptr x) {
  enum { BYTES = 2 << 20 };
  CUstream s;
  CK(cuStreamCreate(&s, 1));
  CUdeviceptr d, m;
  CK(cuMemAlloc_v2(&d, BYTES));
  unsigned char *mapped;
  CK(cuMemHostAlloc((void **)&mapped, BYTES, 2 /* DEVICEMAP */));
  CK(cuMemAllocManaged(&m, BYTES, 1));
  unsigned char *managed = (unsigned char *)(uintptr_t)m;
  for (int i = 0; i < BYTES; i++) mapped[i] = (unsigned char)(i * 7), managed[i] = (unsigned char)(i * 13);
  CK(cuMemcpyHtoDAsync_v2(d, mapped, BYTES, s));
  CK(cuMemcpyHtoDAsync_v2(d, managed, BYTES, s));
  CK(cuStreamSynchronize(s));
  printf("h2dsrc done\n");
  CK(cuMemFree_v2(m));
  CK(cuMemFreeHost(mapped));
  CK(cuMemFree_v2(d));
  CK(cuStreamDestroy_v2(s));
}

/* Registered memory of the reg* modes: REG_WORDS words of page-aligned host memory, zeroed and
 * registered with DEVICEMAP (256 KiB: four whole chunks of capture's tracker), a stream of its
 * own and a device buffer of the same size. */
enum { REG_WORDS = 64 * 1024 };
struct reg {
  unsigned *host;
  CUstream s;
  CUdeviceptr d;
};

static struct reg reg_new(void) {
  struct reg r;
  if (posix_memalign((void **)&r.host, 4096, REG_WORDS * sizeof(unsigned))) exit(1);
  memset(r.host, 0, REG_WORDS * sizeof(unsigned));
  CK(cuMemHostRegister_v2(r.host, REG_WORDS * sizeof(unsigned), 2 /* DEVICEMAP */));
  CK(cuStreamCreate(&r.s, 1));
  CK(cuMemAlloc_v2(&r.d, REG_WORDS * sizeof(unsigned)));
  return r;
}

static void reg_free(struct reg *r) {
  CK(cuMemHostUnregister(r->host));
  free(r->host);
  CK(cuMemFree_v2(r->d));
  CK(cuStreamDestroy_v2(r->s));
}

static void regasync(CUdevice dev, CUdeviceptr x) {
  struct reg r = reg_new();
  fill(r.d, 9u, REG_WORDS, r.s);
  CK(cuMemcpyDtoHAsync_v2(r.host, r.d, REG_WORDS * sizeof(unsigned), r.s));
  CK(cuStreamSynchronize(r.s));
  printf("regasync sum=%llu\n", usum(r.host, REG_WORDS));
  fill(r.d, 11u, REG_WORDS, r.s);
  CK(cuStreamSynchronize(r.s));
  CK(cuMemcpyDtoH_v2(r.host, r.d, REG_WORDS * sizeof(unsigned)));
  printf("regasync blocking sum=%llu\n", usum(r.host, REG_WORDS));
  reg_free(&r);
}

static void regloop(CUdevice dev, CUdeviceptr x) {
  struct reg r = reg_new();
  for (unsigned k = 0; k < 3; k++) {
    fill(r.d, 20u + k, REG_WORDS, 0);
    CK(cuMemcpyDtoH_v2(r.host, r.d, REG_WORDS * sizeof(unsigned)));
    printf("regloop %u sum=%llu\n", k, usum(r.host, REG_WORDS));
  }
  reg_free(&r);
}

static void regthen(CUdevice dev, CUdeviceptr x) {
  struct reg r = reg_new();
  CUdeviceptr dreg;
  fill(r.d, 5u, REG_WORDS, r.s);
  CK(cuMemcpyDtoHAsync_v2(r.host, r.d, REG_WORDS * sizeof(unsigned), r.s));
  CK(cuMemHostGetDevicePointer_v2(&dreg, r.host, 0));
  fill(dreg, 7u, REG_WORDS, r.s); /* behind the copy, over what it wrote */
  CK(cuStreamSynchronize(r.s));
  printf("regthen sum=%llu\n", usum(r.host, REG_WORDS));
  reg_free(&r);
}

/* Results left in device memory, never copied back (a benchmark timing its kernels): y = 2x + y
 * twice, a 1 MiB buffer filled by a kernel, both freed unread (then `x`, by main). */
static void nocopy(CUdevice dev, CUdeviceptr x) {
  (void)dev;
  static float hy[N];
  CUdeviceptr y, z;
  for (int i = 0; i < N; i++) hy[i] = (float)(i % 3);
  CK(cuMemAlloc_v2(&y, sizeof hy));
  CK(cuMemcpyHtoD_v2(y, hy, sizeof hy));
  axpy(2.0f, x, y, NULL);
  axpy(2.0f, x, y, NULL);
  const unsigned long long words = 1 << 18; /* 1 MiB */
  CK(cuMemAlloc_v2(&z, words * 4));
  fill(z, 0x5eed, words, NULL);
  CK(cuMemFree_v2(y));
  CK(cuMemFree_v2(z));
  printf("nocopy done\n");
}

/* A buffer a kernel writes only half of, freed unread: its other half holds whatever the memory
 * held before (FAKE_CUDA_ALLOC_FILL's byte on the fake). */
static void halfwritten(CUdevice dev, CUdeviceptr x) {
  (void)dev;
  (void)x;
  const unsigned long long words = 1 << 16; /* 256 KiB */
  CUdeviceptr z;
  CK(cuMemAlloc_v2(&z, words * 4));
  fill(z, 0x5eed, words / 2, NULL);
  CK(cuMemFree_v2(z));
  printf("halfwritten done\n");
}

/* More frees than capture checks (70 small buffers, each filled by a kernel, freed unread). */
static void manyfrees(CUdevice dev, CUdeviceptr x) {
  (void)dev;
  (void)x;
  for (unsigned i = 0; i < 70; i++) {
    CUdeviceptr z;
    CK(cuMemAlloc_v2(&z, 1024));
    fill(z, i, 256, NULL);
    CK(cuMemFree_v2(z));
  }
  printf("manyfrees done\n");
}

/* VMM memory filled by a kernel and unmapped unread: two handles mapped side by side, one unmap. */
static void vmmnocopy(CUdevice dev, CUdeviceptr x) {
  (void)x;
  const size_t gran = (size_t)2 << 20;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
  prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
  prop.location.id = dev;
  CUdeviceptr va;
  CUmemGenericAllocationHandle h[2];
  CK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
  for (int i = 0; i < 2; i++) {
    CK(cuMemCreate(&h[i], gran, &prop, 0));
    CK(cuMemMap(va + i * gran, gran, 0, h[i], 0));
  }
  CUmemAccessDesc acc = {{1, dev}, 3};
  CK(cuMemSetAccess(va, 2 * gran, &acc, 1));
  fill(va, 0xc0ffee, 2 * gran / 4 - 1024, NULL);
  CK(cuMemUnmap(va, 2 * gran));
  for (int i = 0; i < 2; i++) CK(cuMemRelease(h[i]));
  CK(cuMemAddressFree(va, 2 * gran));
  /* mapped, never opened to the device, unmapped: nothing may read it */
  CK(cuMemAddressReserve(&va, gran, 0, 0, 0));
  CK(cuMemCreate(&h[0], gran, &prop, 0));
  CK(cuMemMap(va, gran, 0, h[0], 0));
  CK(cuMemUnmap(va, gran));
  CK(cuMemRelease(h[0]));
  CK(cuMemAddressFree(va, gran));
  printf("vmmnocopy done\n");
}

/* Mapped memory of three 64 KiB chunks the host fills, then a 2D memset of its first and last
 * chunk (one row each, the middle chunk the gap between them): the host's bytes in the gap
 * stay, and a copy after the synchronisation reads them back */
static void memsetgap(CUdevice dev, CUdeviceptr x) {
  (void)x;
  const size_t chunk = 64 << 10;
  unsigned char *h;
  CK(cuMemHostAlloc((void **)&h, 3 * chunk, 2 /* DEVICEMAP */));
  for (size_t i = 0; i < 3 * chunk; i++) h[i] = (unsigned char)(i % 7 + 1);
  CK(cuMemsetD2D32_v2((CUdeviceptr)(uintptr_t)h, 2 * chunk, 0x5a5a5a5au, chunk / 4, 2));
  CK(cuCtxSynchronize());
  static unsigned char gap[64 << 10]; /* the gap, read back by the device */
  CK(cuMemcpyDtoH_v2(gap, (CUdeviceptr)(uintptr_t)(h + chunk), chunk));
  unsigned long sum = 0;
  for (size_t i = 0; i < chunk; i++) sum += gap[i];
  printf("memsetgap gap sum=%lu\n", sum);
  CK(cuMemFreeHost(h));
}

/* A kernel's result copied back into mapped memory by a blocking 2D copy of one row of four
 * 64 KiB chunks, the host reading it: the copy's own event holds the result */
static void pitcheddown(CUdevice dev, CUdeviceptr x) {
  (void)x;
  const size_t n = 4 * (64 << 10);
  unsigned *h;
  CK(cuMemHostAlloc((void **)&h, n, 2 /* DEVICEMAP */));
  memset(h, 0, n);
  CUdeviceptr d;
  CK(cuMemAlloc_v2(&d, n));
  fill(d, 0xabcd0123u, n / 4, NULL);
  download(h, d, n);
  CK(cuCtxSynchronize());
  unsigned long sum = 0;
  for (size_t i = 0; i < n / 4; i++) sum += h[i] & 0xff;
  printf("pitcheddown sum=%lu\n", sum);
  CK(cuMemFree_v2(d));
  CK(cuMemFreeHost(h));
}

/* The modes: each runs after `setup`, given the device and, where `uses_x`, `device_x()`'s
 * buffer (else 0), which is freed after the mode. */
static const struct mode {
  const char *name;
  int uses_x;
  void (*run)(CUdevice dev, CUdeviceptr x);
} k_modes[] = {
  {"zerocopy", 1, zerocopy}, {"managed", 1, managed}, {"concurrent", 1, concurrent},
  {"streams", 1, streams},   {"async", 0, async},     {"regasync", 0, regasync}, {"regloop", 0, regloop},
  {"h2dsrc", 0, h2dsrc},     {"table", 0, table},     {"escape", 1, escape},   {"hosttable", 0, hosttable}, {"blockingcopy", 1, blockingcopy}, {"texmapped", 0, texmapped},     {"regthen", 0, regthen},
  {"nocopy", 1, nocopy},     {"halfwritten", 0, halfwritten}, {"manyfrees", 0, manyfrees},
  {"vmmnocopy", 0, vmmnocopy}, {"memsetgap", 0, memsetgap}, {"pitcheddown", 0, pitcheddown},
};

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "";
  for (size_t i = 0; i < sizeof k_modes / sizeof k_modes[0]; i++) {
    const struct mode *m = &k_modes[i];
    if (strcmp(name, m->name)) continue;
    CUdevice dev;
    setup(&dev);
    CUdeviceptr x = m->uses_x ? device_x() : 0;
    m->run(dev, x);
    if (m->uses_x) CK(cuMemFree_v2(x));
    return 0;
  }
  fprintf(stderr, "usage: hostmem_app zerocopy|managed|concurrent|streams|async|regasync|regloop|regthen|h2dsrc|table|hosttable|blockingcopy|texmapped|escape|nocopy|halfwritten|manyfrees|vmmnocopy|memsetgap|pitcheddown\n");
  return 2;
}
