/*
 * fake_cuda_core.c - the fake driver's global state: the lock and tracing, the handle
 * registry, contexts (the per-thread stack, the primary context), cuInit, versions, error
 * names, fork handling, devices and their attributes, context limits.
 */
#include "fake_cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Global state                                                             */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
int g_trace;
int g_inited;
static int g_fork_broken;
size_t g_total = (size_t)8 << 30;
size_t g_used;
unsigned long long g_next_id = 1;

void fc_lock(void) { pthread_mutex_lock(&g_mu); }
void fc_unlock(void) { pthread_mutex_unlock(&g_mu); }

void fc_trace(const char *name, CUresult r) {
  fprintf(stderr, "[fake-cuda] %s -> %d\n", name, r);
}

uintptr_t round_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

void *xgrow(void *arr, size_t *cap, size_t elt) {
  size_t nc = *cap ? *cap * 2 : 16;
  void *p = realloc(arr, nc * elt);
  if (!p) {
    fprintf(stderr, "[fake-cuda] out of host memory\n");
    abort();
  }
  *cap = nc;
  return p;
}

/* ---- handle registry: every live handle we gave out, with its type ---- */


struct objent { const void *p; int type; };
static struct objent *g_obj;
static size_t g_nobj, g_capobj;

void obj_add(const void *p, int type) {
  GROW(g_obj, g_nobj, g_capobj);
  g_obj[g_nobj].p = p;
  g_obj[g_nobj].type = type;
  g_nobj++;
}
void obj_del(const void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i].p == p) { g_obj[i] = g_obj[--g_nobj]; return; }
}
int obj_type(const void *p) {
  if (!p) return 0;
  for (size_t i = g_nobj; i-- > 0;)
    if (g_obj[i].p == p) return g_obj[i].type;
  return 0;
}
int obj_is(const void *p, int type) { return p && obj_type(p) == type; }

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

/* One primary context per device. */
static struct fc_ctx g_primaries[64];

#define CTX_STACK_MAX 64
static __thread struct fc_ctx *t_ctx[CTX_STACK_MAX];
static __thread int t_nctx;

