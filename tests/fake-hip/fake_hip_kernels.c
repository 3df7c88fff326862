/*
 * fake_hip_kernels.c - the kernels of the test programs (apps/), run on the CPU and found by
 * name (plain or mangled), and the launch calls (<<<>>> stubs, hipLaunchKernel, hipModuleLaunchKernel,
 * the call configuration stack, hipGetProcAddress).
 */
#include "fake_hip_internal.h"

/* ---- the kernels of the test programs, run on the CPU ---- */


static uint64_t arg_u64(struct kargs a, size_t off) { uint64_t v = 0; if (off + 8 <= a.len) memcpy(&v, a.buf + off, 8); return v; }
static uint32_t arg_u32(struct kargs a, size_t off) { uint32_t v = 0; if (off + 4 <= a.len) memcpy(&v, a.buf + off, 4); return v; }
static float arg_f32(struct kargs a, size_t off) { float v = 0; if (off + 4 <= a.len) memcpy(&v, a.buf + off, 4); return v; }
static double arg_f64(struct kargs a, size_t off) { double v = 0; if (off + 8 <= a.len) memcpy(&v, a.buf + off, 8); return v; }

static size_t threads(const struct launch *l) { return (size_t)l->grid.x * l->block.x; }
static size_t upto(int n, const struct launch *l) {
  if (n <= 0) return 0;
  return (size_t)n < threads(l) ? (size_t)n : threads(l);
}
#define DEV(ptr, bytes) do { if (!range_ok((uintptr_t)(ptr), (bytes), 0)) return E_ILLEGAL_ADDRESS; } while (0)


static hipError_t k_vadd(struct kargs a, const struct launch *l) { /* (const float*, const float*, float*, int) */
  const float *x = (const float *)arg_u64(a, 0), *y = (const float *)arg_u64(a, 8);
  float *z = (float *)arg_u64(a, 16);
  size_t n = upto((int)arg_u32(a, 24), l);
  DEV(x, n * 4); DEV(y, n * 4); DEV(z, n * 4);
  for (size_t i = 0; i < n; i++) z[i] = x[i] + y[i];
  return E_SUCCESS;
}
static hipError_t k_saxpy(struct kargs a, const struct launch *l) { /* (float, const float*, float*, int) */
  float s = arg_f32(a, 0);
  const float *x = (const float *)arg_u64(a, 8);
  float *y = (float *)arg_u64(a, 16);
  size_t n = upto((int)arg_u32(a, 24), l);
  DEV(x, n * 4); DEV(y, n * 4);
  for (size_t i = 0; i < n; i++) y[i] = s * x[i] + y[i];
  return E_SUCCESS;
}
static hipError_t k_affine(struct kargs a, const struct launch *l) { /* ({float, int, double}, const float*, float*) */
  float scale = arg_f32(a, 0);
  int n0 = (int)arg_u32(a, 4);
  double bias = arg_f64(a, 8);
  const float *in = (const float *)arg_u64(a, 16);
  float *out = (float *)arg_u64(a, 24);
  size_t n = upto(n0, l);
  DEV(in, n * 4); DEV(out, n * 4);
  for (size_t i = 0; i < n; i++) out[i] = in[i] * scale + (float)bias;
  return E_SUCCESS;
}
static hipError_t k_count_over(struct kargs a, const struct launch *l) { /* (const float*, int, float, int*) */
  const float *x = (const float *)arg_u64(a, 0);
  size_t n = upto((int)arg_u32(a, 8), l);
  float t = arg_f32(a, 12);
  int *out = (int *)arg_u64(a, 16);
  DEV(x, n * 4); DEV(out, 4);
  for (size_t i = 0; i < n; i++) if (x[i] > t) out[0]++;
  return E_SUCCESS;
}
static hipError_t k_poly(struct kargs a, const struct launch *l) { /* (const float*, float*, int) + __constant__ float c_coeffs[4] */
  const float *x = (const float *)arg_u64(a, 0);
  float *y = (float *)arg_u64(a, 8);
  size_t n = upto((int)arg_u32(a, 16), l);
  struct global *g = l->owner ? global_find(l->owner, "c_coeffs") : NULL;
  if (!g || g->size < 16) return E_INVALID_SYMBOL;
  const float *c = (const float *)g->dev;
  DEV(x, n * 4); DEV(y, n * 4);
  for (size_t i = 0; i < n; i++) y[i] = c[0] + x[i] * (c[1] + x[i] * (c[2] + x[i] * c[3]));
  return E_SUCCESS;
}
static hipError_t k_grid_stride(struct kargs a, const struct launch *l) { /* (float*, int): every element */
  (void)l;
  float *x = (float *)arg_u64(a, 0);
  int n = (int)arg_u32(a, 8);
  size_t m = n > 0 ? (size_t)n : 0;
  DEV(x, m * 4);
  for (size_t i = 0; i < m; i++) x[i] *= 2.0f;
  return E_SUCCESS;
}
/* The kernels over a buffer of 4-byte elements with a 4-byte value, (T*, T, int n): the first
 * n elements (at most one a thread) of fill_u32 (unsigned*, unsigned, int) get v + i, those of
 * scale (float*, float, int) are multiplied by s. */
