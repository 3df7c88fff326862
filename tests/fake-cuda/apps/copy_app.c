/*
 * copy_app - large and asynchronous copies, for capture's overhead benchmark
 * (scripts/bench-capture-cpu.sh) and the async-copy tests. Linked with -lcuda.
 *
 *   copy_app h2d TOTAL_MIB CHUNK_MIB   blocking H2D copies of distinct contents, CHUNK_MIB each
 *   copy_app overlap ITER MIB [any]    an event starting the timed loop (asyncAPI's), then per
 *                                      iteration: async H2D and D2H of MIB, an event, then a
 *                                      host loop counting cuEventQuery NOT_READY answers until
 *                                      the event completes; checks the bytes came back (`any`:
 *                                      the H2D copy through cuMemcpyAsync)
 *   copy_app pending COUNT KIB [HOW]   COUNT async downloads of KIB each, distinct bytes, into
 *                                      page-locked memory, all queued before one stream
 *                                      synchronisation (simpleStreams queues 40 of 16 MiB);
 *                                      checks the bytes came back; the device memory from
 *                                      cuMemAlloc, or HOW `pitch` (cuMemAllocPitch) or `vmm`
 *                                      (reserved, created, mapped: PyTorch's expandable segments;
 *                                      two mappings, a download across them, no cuMemAlloc at all;
 *                                      `vmm-elsewhere`: access for device 1 only,
 *                                      FAKE_CUDA_DEVICES=2);
 *                                      then one more cuMemAlloc of KIB (tf32TensorCoreGemm's
 *                                      later matrices) and an event starting the downloads' region;
 *                                      HOW `capture`: cuMemAlloc, and first an event recorded in a
 *                                      stream capture (PyTorch's graphs), the graph then destroyed
 *   copy_app step ITER                 ITER rounds of a training step's synchronisation path: an
 *                                      async upload of 8 fresh bytes from pageable memory, a
 *                                      memset, an async download of 8 bytes into pageable memory
 *                                      and a stream synchronisation (PyTorch's `.item()`)
 *   copy_app reupload ITER              ITER blocking uploads of one 1 MiB page-locked buffer,
 *                                      each downloaded back into pageable memory: the host
 *                                      changes a byte between a sample capture takes of the
 *                                      buffer's pieces (i % 3 == 1), a byte inside one
 *                                      (i % 3 == 2), or nothing (i % 3 == 0)
 *   copy_app reuse                     two async D2H copies of different bytes into one pinned
 *                                      buffer, one synchronisation, then the buffer's checksum
 *   copy_app streamgone                an async D2H copy into page-locked memory on a stream of
 *                                      its own, that stream destroyed at once, then another
 *                                      page-locked buffer freed (a host-memory call: pending
 *                                      results are claimed) and the device synchronised
 *   copy_app callback                  an async D2H copy into page-locked memory, then a stream
 *                                      callback (cuStreamAddCallback) overwriting that memory,
 *                                      then a stream synchronisation: the copy's result is what
 *                                      the copy wrote, not what the callback left
 *   copy_app load MIB KIB              blocking uploads of MIB of distinct contents (32 MiB at a
 *                                      time), then a library load of a KIB fatbin (as the tensor-core
 *                                      GEMM samples load their module lazily after uploading their
 *                                      inputs); prints how long the load took (`load_us`)
 *   copy_app cubin WRONG               a library whose fatbin holds the kernel's text (a PTX entry)
 *                                      and an ELF entry declaring axpy's parameter layout in
 *                                      `.nv.info.axpy` (WRONG 1: its last parameter declared 8
 *                                      bytes, not 4); axpy launched 3 times, y printed as a sum
 *   copy_app killsync                  async H2D copies of three fresh 48 MiB buffers and a D2H,
 *                                      cuStreamSynchronize, then SIGKILL itself (what a sync must
 *                                      have made durable)
 *   copy_app waiting                   two threads, a stream each: the first copies 8 MiB on the
 *                                      device and waits for its stream; once that wait returned, the second
 *                                      sets its buffer (cuMemsetD32Async), waits and copies it
 *                                      back (run it with FAKE_CUDA_ASYNC_GBPS: the first wait
 *                                      takes the copy's time)
 *
 * Prints one result line; exit 0 on success.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
/* VMM, the allocation properties and access descriptor passed as the driver lays them out
 * (fake_cuda_abi.h: 32 and 12 bytes) */
