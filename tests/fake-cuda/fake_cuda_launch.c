/*
 * fake_cuda_launch.c - kernel execution: the CPU implementations of the built-in kernels,
 * launch dimensions and arguments (`kernelParams` or `extra`), cuLaunchKernel/cuLaunchKernelEx
 * (captured into a graph on a capturing stream).
 */
#include "fake_cuda_internal.h"
#include "capture_kernels_ref.h"

/* ------------------------------------------------------------------------ */
/* Kernel execution                                                         */
/* ------------------------------------------------------------------------ */

static unsigned long long count_of(long long n, unsigned long long threads) {
  if (n <= 0) return 0;
  return (unsigned long long)n < threads ? (unsigned long long)n : threads;
}
#define RD(T, off) ({ T v__; memcpy(&v__, pb + (off), sizeof v__); v__; })

/* A byte new at every `noisy` launch: from a counter kept in the file $FAKE_CUDA_NOISE_FILE
   when set (so tests know every process gets a different one), else from the clock and pid. */

/* This process's noise base: the counter of $FAKE_CUDA_NOISE_FILE (taken, and the next value
   left for the next process), else from the clock and pid. */
static unsigned long long noise_base(void) {
  static unsigned long long base;
  static int seeded;
  if (!seeded) {
    seeded = 1;
    const char *path = getenv("FAKE_CUDA_NOISE_FILE");
    FILE *f = path ? fopen(path, "r+") : NULL;
    if (f) {
      if (fscanf(f, "%llu", &base) != 1) base = 0;
      rewind(f);
      fprintf(f, "%llu\n", base + 1);
      fclose(f);
    } else {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      base = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 8);
    }
  }
  return base;
}

/* With $FAKE_CUDA_NOISE_MASKS (a comma-separated list of numbers, indexed by the process's
   noise base modulo its length): which words of the `noisy` kernel's second half take the
   launch's noise in this process (bit j: word j, modulo 64); the others are deterministic.
   All of them without it. */
static unsigned long long noise_mask(void) {
  const char *list = getenv("FAKE_CUDA_NOISE_MASKS");
  if (!list) return ~0ull;
  unsigned long long masks[64];
  int n = 0;
  for (const char *p = list; *p && n < 64;) {
    char *end;
    masks[n++] = strtoull(p, &end, 0);
    p = *end == ',' ? end + 1 : end + strlen(end);
  }
  return n ? masks[noise_base() % (unsigned long long)n] : ~0ull;
}

static uint8_t noise_byte(void) {
  static unsigned launches;
  unsigned long long base = noise_base();
  /* Every $FAKE_CUDA_NOISE_STABLE_EVERY-th launch, the byte $FAKE_CUDA_NOISE_CONST instead: the
     same in every process given the same value (a result that repeats one outcome of the
     program's nondeterminism in every replay). */
  const char *every = getenv("FAKE_CUDA_NOISE_STABLE_EVERY");
  if (every && atoi(every) > 0 && launches % (unsigned)atoi(every) == 0) {
    const char *k = getenv("FAKE_CUDA_NOISE_CONST");
    launches++;
    return (uint8_t)(k ? atoi(k) : 0);
  }
  return (uint8_t)(base * 37 + launches++); /* 37 is odd: processes 1..255 apart differ */
}