static hipError_t k_each4(struct kargs a, const struct launch *l, int fill) {
  void *p = (void *)arg_u64(a, 0);
  size_t n = upto((int)arg_u32(a, 12), l);
  DEV(p, n * 4);
  if (fill) {
    unsigned *u = p, v = arg_u32(a, 8);
    for (size_t i = 0; i < n; i++) u[i] = v + (unsigned)i;
  } else {
    float *x = p, s = arg_f32(a, 8);
    for (size_t i = 0; i < n; i++) x[i] *= s;
  }
  return E_SUCCESS;
}
static hipError_t k_fill_u32(struct kargs a, const struct launch *l) { return k_each4(a, l, 1); }
static hipError_t k_scale(struct kargs a, const struct launch *l) { return k_each4(a, l, 0); }
static hipError_t k_add_into(struct kargs a, const struct launch *l) { /* (float*, const float*, int) */
  float *d = (float *)arg_u64(a, 0);
  const float *s = (const float *)arg_u64(a, 8);
  size_t n = upto((int)arg_u32(a, 16), l);
  DEV(d, n * 4); DEV(s, n * 4);
  for (size_t i = 0; i < n; i++) d[i] += s[i];
  return E_SUCCESS;
}

static const struct kernel k_table[] = {
  {"vadd", 4, {0, 8, 16, 24}, {8, 8, 8, 4}, k_vadd},
  {"saxpy", 4, {0, 8, 16, 24}, {4, 8, 8, 4}, k_saxpy},
  {"affine_k", 3, {0, 16, 24}, {16, 8, 8}, k_affine},
  {"affine", 3, {0, 16, 24}, {16, 8, 8}, k_affine},
  {"count_over", 4, {0, 8, 12, 16}, {8, 4, 4, 8}, k_count_over},
  {"poly", 3, {0, 8, 16}, {8, 8, 4}, k_poly},
  {"grid_stride", 2, {0, 8}, {8, 4}, k_grid_stride},
  {"fill_u32", 3, {0, 8, 12}, {8, 4, 4}, k_fill_u32},
  {"scale", 3, {0, 8, 12}, {8, 4, 4}, k_scale},
  {"add_into", 3, {0, 8, 16}, {8, 8, 4}, k_add_into},
};

/* `name` is `base` itself or an Itanium-mangled function whose name is `base` (_Z<len><base>...). */
static int name_is(const char *name, const char *base) {
  if (!strcmp(name, base)) return 1;
  if (strncmp(name, "_Z", 2)) return 0;
  char *end;
  unsigned long n = strtoul(name + 2, &end, 10);
  return end != name + 2 && n == strlen(base) && !strncmp(end, base, n);
}
static const struct kernel *kernel_named(const char *name) {
  for (size_t i = 0; i < sizeof k_table / sizeof k_table[0]; i++)
    if (name_is(name, k_table[i].name)) return &k_table[i];
  return NULL;
}