CUresult cuMemAddressReserve(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
CUresult cuMemCreate(unsigned long long *, size_t, const void *, unsigned long long);
CUresult cuMemMap(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long);
CUresult cuMemSetAccess(CUdeviceptr, size_t, const void *, size_t);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuEventSynchronize(CUevent);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamAddCallback(CUstream, void (*)(CUstream, CUresult, void *), void *, unsigned);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuMemFreeHost(void *);
CUresult cuMemcpy(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuCtxSynchronize(void);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
CUresult cuGraphDestroy(void *);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuLibraryLoadData(void **, const void *, void *, void *, unsigned, void *, void *, unsigned);
CUresult cuLibraryGetKernel(void **, void *, const char *);
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);

#define CHECK_PROG "copy_app"
#include "check.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 8) {
    unsigned long long v = (i * 0x9e3779b97f4a7c15ull) ^ seed;
    memcpy(p + i, &v, n - i < 8 ? n - i : 8);
  }
}

/* The `waiting` mode's threads. */
/* `sum` folded with the n bytes at p (a checksum a result line prints). */
static unsigned long long fold(unsigned long long sum, const unsigned char *p, size_t n) {
  for (size_t k = 0; k < n; k++) sum = sum * 31 + p[k];
  return sum;
}

static CUcontext g_ctx;
static atomic_int g_waited;
static unsigned g_back_sum;

/* The `callback` mode's stream callback: program code overwriting the copy's destination. */
static void overwrite_cb(CUstream s, CUresult status, void *p) {
  (void)s;
  (void)status;
  memset(p, 0xff, (size_t)8 << 20);
}

static void *waiting_first(void *arg) {
  (void)arg;
  size_t n = (size_t)8 << 20;
  CUstream s;
  CUdeviceptr d;
  CK(cuCtxSetCurrent(g_ctx));
  CK(cuStreamCreate(&s, 1));
  CK(cuMemAlloc_v2(&d, 2 * n));
  CK(cuMemcpyAsync(d + n, d, n, s));
  CK(cuStreamSynchronize(s));
  atomic_store(&g_waited, 1);
  return NULL;
}

static void *waiting_second(void *arg) {
  (void)arg;
  size_t n = 1 << 16;
  CUstream s;
  CUdeviceptr d;
  unsigned *back;
  CK(cuCtxSetCurrent(g_ctx));
  CK(cuStreamCreate(&s, 1));
  CK(cuMemAlloc_v2(&d, n * 4));
  CK(cuMemAllocHost_v2((void **)&back, n * 4));
  while (!atomic_load(&g_waited)) usleep(1000);
  CK(cuMemsetD32Async(d, 0x5eed, n, s));
  CK(cuStreamSynchronize(s));
  CK(cuMemcpyDtoHAsync_v2(back, d, n * 4, s));
  CK(cuStreamSynchronize(s));
  for (size_t i = 0; i < n; i++) g_back_sum += back[i];
  return NULL;
}

/* Load, as a library through cudart's fatbin wrapper, the fatbin whose `payload` bytes follow
 * the 16 bytes at `fb` that this writes: {magic, version 1, header size 16, payload size}.
 * `*seconds`: how long the load call took. */