CUresult cur_ctx(struct fc_ctx **out) {
  if (t_nctx == 0) return E_INVALID_CONTEXT;
  struct fc_ctx *c = t_ctx[t_nctx - 1];
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  if (c->primary && !c->active) return E_CONTEXT_IS_DESTROYED;
  if (out) *out = c;
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Init, version, errors, fork                                              */
/* ------------------------------------------------------------------------ */

static void fc_prefork(void) { fc_lock(); }
static void fc_postfork_parent(void) { fc_unlock(); }
static void fc_postfork_child(void) {
  /* Like the real driver, a child forked after cuInit cannot use CUDA. */
  if (g_inited) {
    g_inited = 0;
    g_fork_broken = 1;
  }
  /* The child's thread has a new TID, so it cannot unlock the recursive
   * mutex taken in fc_prefork: start over with a fresh one. */
  pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  memcpy(&g_mu, &fresh, sizeof fresh);
}

/* FAKE_CUDA_FAIL=<entry point>: that entry point fails with CUDA_ERROR_NOT_SUPPORTED (a call
   that worked when the archive was recorded and does not now, for replay's ERROR verdict). */
const char *g_fail;

/* FAKE_CUDA_DEVICES=N (1 to 64, default 1): the devices cuDeviceGetCount answers; device
   handles are their ordinals. They share one memory and one primary context: a program (or a
   replay) on device K behaves as on device 0, but only K < N is accepted. */
int g_ndev = 1;

__attribute__((constructor)) static void fc_ctor(void) {
  g_fail = getenv("FAKE_CUDA_FAIL");
  const char *nd = getenv("FAKE_CUDA_DEVICES");
  if (nd && *nd) {
    long v = strtol(nd, NULL, 10);
    if (v >= 1 && v <= 64) g_ndev = (int)v;
  }
  const char *t = getenv("FAKE_CUDA_TRACE");
  g_trace = t && *t && strcmp(t, "0") != 0;
  unsigned long long base = 0x7e0000000000ull;
  const char *b = getenv("FAKE_CUDA_VA_BASE");
  if (b && *b) {
    unsigned long long v = strtoull(b, NULL, 0);
    if (v >= (256ull << 30) && v % FC_GRAN == 0 && v < FC_VA_LIMIT) base = v;
  }
  g_dev.base = g_dev.cursor = base;
  g_glob.base = g_glob.cursor = base - (64ull << 30);
  g_fb.base = g_fb.cursor = (base / 2) & ~(unsigned long long)(FC_GRAN - 1);
  pthread_atfork(fc_prefork, fc_postfork_parent, fc_postfork_child);
}

CUresult i_init(unsigned flags) {
  if (flags != 0) return E_INVALID_VALUE;
  if (g_fork_broken) return E_NOT_INITIALIZED;
  if (!g_inited) {
    g_inited = 1;
    for (int d = 0; d < g_ndev; d++) {
      g_primaries[d].dev = d;
      g_primaries[d].primary = 1;
      if (!obj_is(&g_primaries[d], T_CTX)) obj_add(&g_primaries[d], T_CTX);
    }
  }
  return E_SUCCESS;
}

CUresult i_driver_version(int *v) {
  if (!v) return E_INVALID_VALUE;
  *v = FC_DRIVER_VERSION;
  return E_SUCCESS;
}

static const struct fake_error k_errors[] = {
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
  {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
  {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
  {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
  {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
  {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
  {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
  {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
  {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
  FAKE_SHARED_ERRORS(FAKE_CUDA_ERROR_ROW)
};

CUresult i_error_str(CUresult code, const char **out, int want_name) {
  if (!out) return E_INVALID_VALUE;
  const struct fake_error *e = fake_error_find(k_errors, sizeof k_errors / sizeof k_errors[0], code);
  *out = e ? (want_name ? e->name : e->text) : NULL;
  return e ? E_SUCCESS : E_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

CUresult chk_dev(CUdevice d) { return d >= 0 && d < g_ndev ? E_SUCCESS : E_INVALID_DEVICE; }

CUresult i_device_get(CUdevice *d, int ordinal) {
  if (!d) return E_INVALID_VALUE;
  if (chk_dev(ordinal)) return E_INVALID_DEVICE;
  *d = ordinal;
  return E_SUCCESS;
}
CUresult i_device_count(int *n) {
  if (!n) return E_INVALID_VALUE;
  *n = g_ndev;
  return E_SUCCESS;
}
/* Device 0 is "HRR Fake GPU"; device K > 0 "HRR Fake GPU #K" (so a summary says which). */
CUresult i_device_name(char *name, int len, CUdevice d) {
  if (!name || len <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  if (d == 0) snprintf(name, (size_t)len, "%s", "HRR Fake GPU");
  else snprintf(name, (size_t)len, "HRR Fake GPU #%d", d);
  return E_SUCCESS;
}

static int dev_attr(int a) {
  switch (a) {
  case 1: return 1024;        /* MAX_THREADS_PER_BLOCK */
  case 2: return 1024;        /* MAX_BLOCK_DIM_X */
  case 3: return 1024;        /* MAX_BLOCK_DIM_Y */
  case 4: return 64;          /* MAX_BLOCK_DIM_Z */
  case 5: return 2147483647;  /* MAX_GRID_DIM_X */
  case 6: return 65535;       /* MAX_GRID_DIM_Y */
  case 7: return 65535;       /* MAX_GRID_DIM_Z */
  case 8: return 49152;       /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 9: return 65536;       /* TOTAL_CONSTANT_MEMORY */
  case 10: return 32;         /* WARP_SIZE */
  case 11: return 2147483647; /* MAX_PITCH */
  case 12: return 65536;      /* MAX_REGISTERS_PER_BLOCK */
  case 13: return 1980000;    /* CLOCK_RATE (kHz) */
  case 14: return 512;        /* TEXTURE_ALIGNMENT */
  case 15: return 1;          /* GPU_OVERLAP */
  case 16: return 4;          /* MULTIPROCESSOR_COUNT */
  case 19: return 1;          /* CAN_MAP_HOST_MEMORY */
  case 31: return 1;          /* CONCURRENT_KERNELS */
  case 33: return 1;          /* PCI_BUS_ID */
  case 39: return 2048;       /* MAX_THREADS_PER_MULTIPROCESSOR */
  case 41: return 1;          /* UNIFIED_ADDRESSING */
  case 75: return 9;          /* COMPUTE_CAPABILITY_MAJOR */
  case 76: return 0;          /* COMPUTE_CAPABILITY_MINOR */
  case 81: return 233472;     /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
  case 82: return 65536;      /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  case 95: return 1;          /* COOPERATIVE_LAUNCH */
  case 97: return 232448;     /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  case 102: return 1;         /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
  case 115: return 1;         /* MEMORY_POOLS_SUPPORTED */
  default: return 0;
  }
}
CUresult i_device_attr(int *pi, int attrib, CUdevice d) {
  if (!pi || attrib <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *pi = dev_attr(attrib);
  return E_SUCCESS;
}
CUresult i_device_uuid(CUuuid *u, CUdevice d) {
  static const unsigned char k[16] = {'h', 'r', 'r', '-', 'f', 'a', 'k', 'e', '-', 'g', 'p', 'u', 0, 0, 0, 1};
  if (!u) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  memcpy(u->bytes, k, 16);
  u->bytes[15] = (unsigned char)(1 + d);
  return E_SUCCESS;
}
CUresult i_device_total_mem(size_t *bytes, CUdevice d) {
  if (!bytes) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *bytes = g_total;
  return E_SUCCESS;
}
CUresult i_device_pci_bus_id(char *s, int len, CUdevice d) {
  if (!s || len <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  snprintf(s, (size_t)len, "0000:%02x:00.0", 1 + d);
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Context management                                                       */
/* ------------------------------------------------------------------------ */

static CUresult ctx_push(struct fc_ctx *c) {
  if (t_nctx >= CTX_STACK_MAX) return E_OUT_OF_MEMORY;
  t_ctx[t_nctx++] = c;
  return E_SUCCESS;
}

CUresult i_primary_retain(CUcontext *pctx, CUdevice d) {
  if (!pctx) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  g_primaries[d].refcnt++;
  g_primaries[d].active = 1;
  *pctx = &g_primaries[d];
  return E_SUCCESS;
}
/* Device d's primary context, reached the way cudart reaches it privately (no driver API call
 * to record): test programs make it current before retaining it. */
__attribute__((visibility("default"))) CUcontext fakeCudaPrimaryContext(CUdevice d) {
  return chk_dev(d) ? NULL : (CUcontext)&g_primaries[d];
}
CUresult i_primary_release(CUdevice d) {
  if (chk_dev(d)) return E_INVALID_DEVICE;
  if (g_primaries[d].refcnt <= 0) return E_INVALID_CONTEXT;
  if (--g_primaries[d].refcnt == 0) g_primaries[d].active = 0;
  return E_SUCCESS;
}
CUresult i_primary_state(CUdevice d, unsigned *flags, int *active) {
  if (!flags || !active) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *flags = g_primaries[d].flags;
  *active = g_primaries[d].active;
  return E_SUCCESS;
}

CUresult i_ctx_create(CUcontext *pctx, unsigned flags, CUdevice d) {
  if (!pctx) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  struct fc_ctx *c = calloc(1, sizeof *c);
  if (!c) return E_OUT_OF_MEMORY;
  c->dev = d;
  c->flags = flags;
  c->active = 1;
  CUresult e = ctx_push(c);
  if (e) { free(c); return e; }
  obj_add(c, T_CTX);
  *pctx = c;
  return E_SUCCESS;
}
CUresult i_ctx_destroy(CUcontext c) {
  if (!obj_is(c, T_CTX) || c->primary) return E_INVALID_CONTEXT;
  int j = 0;
  for (int i = 0; i < t_nctx; i++)
    if (t_ctx[i] != c) t_ctx[j++] = t_ctx[i];
  t_nctx = j;
  obj_del(c);
  free(c);
  return E_SUCCESS;
}
CUresult i_ctx_set_current(CUcontext c) {
  if (c == NULL) {
    if (t_nctx > 0) t_nctx--;
    return E_SUCCESS;
  }
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  if (t_nctx == 0) return ctx_push(c);
  t_ctx[t_nctx - 1] = c;
  return E_SUCCESS;
}
CUresult i_ctx_get_current(CUcontext *pc) {
  if (!pc) return E_INVALID_VALUE;
  *pc = t_nctx ? t_ctx[t_nctx - 1] : NULL;
  return E_SUCCESS;
}
CUresult i_ctx_push(CUcontext c) {
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  return ctx_push(c);
}
CUresult i_ctx_pop(CUcontext *pc) {
  if (t_nctx == 0) return E_INVALID_CONTEXT;
  struct fc_ctx *c = t_ctx[--t_nctx];
  if (pc) *pc = c;
  return E_SUCCESS;
}
static CUresult ctx_or_current(CUcontext c, struct fc_ctx **out) {
  if (c == NULL) return cur_ctx(out);
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  *out = c;
  return E_SUCCESS;
}
/* cuCtxEnablePeerAccess / cuCtxDisablePeerAccess: kernels of the current context may (or may
   no longer) touch the peer context's device's memory. */
CUresult i_peer_access(CUcontext peer, unsigned flags, int enable) {
  struct fc_ctx *c;
  if (flags) return E_INVALID_VALUE;
  if (!obj_is(peer, T_CTX)) return E_INVALID_CONTEXT;
  NEED_CTX(c);
  unsigned long long bit = 1ull << peer->dev;
  if (enable) c->peers |= bit;
  else c->peers &= ~bit;
  return E_SUCCESS;
}
CUresult i_ctx_get_device(CUdevice *d, CUcontext c) {
  struct fc_ctx *x;
  if (!d) return E_INVALID_VALUE;
  CUresult e = ctx_or_current(c, &x);
  if (e) return e;
  *d = x->dev;
  return E_SUCCESS;
}
CUresult i_ctx_get_id(CUcontext c, unsigned long long *id) {
  struct fc_ctx *x;
  if (!id) return E_INVALID_VALUE;
  CUresult e = ctx_or_current(c, &x);
  if (e) return e;
  *id = (unsigned long long)(uintptr_t)x;
  return E_SUCCESS;
}
CUresult i_ctx_sync(CUcontext c) {
  struct fc_ctx *x;
  CUresult e = ctx_or_current(c, &x);
  if (e) return e;
  busy_done(NULL, ~0ull);
  g_launches_since_sync = 0;
  return gpu_wait();
}
/* Context limits: STACK_SIZE, PRINTF_FIFO_SIZE, MALLOC_HEAP_SIZE, DEV_RUNTIME_SYNC_DEPTH,
   DEV_RUNTIME_PENDING_LAUNCH_COUNT, MAX_L2_FETCH_GRANULARITY, PERSISTING_L2_CACHE_SIZE. */
static size_t g_limits[7] = {1024, (size_t)1 << 20, (size_t)8 << 20, 2, 2048, 64, 0};
CUresult i_ctx_get_limit(size_t *v, int limit) {
  struct fc_ctx *c;
  if (!v) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (limit < 0 || limit >= 7) return E_INVALID_VALUE;
  *v = g_limits[limit];
  return E_SUCCESS;
}
static int g_ctx_cache;
CUresult i_ctx_set_cache(int cfg) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (cfg < 0 || cfg > 3) return E_INVALID_VALUE;
  g_ctx_cache = cfg;
  return E_SUCCESS;
}
CUresult i_ctx_set_limit(int limit, size_t v) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (limit < 0 || limit >= 7) return E_INVALID_VALUE;
  g_limits[limit] = v;
  return E_SUCCESS;
}
CUresult i_ctx_prio_range(int *least, int *greatest) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return E_SUCCESS;
}
CUresult i_loading_mode(int *mode) {
  if (!mode) return E_INVALID_VALUE;
  const char *m = getenv("CUDA_MODULE_LOADING");
  *mode = (m && strcmp(m, "EAGER") == 0) ? 1 : 2; /* 1 EAGER, 2 LAZY */
  return E_SUCCESS;
}