struct fh_func *func_new(struct fh_module *owner, const char *name) {
  struct fh_func *f = calloc(1, sizeof *f);
  f->owner = owner;
  f->name = strdup(name);
  f->k = kernel_named(name);
  GROW(g_fn, g_nfn, g_capfn);
  g_fn[g_nfn++] = f;
  return f;
}
int func_known(const struct fh_func *f) {
  for (size_t i = 0; i < g_nfn; i++)
    if (g_fn[i] == f) return 1;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                 */
/* ------------------------------------------------------------------------ */

hipError_t run(struct fh_func *f, dim3 grid, dim3 block, hipStream_t s, void **params, void **extra) {
  if (!stream_ok(s)) return E_INVALID_HANDLE;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
      (size_t)block.x * block.y * block.z > 1024)
    return E_INVALID_VALUE;
  const struct kernel *k = f->k;
  if (!k) return E_SUCCESS; /* a kernel the fake does not know does nothing */
  unsigned char buf[256];
  struct kargs a = {buf, 0};
  if (extra) {
    const void *p = NULL;
    size_t n = 0;
    for (int i = 0; i < 32 && extra[i] != (void *)3 && extra[i] != NULL; i += 2) {
      if (extra[i] == (void *)1) p = extra[i + 1];
      else if (extra[i] == (void *)2 && extra[i + 1]) n = *(size_t *)extra[i + 1];
    }
    if (!p) return E_INVALID_VALUE;
    a.buf = p;
    a.len = n;
  } else {
    if (k->nargs && !params) return E_INVALID_VALUE;
    memset(buf, 0, sizeof buf);
    for (int i = 0; i < k->nargs; i++) {
      memcpy(buf + k->off[i], params[i], k->size[i]);
      if (k->off[i] + k->size[i] > a.len) a.len = k->off[i] + k->size[i];
    }
  }
  struct fh_graph *g = capturing(s);
  if (g) return graph_add_launch(g, f, grid, block, a); /* captured, not run */
  struct launch l = {grid, block, f->owner};
  return k->run(a, &l);
}

hipError_t run_args(struct fh_func *f, dim3 grid, dim3 block, struct kargs a) {
  struct launch l = {grid, block, f->owner};
  return f->k ? f->k->run(a, &l) : E_SUCCESS;
}

static struct fh_func *stub_func(const void *host) {
  for (size_t i = 0; i < g_nstub; i++)
    if (g_stub[i].host == host) return g_stub[i].f;
  return NULL;
}

hipError_t hipLaunchKernel(const void *host, dim3 grid, dim3 block, void **args, size_t shmem, hipStream_t s) {
  (void)shmem;
  lock();
  struct fh_func *f = stub_func(host);
  hipError_t r = f ? run(f, grid, block, s, args, NULL) : E_INVALID_DEVICE_FUNCTION;
  unlock();
  RET(r);
}
hipError_t hipLaunchCooperativeKernel(const void *host, dim3 grid, dim3 block, void **args, unsigned shmem, hipStream_t s) {
  return hipLaunchKernel(host, grid, block, args, shmem, s);
}
hipError_t hipExtLaunchKernel(const void *host, dim3 grid, dim3 block, void **args, size_t shmem, hipStream_t s,
                              hipEvent_t start, hipEvent_t stop, int flags) {
  (void)flags;
  if (start) hipEventRecord(start, s);
  hipError_t r = hipLaunchKernel(host, grid, block, args, shmem, s);
  if (stop) hipEventRecord(stop, s);
  return r;
}
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, hipStream_t s, void **params, void **extra) {
  (void)shmem;
  lock();
  hipError_t r = func_known(f) ? run(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, s, params, extra) : E_INVALID_HANDLE;
  unlock();
  RET(r);
}

/* Sizes in work-items (grid times block), as Tensile launches: a global size that is not a
   multiple of the work-group size is refused here (the real runtime runs a partial group).
   ROCm 5 exports these two with C++ linkage only, later releases by their C names: both here. */