static void *load_fatbin(unsigned char *fb, unsigned long long payload, double *seconds) {
  unsigned magic = 0xBA55ED50u;
  unsigned short version = 1, header = 16;
  memcpy(fb, &magic, 4), memcpy(fb + 4, &version, 2), memcpy(fb + 6, &header, 2), memcpy(fb + 8, &payload, 8);
  struct { int magic, version; const void *data; void *unused; } wrapper = {0x466243B1, 1, fb, NULL};
  void *lib;
  double t0 = now_s();
  CK(cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
  *seconds = now_s() - t0;
  return lib;
}

/* Append `n` bytes to the buffer `b` of `*len` bytes (capacity known large enough). */
static void put(unsigned char *b, size_t *len, const void *p, size_t n) {
  memcpy(b + *len, p, n);
  *len += n;
}

/* A minimal ELF64 cubin holding one section `.nv.info.axpy` whose attribute records declare
 * axpy(float a, float *x, float *y, int n): offsets 0, 8, 16, 24, sizes 4, 8, 8 and `last`.
 * Returns its length. */
static size_t axpy_cubin(unsigned char *b, unsigned last) {
  unsigned char info[128];
  size_t il = 0;
  const unsigned sizes[4] = {4, 8, 8, last}, offs[4] = {0, 8, 16, 24};
  unsigned char hval[4] = {0x03, 0x19, 32, 0}; /* EIATTR_CBANK_PARAM_SIZE, an HVAL record */
  put(info, &il, hval, 4);
  for (int i = 3; i >= 0; i--) { /* EIATTR_KPARAM_INFO (SVAL, 12 bytes), last parameter first */
    unsigned char rec[4] = {0x04, 0x17, 12, 0};
    uint32_t index = 0, flags = (sizes[i] << 18) | 0x1f000;
    uint16_t ordinal = (uint16_t)i, off = (uint16_t)offs[i];
    put(info, &il, rec, 4);
    put(info, &il, &index, 4);
    put(info, &il, &ordinal, 2);
    put(info, &il, &off, 2);
    put(info, &il, &flags, 4);
  }
  static const char names[] = "\0.nv.info.axpy\0.shstrtab\0";
  size_t len = 64;
  memset(b, 0, 64);
  memcpy(b, "\x7f" "ELF", 4);
  b[4] = 2, b[5] = 1;
  uint64_t info_at = len;
  put(b, &len, info, il);
  uint64_t names_at = len;
  put(b, &len, names, sizeof names);
  while (len % 8) b[len++] = 0;
  uint64_t shoff = len;
  uint16_t shentsize = 64, shnum = 3, shstrndx = 2;
  memcpy(b + 0x28, &shoff, 8);
  memcpy(b + 0x3a, &shentsize, 2);
  memcpy(b + 0x3c, &shnum, 2);
  memcpy(b + 0x3e, &shstrndx, 2);
  unsigned char sh[64] = {0};
  put(b, &len, sh, 64); /* section 0 */
  uint32_t name = 1, type = 0x70000000; /* SHT_LOPROC, as .nv.info sections are */
  uint64_t size = il;
  memcpy(sh, &name, 4), memcpy(sh + 4, &type, 4), memcpy(sh + 0x18, &info_at, 8), memcpy(sh + 0x20, &size, 8);
  put(b, &len, sh, 64);
  name = 15, type = 3, size = sizeof names; /* .shstrtab, SHT_STRTAB */
  memcpy(sh, &name, 4), memcpy(sh + 4, &type, 4), memcpy(sh + 0x18, &names_at, 8), memcpy(sh + 0x20, &size, 8);
  put(b, &len, sh, 64);
  return len;
}

/* A fatbin entry header {u16 kind, u16 0x0101, u32 64, u64 payload size, 48 more bytes} and
 * its payload. */
static void fat_entry(unsigned char *b, size_t *len, uint16_t kind, const void *payload, uint64_t n) {
  unsigned char h[64] = {0};
  uint16_t version = 0x0101;
  uint32_t hs = 64;
  memcpy(h, &kind, 2), memcpy(h + 2, &version, 2), memcpy(h + 4, &hs, 4), memcpy(h + 8, &n, 8);
  put(b, len, h, 64);
  put(b, len, payload, n);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int dev;
  CUcontext ctx;
  CUstream s;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuCtxCreate_v2(&ctx, 0, dev));
  CK(cuStreamCreate(&s, 0));
  if (!strcmp(mode, "h2d") && argc == 4) {
    size_t total = (size_t)atol(argv[2]) << 20, chunk = (size_t)atol(argv[3]) << 20;
    if (!chunk || total < chunk) return 2;
    unsigned char *h = malloc(chunk);
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, chunk));
    fill(h, chunk, 1);
    double t0 = now_s();
    for (size_t done = 0, i = 0; done < total; done += chunk, i++) {
      for (size_t p = 0; p < chunk; p += 4096) memcpy(h + p, &i, sizeof i); /* distinct chunks */
      CK(cuMemcpyHtoD_v2(d, h, chunk));
    }
    CK(cuCtxSynchronize());
    double t = now_s() - t0;
    printf("h2d bytes=%zu chunk=%zu seconds=%.3f GB/s=%.2f\n", total, chunk, t, total / t / 1e9);
    return 0;
  }
  if (!strcmp(mode, "load") && argc == 4) {
    size_t total = (size_t)atol(argv[2]) << 20, kib = (size_t)atol(argv[3]), chunk = (size_t)32 << 20;
    if (kib < 1) return 2;
    unsigned char *h = malloc(chunk);
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, chunk));
    for (size_t done = 0; done < total; done += chunk) {
      fill(h, chunk, (unsigned)(done >> 20) ^ (unsigned)getpid());
      CK(cuMemcpyHtoD_v2(d, h, chunk));
    }
    /* a fatbin {magic, version, header size, payload size} of a text image: one kernel, then
     * comment lines of this run's own bytes, so that no earlier capture stored it */
    size_t plen = kib << 10, fat = (plen + 7) & ~(size_t)7;
    unsigned char *fb = calloc(1, 16 + fat);
    char *text = (char *)fb + 16;
    int n = snprintf(text, plen, ".entry idle(.param .u64 a)\n");
    for (size_t k = (size_t)n; k + 1 < plen; k += 64) {
      size_t m = plen - 1 - k < 64 ? plen - 1 - k : 64;
      snprintf(text + k, m, "// %d %zu ", (int)getpid(), k);
      text[k + m - 1] = '\n';
    }
    text[plen - 1] = 0;
    double t;
    void *lib = load_fatbin(fb, fat, &t), *k;
    CK(cuLibraryGetKernel(&k, lib, "idle"));
    printf("load uploaded_mib=%zu image_kib=%zu load_us=%.1f\n", total >> 20, kib, t * 1e6);
    return 0;
  }
  if (!strcmp(mode, "cubin") && argc == 3) {
    static unsigned char fb[8192], cubin[2048];
    static const char text[] = ".entry axpy\n";
    size_t clen = axpy_cubin(cubin, atoi(argv[2]) ? 8 : 4), len = 16;
    fat_entry(fb, &len, 1, text, sizeof text);
    fat_entry(fb, &len, 2, cubin, clen);
    double t;
    void *lib = load_fatbin(fb, len - 16, &t), *k;
    CK(cuLibraryGetKernel(&k, lib, "axpy"));
    enum { NX = 1024 };
    static float hx[NX], hy[NX];
    for (int i = 0; i < NX; i++) hx[i] = (float)(i % 5), hy[i] = 1.0f;
    CUdeviceptr x, y;
    CK(cuMemAlloc_v2(&x, sizeof hx));
    CK(cuMemAlloc_v2(&y, sizeof hy));
    CK(cuMemcpyHtoD_v2(x, hx, sizeof hx));
    CK(cuMemcpyHtoD_v2(y, hy, sizeof hy));
    float a = 2.0f;
    int n = NX;
    void *params[] = {&a, &x, &y, &n};
    for (int i = 0; i < 3; i++) CK(cuLaunchKernel(k, NX / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
    CK(cuMemcpyDtoH_v2(hy, y, sizeof hy));
    double sum = 0;
    for (int i = 0; i < NX; i++) sum += hy[i];
    printf("cubin sum=%.1f\n", sum);
    return 0;
  }
  if (!strcmp(mode, "overlap") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "any")))) {
    int any = argc == 5;
    long iters = atol(argv[2]);
    size_t n = (size_t)atol(argv[3]) << 20;
    unsigned char *h, *back;
    CUdeviceptr d;
    CUevent e;
    CK(cuMemAllocHost_v2((void **)&h, n));
    CK(cuMemAllocHost_v2((void **)&back, n));
    CK(cuMemAlloc_v2(&d, n));
    CK(cuEventCreate(&e, 0));
    CK(cuEventRecord(e, s)); /* the start of the timed loop */
    unsigned long long spins = 0;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
      fill(h, n, (unsigned)i);
      if (any)
        CK(cuMemcpyAsync(d, (CUdeviceptr)(unsigned long)h, n, s));
      else
        CK(cuMemcpyHtoDAsync_v2(d, h, n, s));
      CK(cuMemcpyDtoHAsync_v2(back, d, n, s));
      CK(cuEventRecord(e, s));
      CUresult q;
      while ((q = cuEventQuery(e)) == 600) spins++; /* CUDA_ERROR_NOT_READY */
      CK(q);
      if (memcmp(h, back, n)) {
        fprintf(stderr, "copy_app: iteration %ld: the bytes did not come back\n", i);
        return 1;
      }
    }
    CK(cuStreamSynchronize(s));
    printf("overlap iterations=%ld bytes=%zu host_loop=%llu seconds=%.3f\n", iters, n, spins,
           now_s() - t0);
    return 0;
  }
  int same = argc == 5 && !strcmp(argv[4], "same");
  if (!strcmp(mode, "pending") && (argc == 4 || argc == 5)) {
    long count = atol(argv[2]);
    size_t n = (size_t)atol(argv[3]) << 10;
    const char *how = argc == 5 ? argv[4] : "alloc";
    if (count < 1 || !n) return 2;
    unsigned char *src = malloc(n * count), *h;
    CUdeviceptr d;
    fill(src, n * count, 7);
    CK(cuMemAllocHost_v2((void **)&h, n * count));
    if (!strcmp(how, "pitch")) {
      size_t pitch;
      CK(cuMemAllocPitch_v2(&d, &pitch, n * count, 1, 4));
    } else if (!strcmp(how, "vmm") || !strcmp(how, "vmm-elsewhere")) {
      /* two mappings of their own allocations, the bytes across the boundary between them and
       * one download straddling it; `vmm-elsewhere`: only device 1 granted access (capture's
       * kernel, on device 0, may not read it; the fake's copies ignore that) */
      const size_t gran = (size_t)2 << 20, half = (n * count + gran - 1) / gran * gran;
      int prop[8] = {1, 0, 1, 0};                               /* pinned, on device 0 */
      int access[3] = {1, !strcmp(how, "vmm-elsewhere"), 3};   /* that device, read-write */
      unsigned long long handles[2];
      CUdeviceptr base;
      CK(cuMemAddressReserve(&base, 2 * half, 0, 0, 0));
      for (int k = 0; k < 2; k++) {
        CK(cuMemCreate(&handles[k], half, prop, 0));
        CK(cuMemMap(base + k * half, half, 0, handles[k], 0));
      }
      CK(cuMemSetAccess(base, 2 * half, access, 1));
      d = base + half - n * count / 2 - n / 2;
    } else if (!strcmp(how, "alloc") || !strcmp(how, "capture")) {
      CK(cuMemAlloc_v2(&d, n * count));
    } else {
      return 2;
    }
    CUdeviceptr later;
    CUevent start;
    if (strncmp(how, "vmm", 3) != 0) CK(cuMemAlloc_v2(&later, n)); /* (VMM programs map only) */
    CK(cuEventCreate(&start, 0));
    if (!strcmp(how, "capture")) {
      void *g;
      CK(cuStreamBeginCapture_v2(s, 0)); /* CU_STREAM_CAPTURE_MODE_GLOBAL */
      CK(cuEventRecord(start, s));
      CK(cuStreamEndCapture(s, &g));
      CK(cuGraphDestroy(g));
    }
    CK(cuMemcpyHtoD_v2(d, src, n * count));
    CK(cuEventRecord(start, s));
    for (long i = 0; i < count; i++) CK(cuMemcpyDtoHAsync_v2(h + i * n, d + i * n, n, s));
    CK(cuStreamSynchronize(s));
    int same_bytes = !memcmp(h, src, n * count);
    printf("pending copies=%ld bytes=%zu same=%d\n", count, n, same_bytes);
    return same_bytes ? 0 : 1;
  }
  if (!strcmp(mode, "multicopy") && (argc == 4 || same)) {
    /* simpleMultiCopy's serialized loop: 4 input and 4 output buffers of MIB each, page-locked
     * and mapped into the device (which capture's tracker of host-visible memory follows);
     * ITER rounds of: wait for the last round's event, a memset standing for the kernel, an
     * async upload from input 0, an async download into output 0, an event; the host then
     * changes a byte of input 3, which no device work reaches. With `same`, every round's
     * result is the same bytes (simpleMultiCopy's kernel, given the same input each round). */
    long iters = atol(argv[2]);
    size_t n = (size_t)atol(argv[3]) << 20;
    unsigned char *in[4], *out[4];
    CUdeviceptr d_in, d_out;
    CUevent e;
    for (int k = 0; k < 4; k++) {
      CK(cuMemHostAlloc((void **)&in[k], n, 2 /* DEVICEMAP */));
      CK(cuMemHostAlloc((void **)&out[k], n, 2 /* DEVICEMAP */));
      fill(in[k], n, (unsigned)k);
    }
    CK(cuMemAlloc_v2(&d_in, n));
    CK(cuMemAlloc_v2(&d_out, n));
    CK(cuEventCreate(&e, 0));
    CK(cuEventRecord(e, s));
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
      CK(cuEventSynchronize(e));
      CK(cuMemsetD32Async(d_out, 0x100 + (same ? 0u : (unsigned)i), n / 4, s));
      CK(cuMemcpyHtoDAsync_v2(d_in, in[0], n, s));
      CK(cuMemcpyDtoHAsync_v2(out[0], d_out, n, s));
      CK(cuEventRecord(e, s));
      in[3][(size_t)i % n] ^= 1; /* the host writes a buffer no device work reaches */
    }
    CK(cuEventSynchronize(e));
    double t = now_s() - t0;
    printf("multicopy iterations=%ld bytes=%zu last=%x seconds=%.3f\n", iters, n,
           ((unsigned *)out[0])[0], t);
    return 0;
  }
  int unified = argc == 5 && !strcmp(argv[4], "unified");
  if (!strcmp(mode, "d2h") && (argc == 4 || unified || (argc == 5 && !strcmp(argv[4], "registered")))) {
    /* Blocking D2H copies of a fresh result each (simpleStreams' non-streamed loop): ITER
     * rounds of a memset, then the MIB bytes copied back into pageable memory, or with
     * `registered` into memory registered with the driver and mapped into the device, as
     * simpleStreams' `cudaHostRegister(..., cudaHostRegisterMapped)` does; with `unified`
     * through cuMemcpy (cudaMemcpyDefault's path). */
    long iters = atol(argv[2]);
    size_t n = (size_t)atol(argv[3]) << 20;
    unsigned char *back = malloc(n);
    CUdeviceptr d;
    if (!back || !n) return 2;
    if (argc == 5 && !unified) CK(cuMemHostRegister_v2(back, n, 2 /* DEVICEMAP */));
    CK(cuMemAlloc_v2(&d, n));
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
      CK(cuMemsetD32Async(d, 0x1000 + (unsigned)i, n / 4, s));
      if (unified)
        CK(cuMemcpy((CUdeviceptr)(uintptr_t)back, d, n));
      else
        CK(cuMemcpyDtoH_v2(back, d, n));
    }
    double t = now_s() - t0;
    printf("d2h iterations=%ld bytes=%zu seconds=%.3f\n", iters, n, t);
    return 0;
  }
  if (!strcmp(mode, "step") && argc == 3) {
    long iters = atol(argv[2]);
    unsigned long long up, down, sum = 0;
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, 64));
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
      up = 0x9e3779b97f4a7c15ull * (unsigned long long)(i + 1);
      CK(cuMemcpyHtoDAsync_v2(d, &up, sizeof up, s));
      CK(cuMemsetD32Async(d + 8, (unsigned)i, 2, s));
      CK(cuMemcpyDtoHAsync_v2(&down, d, sizeof down, s));
      CK(cuStreamSynchronize(s));
      sum += down;
    }
    double t = now_s() - t0;
    printf("step iterations=%ld sum=%llu us_per_round=%.3f\n", iters, sum, t * 1e6 / iters);
    return 0;
  }
  if (!strcmp(mode, "many")) {
    /* 300 async D2H copies into one page-locked buffer, then one synchronisation. */
    size_t n = 4096;
    unsigned *back;
    CUdeviceptr d;
    CK(cuMemAllocHost_v2((void **)&back, n * 4));
    CK(cuMemAlloc_v2(&d, n * 4));
    for (unsigned i = 0; i < 300; i++) {
      CK(cuMemsetD32Async(d, i, n, s));
      CK(cuMemcpyDtoHAsync_v2(back, d, n * 4, s));
    }
    CK(cuStreamSynchronize(s));
    printf("many last=%u\n", back[0]);
    return 0;
  }
  if (!strcmp(mode, "destroy")) {
    /* An async D2H copy into page-locked memory, then the context destroyed without any
     * synchronisation (the copy is still running at 1 GB/s). */
    size_t n = (size_t)8 << 20;
    unsigned *back;
    CUdeviceptr d;
    CK(cuMemAllocHost_v2((void **)&back, n * 4));
    CK(cuMemAlloc_v2(&d, n * 4));
    CK(cuMemsetD32Async(d, 0xd0d0, n, s));
    CK(cuMemcpyDtoHAsync_v2(back, d, n * 4, s));
    CK(cuCtxDestroy_v2(ctx));
    printf("destroy done\n");
    return 0;
  }
  if (!strcmp(mode, "pageable")) {
    /* Async D2H copies into pageable memory complete before the call returns (CUDA's rules),
     * so the program may reuse the buffer at once, as it would a stack variable. */
    size_t n = (size_t)1 << 16;
    unsigned char *h = malloc(n), *back = malloc(n);
    CUdeviceptr d;
    if (!h || !back) return 1;
    CK(cuMemAlloc_v2(&d, n));
    fill(h, n, 5);
    CK(cuMemcpyHtoD_v2(d, h, n));
    unsigned long long sum = 0;
    for (int i = 0; i < 4; i++) {
      CK(cuMemcpyDtoHAsync_v2(back, d, n, s));
      for (size_t k = 0; k < n; k++) sum += back[k];
      memset(back, 0xEE, n);
    }
    CK(cuStreamSynchronize(s));
    printf("pageable sum=%llu\n", sum);
    return 0;
  }
  if (!strcmp(mode, "reupload") && argc == 3) {
    long iters = atol(argv[2]);
    size_t n = (size_t)1 << 20;
    unsigned char *h, *back = malloc(n);
    CUdeviceptr d;
    if (!back) return 1;
    CK(cuMemAllocHost_v2((void **)&h, n));
    CK(cuMemAlloc_v2(&d, n));
    fill(h, n, 21);
    unsigned long long sum = 0;
    for (long i = 0; i < iters; i++) {
      if (i % 3 == 1) h[(size_t)(32 << 10) + (size_t)i] ^= 0x5a; /* between sampled pieces */
      if (i % 3 == 2) h[(size_t)i] ^= 0x5a;                      /* in the first piece */
      CK(cuMemcpyHtoD_v2(d, h, n));
      CK(cuMemcpyDtoH_v2(back, d, n));
      sum = fold(sum, back, n);
    }
    printf("reupload iterations=%ld sum=%llu\n", iters, sum);
    return 0;
  }
  if (!strcmp(mode, "reuse")) {
    size_t n = (size_t)32 << 20; /* 32 ms a copy at 1 GB/s: the second is issued long before */
    unsigned char *h, *back;
    CUdeviceptr d;
    CK(cuMemAllocHost_v2((void **)&h, 2 * n));
    CK(cuMemAllocHost_v2((void **)&back, n));
    CK(cuMemAlloc_v2(&d, 2 * n));
    fill(h, n, 11);
    fill(h + n, n, 12);
    CK(cuMemcpyHtoD_v2(d, h, 2 * n));
    CK(cuMemcpyDtoHAsync_v2(back, d, n, s));
    CK(cuMemcpyDtoHAsync_v2(back, d + n, n, s)); /* overwrites the first before any sync */
    CK(cuStreamSynchronize(s));
    printf("reuse sum=%llu same=%d\n", fold(0, back, n), !memcmp(back, h + n, n));
    return 0;
  }
  if (!strcmp(mode, "streamgone")) {
    size_t n = (size_t)8 << 20; /* 8 ms a copy at 1 GB/s: still running when its stream goes */
    unsigned char *back, *other;
    CUdeviceptr d;
    CUstream own;
    CK(cuMemAllocHost_v2((void **)&back, n));
    CK(cuMemAllocHost_v2((void **)&other, 4096));
    CK(cuMemAlloc_v2(&d, n));
    CK(cuStreamCreate(&own, 0));
    CK(cuMemsetD32Async(d, 0x5eed, n / 4, own));
    CK(cuMemcpyDtoHAsync_v2(back, d, n, own));
    CK(cuStreamDestroy_v2(own));
    CK(cuMemFreeHost(other));
    CK(cuCtxSynchronize());
    printf("streamgone sum=%llu\n", fold(0, back, n));
    return 0;
  }
  if (!strcmp(mode, "callback")) {
    size_t n = (size_t)8 << 20; /* 8 ms a copy at 1 GB/s: still running when the callback is added */
    unsigned char *back;
    CUdeviceptr d;
    CUstream s;
    CK(cuMemAllocHost_v2((void **)&back, n));
    CK(cuMemAlloc_v2(&d, n));
    CK(cuStreamCreate(&s, 0));
    CK(cuMemsetD32Async(d, 0x5eed, n / 4, s));
    CK(cuMemcpyDtoHAsync_v2(back, d, n, s));
    CK(cuStreamAddCallback(s, overwrite_cb, back, 0));
    CK(cuStreamSynchronize(s));
    printf("callback sum=%llu\n", fold(0, back, n));
    return 0;
  }
  if (!strcmp(mode, "killsync")) {
    size_t n = (size_t)48 << 20, m = 1 << 20;
    CUdeviceptr d;
    unsigned char *back;
    CK(cuMemAlloc_v2(&d, 3 * n));
    CK(cuMemAllocHost_v2((void **)&back, m));
    for (unsigned i = 0; i < 3; i++) {
      unsigned char *h;
      CK(cuMemAllocHost_v2((void **)&h, n));
      fill(h, n, 77 + i);
      CK(cuMemcpyHtoDAsync_v2(d + i * n, h, n, s));
    }
    CK(cuMemcpyDtoHAsync_v2(back, d + n, m, s));
    CK(cuStreamSynchronize(s));
    printf("killsync synced\n");
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 1;
  }
  if (!strcmp(mode, "waiting")) {
    pthread_t a, b;
    g_ctx = ctx;
    pthread_create(&a, NULL, waiting_first, NULL);
    pthread_create(&b, NULL, waiting_second, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("waiting sum=%u\n", g_back_sum);
    return 0;
  }
  fprintf(stderr, "usage: copy_app h2d TOTAL_MIB CHUNK_MIB | load MIB KIB | overlap ITER MIB [any] | pending COUNT KIB | d2h ITER MIB [registered|unified] | multicopy ITER MIB [same] | pageable | reuse | killsync | waiting | destroy | streamgone | callback | many\n");
  return 2;
}