CUresult run_kernel(struct fc_func *f, const unsigned char *pb, unsigned long long threads) {
  int idle = g_launches_since_sync++ == 0; /* launched right after a synchronisation */
  struct fc_ctx *cx = NULL;
  int dev = cur_ctx(&cx) ? -1 : cx->dev; /* the device it runs on (-1: not known, unchecked) */
  if (g_trace) fprintf(stderr, "[fake-cuda] kernel %s on device %d\n", f->name, dev);
  switch (f->kid) {
  case K_AXPY:
  case K_AXMY: { /* a*x + y, or a*x - y (exactly: y times -1 is exact, and nothing is fused) */
    float a = RD(float, 0), sign = f->kid == K_AXPY ? 1.0f : -1.0f;
    uint64_t x = RD(uint64_t, 8), y = RD(uint64_t, 16);
    unsigned long long n = count_of(RD(int32_t, 24), threads);
    if (!kernel_ok(x, n * 4, 1, dev) || !kernel_ok(y, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    const float *X = (const float *)(uintptr_t)x;
    float *Y = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n; i++) Y[i] = a * X[i] + sign * Y[i];
    return E_SUCCESS;
  }
  case K_NOOP:
    return E_SUCCESS;
  case K_TMA_LOAD:
  case K_TMA_LOAD_GLOBAL: {
    int by_value = f->kid == K_TMA_LOAD;
    uint64_t m = by_value ? 0 : RD(uint64_t, 0), o = RD(uint64_t, by_value ? 128 : 8), src;
    unsigned long long n = count_of(RD(int32_t, by_value ? 136 : 16), threads);
    if (!by_value && !kernel_ok(m, 128, 1, dev)) return E_ILLEGAL_ADDRESS;
    const unsigned char *map = by_value ? pb : (const unsigned char *)(uintptr_t)m;
    if (!tensor_map_source(map, &src)) return E_LAUNCH_FAILED;
    if (!kernel_ok(src, n * 4, 1, dev) || !kernel_ok(o, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    memcpy((void *)(uintptr_t)o, (const void *)(uintptr_t)src, n * 4);
    return E_SUCCESS;
  }
  case K_AXPY_PARAMS: {
    float a = RD(float, 0);
    unsigned long long n = count_of(RD(int32_t, 4), threads);
    uint64_t x = RD(uint64_t, 8), y = RD(uint64_t, 16);
    if (!kernel_ok(x, n * 4, 1, dev) || !kernel_ok(y, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    const float *X = (const float *)(uintptr_t)x;
    float *Y = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n; i++) Y[i] = a * X[i] + Y[i];
    return E_SUCCESS;
  }
  case K_FILL_U32: {
    uint64_t p = RD(uint64_t, 0);
    uint32_t v = RD(uint32_t, 8);
    uint64_t n64 = RD(uint64_t, 16);
    unsigned long long n = n64 < threads ? n64 : threads;
    if (n > (1ull << 40) || !kernel_ok(p, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    uint32_t *P = (uint32_t *)(uintptr_t)p;
    for (unsigned long long i = 0; i < n; i++) P[i] = v;
    return E_SUCCESS;
  }
  case K_GATHER: {
    uint64_t t = RD(uint64_t, 0), o = RD(uint64_t, 8);
    unsigned long long n = count_of(RD(int32_t, 16), threads);
    if (!kernel_ok(t, n * 8, 1, dev) || !kernel_ok(o, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    const uint64_t *T = (const uint64_t *)(uintptr_t)t;
    for (unsigned long long i = 0; i < n; i++)
      if (!kernel_ok(T[i], 4, 1, dev)) return E_ILLEGAL_ADDRESS;
    float *O = (float *)(uintptr_t)o;
    for (unsigned long long i = 0; i < n; i++) O[i] = *(const float *)(uintptr_t)T[i];
    return E_SUCCESS;
  }
  case K_ADD_GLOBAL: {
    uint64_t o = RD(uint64_t, 0);
    unsigned long long n = count_of(RD(int32_t, 8), threads);
    struct fc_global *g = mod_find_global(f->mod, "g_bias");
    if (!g || g->size < 4) return E_LAUNCH_FAILED;
    if (!kernel_ok(o, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    float b;
    memcpy(&b, (const void *)g->ptr, 4);
    float *O = (float *)(uintptr_t)o;
    for (unsigned long long i = 0; i < n; i++) O[i] += b;
    return E_SUCCESS;
  }
  case K_TEX_FETCH:
  case K_SURF_WRITE: {
    struct fc_texobj *t = tex_find(RD(uint64_t, 0), f->kid == K_SURF_WRITE);
    uintptr_t base;
    size_t elem, row, pitch, count;
    if (!t || !obj_elems(t, &base, &elem, &row, &pitch, &count)) return E_ILLEGAL_ADDRESS;
    unsigned long long n = count_of(RD(int32_t, f->kid == K_TEX_FETCH ? 16 : 12), threads);
    if (n > count) n = count;
    if (f->kid == K_TEX_FETCH) {
      uint64_t o = RD(uint64_t, 8);
      if (!kernel_ok(o, n * elem, 2, dev)) return E_ILLEGAL_ADDRESS;
      for (unsigned long long i = 0; i < n; i++)
        memcpy((void *)(uintptr_t)(o + i * elem), (const void *)(base + (i / row) * pitch + (i % row) * elem), elem);
    } else {
      if (elem != 4) return E_LAUNCH_FAILED;
      uint32_t v = RD(uint32_t, 8);
      for (unsigned long long i = 0; i < n; i++) {
        uint32_t x = v + (uint32_t)i;
        memcpy((void *)(base + (i / row) * pitch + (i % row) * elem), &x, 4);
      }
    }
    return E_SUCCESS;
  }
  case K_DIGEST: {
    /* hrr_digest(src, nwords, out): per 8192-word chunk of src, hrr_archive::digest's two sums
       finished into 16 bytes at out[2 * chunk] (one block per chunk on a GPU; all at once here).
       $FAKE_CUDA_DIGEST_WRONG set: every digest off by one, as a broken kernel would be. */
    uint64_t s = RD(uint64_t, 0), nw = RD(uint64_t, 8), o = RD(uint64_t, 16);
    uint64_t chunks = (nw + 8191) / 8192;
    if (nw > (1ull << 40) || !kernel_ok(s, nw * 8, 1, dev) || !kernel_ok(o, chunks * 16, 2, dev))
      return E_ILLEGAL_ADDRESS;
    uint64_t *O = (uint64_t *)(uintptr_t)o;
    hrr_digest_ref((const uint64_t *)(uintptr_t)s, nw, O);
    if (getenv("FAKE_CUDA_DIGEST_WRONG"))
      for (uint64_t c = 0; c < chunks; c++) O[2 * c] += 1;
    return E_SUCCESS;
  }
  case K_FINGERPRINT: {
    /* hrr_fingerprint(src, nchunks, out): XXH3-128 of each whole 64 KiB chunk of src, low and
       high halves at out[2 * chunk], out[2 * chunk + 1] (one warp per chunk on a GPU).
       $FAKE_CUDA_FINGERPRINT_WRONG set: every fingerprint off by one; `rest`: all but the
       first of each launch (what capture's check of the first chunk cannot see). */
    uint64_t s = RD(uint64_t, 0), n = RD(uint64_t, 8), o = RD(uint64_t, 16);
    if (n > (1ull << 24) || !kernel_ok(s, n * 65536, 1, dev) || !kernel_ok(o, n * 16, 2, dev))
      return E_ILLEGAL_ADDRESS;
    uint64_t *O = (uint64_t *)(uintptr_t)o;
    const char *wrong = getenv("FAKE_CUDA_FINGERPRINT_WRONG");
    for (uint64_t c = 0; c < n; c++) {
      xxh3_128_64k((const uint8_t *)(uintptr_t)(s + c * 65536), &O[2 * c], &O[2 * c + 1]);
      if (wrong && (c > 0 || strcmp(wrong, "rest"))) O[2 * c] += 1;
    }
    return E_SUCCESS;
  }
  case K_NOISY: {
    /* noisy(unsigned *out, unsigned long long n): the first half of `out` deterministic, the
       second half (rounded up) a value new at every launch, like a kernel writing a clock or
       an atomic ticket: the program's own nondeterminism, for replay to tell apart. With
       $FAKE_CUDA_NOISE_ORDER set, the whole output is 0..n-1 in a new order instead. With
       $FAKE_CUDA_NOISE_IDLE set, the second half says whether the device was idle at the
       launch (right after a synchronisation; `always`: every launch, as in a recording whose
       launches were each slowed until the device was idle): a result that depends on when
       the launch came, the same in every replay issued alike. $FAKE_CUDA_NOISE_MASKS: only
       some words of the second half are noise (noise_mask). */
    uint64_t p = RD(uint64_t, 0), n64 = RD(uint64_t, 8);
    unsigned long long n = n64 < threads ? n64 : threads;
    if (n > (1ull << 40) || !kernel_ok(p, n * 4, 2, dev)) return E_ILLEGAL_ADDRESS;
    uint32_t *P = (uint32_t *)(uintptr_t)p;
    if (getenv("FAKE_CUDA_NOISE_ORDER")) {
      /* The values 0..n-1 in an order new at every launch (a rotation), like slots taken
         with an atomic counter: the same values, another order. */
      unsigned long long r = noise_byte();
      for (unsigned long long i = 0; i < n; i++) P[i] = (uint32_t)((i + r) % n);
      return E_SUCCESS;
    }
    const char *by_idle = getenv("FAKE_CUDA_NOISE_IDLE");
    uint32_t noise = by_idle ? ((idle || !strcmp(by_idle, "always")) ? 0xa1u : 0x5bu) * 0x01010101u
                             : noise_byte() * 0x01010101u;
    unsigned long long mask = noise_mask();
    for (unsigned long long i = 0; i < n; i++) {
      int noisy = i >= n / 2 && ((mask >> ((i - n / 2) % 64)) & 1);
      P[i] = noisy ? noise : (uint32_t)i * 2654435761u;
    }
    return E_SUCCESS;
  }
  case K_SPIN:
    g_hung = 1;
    return E_SUCCESS;
  case K_FAULT:
    g_sticky = E_ILLEGAL_ADDRESS;
    return E_SUCCESS;
  default:
    return E_SUCCESS; /* declared but unknown kernel: runs and does nothing */
  }
}

#define LP_END ((void *)0)
#define LP_BUFFER_POINTER ((void *)1)
#define LP_BUFFER_SIZE ((void *)2)

/* The launch configuration a kernel accepts. */
CUresult launch_dims(const struct fc_func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem) {
  if (!gx || !gy || !gz || !bx || !by || !bz) return E_INVALID_VALUE;
  if (gx > 2147483647u || gy > 65535 || gz > 65535) return E_INVALID_VALUE;
  if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024) return E_INVALID_VALUE;
  if (shmem > (unsigned)f->attr[8]) return E_INVALID_VALUE;
  return E_SUCCESS;
}
/* The arguments of a launch (or kernel node), from `params` or `extra`, laid out in pb. */
CUresult launch_args(const struct fc_func *f, void **params, void **extra, unsigned char *pb) {
  if (params && extra) return E_INVALID_VALUE;
  memset(pb, 0, FC_PARAM_BUF);
  size_t need = 0;
  for (int i = 0; i < f->np; i++)
    if (f->p[i].off + f->p[i].size > need) need = f->p[i].off + f->p[i].size;
  if (params) {
    for (int i = 0; i < f->np; i++) {
      if (!params[i]) return E_INVALID_VALUE;
      memcpy(pb + f->p[i].off, params[i], f->p[i].size);
    }
  } else if (extra) {
    const void *buf = NULL;
    const size_t *psz = NULL;
    for (int i = 0; extra[i] != LP_END; i += 2) {
      if (i >= 64) return E_INVALID_VALUE;
      if (extra[i] == LP_BUFFER_POINTER) buf = extra[i + 1];
      else if (extra[i] == LP_BUFFER_SIZE) psz = extra[i + 1];
      else return E_INVALID_VALUE;
    }
    if (need) {
      if (!buf || !psz || *psz < need) return E_INVALID_VALUE;
      memcpy(pb, buf, need);
    }
  } else if (f->np) {
    return E_INVALID_VALUE;
  }
  return E_SUCCESS;
}

CUresult launch(const void *h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shmem, CUstream s, void **params, void **extra) {
  struct fc_ctx *c;
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  NEED_CTX(c);
  if (f->mod && f->mod->ctx && f->mod->ctx != c) return E_INVALID_HANDLE; /* another context's module */
  CUresult e = chk_stream(s);
  if (e) return e;
  if ((e = launch_dims(f, gx, gy, gz, bx, by, bz, shmem))) return e;
  unsigned char pb[FC_PARAM_BUF];
  if ((e = launch_args(f, params, extra, pb))) return e;
  struct fc_node *nd = captured_node(s, N_KERNEL);
  if (nd) { /* captured: arguments are copied now, the kernel runs when the graph does */
    nd->f = f;
    nd->threads = (unsigned long long)gx * bx;
    nd->pb = malloc(FC_PARAM_BUF);
    if (!nd->pb) abort();
    memcpy(nd->pb, pb, FC_PARAM_BUF);
    return E_SUCCESS;
  }
  CUresult r = run_kernel(f, pb, (unsigned long long)gx * bx);
  if (r == E_SUCCESS) /* in flight until a wait: the allocations its pointer arguments name */
    for (int i = 0; i < f->np; i++)
      if (f->p[i].size == 8) {
        uintptr_t a;
        memcpy(&a, pb + f->p[i].off, 8);
        long k = region_find(a);
        if (k >= 0) busy_add(g_reg[k].base, g_reg[k].size, s);
      }
  return r;
}

CUresult launch_ex(const CUlaunchConfig *cfg, const void *h, void **params, void **extra) {
  if (!cfg) return E_INVALID_VALUE;
  if (cfg->numAttrs && !cfg->attrs) return E_INVALID_VALUE;
  for (unsigned i = 0; i < cfg->numAttrs; i++) {
    const CUlaunchAttribute *a = &cfg->attrs[i];
    if (a->id < 0 || a->id > 31) return E_INVALID_VALUE;
    if (a->id == 4) { /* CLUSTER_DIMENSION: grid must be a multiple of the cluster */
      unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y, z = a->value.clusterDim.z;
      if (!x || !y || !z || cfg->gridDimX % x || cfg->gridDimY % y || cfg->gridDimZ % z) return E_INVALID_VALUE;
    }
  }
  return launch(h, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ,
                cfg->sharedMemBytes, cfg->hStream, params, extra);
}