hipError_t hipExtModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned lx,
                                    unsigned ly, unsigned lz, size_t shmem, hipStream_t s, void **params,
                                    void **extra, hipEvent_t start, hipEvent_t stop, unsigned flags) {
  (void)flags;
  if (!lx || !ly || !lz || gx % lx || gy % ly || gz % lz) RET(E_INVALID_VALUE);
  if (start) hipEventRecord(start, s);
  hipError_t r = hipModuleLaunchKernel(f, gx / lx, gy / ly, gz / lz, lx, ly, lz, (unsigned)shmem, s, params, extra);
  if (stop) hipEventRecord(stop, s);
  return r;
}
hipError_t hipHccModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned lx,
                                    unsigned ly, unsigned lz, size_t shmem, hipStream_t s, void **params,
                                    void **extra, hipEvent_t start, hipEvent_t stop) {
  return hipExtModuleLaunchKernel(f, gx, gy, gz, lx, ly, lz, shmem, s, params, extra, start, stop, 0);
}
hipError_t ext_module_launch_cxx(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, size_t,
                                 hipStream_t, void **, void **, hipEvent_t, hipEvent_t, unsigned)
    __asm__("_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j");
hipError_t ext_module_launch_cxx(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned lx, unsigned ly,
                                 unsigned lz, size_t shmem, hipStream_t s, void **params, void **extra,
                                 hipEvent_t start, hipEvent_t stop, unsigned flags) {
  return hipExtModuleLaunchKernel(f, gx, gy, gz, lx, ly, lz, shmem, s, params, extra, start, stop, flags);
}
hipError_t hcc_module_launch_cxx(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, size_t,
                                 hipStream_t, void **, void **, hipEvent_t, hipEvent_t)
    __asm__("_Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_");
hipError_t hcc_module_launch_cxx(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned lx, unsigned ly,
                                 unsigned lz, size_t shmem, hipStream_t s, void **params, void **extra,
                                 hipEvent_t start, hipEvent_t stop) {
  return hipExtModuleLaunchKernel(f, gx, gy, gz, lx, ly, lz, shmem, s, params, extra, start, stop, 0);
}

/* <<<>>>: the configuration is pushed by the caller and popped by the kernel's host stub. */
struct config { dim3 grid, block; size_t shmem; hipStream_t stream; };
static __thread struct config t_cfg[16];
static __thread int t_ncfg;

hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, hipStream_t s) {
  if (t_ncfg == 16) RET(E_INVALID_VALUE);
  t_cfg[t_ncfg++] = (struct config){grid, block, shmem, s};
  RET(E_SUCCESS);
}
hipError_t __hipPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, hipStream_t *s) {
  if (t_ncfg == 0) RET(E_MISSING_CONFIGURATION);
  struct config c = t_cfg[--t_ncfg];
  if (grid) *grid = c.grid;
  if (block) *block = c.block;
  if (shmem) *shmem = c.shmem;
  if (s) *s = c.stream;
  RET(E_SUCCESS);
}

/* hipGetProcAddress (ROCm 6.1+; here for the tests of interposers): this library's own exports. */
hipError_t hipGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  (void)version; (void)flags;
  static const struct { const char *name; void *fn; } table[] = {
    {"hipGetDeviceCount", (void *)hipGetDeviceCount}, {"hipMalloc", (void *)hipMalloc},
    {"hipMemcpy", (void *)hipMemcpy}, {"hipMemset", (void *)hipMemset}, {"hipFree", (void *)hipFree},
  };
  if (!symbol || !pfn) RET(E_INVALID_VALUE);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(symbol, table[i].name)) {
      *pfn = table[i].fn;
      if (status) *status = 0; /* HIP_GET_PROC_ADDRESS_SUCCESS */
      RET(E_SUCCESS);
    }
  *pfn = NULL;
  if (status) *status = 1; /* HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  RET(E_NOT_FOUND);
}
