/*
 * fake_cuda.c - a CPU-only stand-in for the CUDA driver (libcuda.so.1).
 *
 * Built as libcuda.so.1 so that test programs (and the hrr capture/replay
 * tools) can run on machines without a GPU.  "Device" memory is ordinary
 * host memory mapped at deterministic addresses, streams run synchronously,
 * and a handful of named kernels (axpy, fill_u32, gather, add_global) run on
 * the CPU.  See README.md next to this file for the contract.
 *
 * Written from scratch for hrr; it mirrors the public driver ABI (names,
 * versioned suffixes, struct layouts, error codes) but nothing else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

/* ------------------------------------------------------------------------ */
/* ABI types (own minimal definitions; layouts follow the public headers)   */
/* ------------------------------------------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct fc_ctx *CUcontext;
typedef struct fc_module *CUmodule;
typedef struct fc_func *CUfunction;
typedef struct fc_library *CUlibrary;
typedef struct fc_kernel *CUkernel;
typedef struct fc_stream *CUstream;
typedef struct fc_event *CUevent;
typedef void (*CUhostFn)(void *userData);
typedef struct fc_graph *CUgraph;
typedef struct fc_gexec *CUgraphExec;
typedef struct fc_nodeh *CUgraphNode;
typedef unsigned long long CUgraphConditionalHandle; /* a struct fc_cond * */

typedef struct {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out; /* CUgraphInstantiateResult */
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* Explicit graph construction. */
typedef struct {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType; /* CUmemorytype: 1 HOST, 2 DEVICE, 3 ARRAY, 4 UNIFIED */
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v1 */
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams;
  void **extra;
} CUDA_KERNEL_NODE_PARAMS_v1;
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v2 (= _v3) */
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
typedef struct {
  CUdeviceptr dst;
  size_t pitch;
  unsigned value, elementSize;
  size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct {
  CUhostFn fn;
  void *userData;
} CUDA_HOST_NODE_PARAMS;
typedef struct {
  int type; /* CUgraphNodeType */
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_KERNEL_NODE_PARAMS kernel;
    struct { int flags, reserved; CUcontext copyCtx; CUDA_MEMCPY3D copyParams; } memcpy;
    struct { CUDA_MEMSET_NODE_PARAMS p; CUcontext ctx; } memset;
    CUDA_HOST_NODE_PARAMS host;
    struct { CUgraph graph; } graph;
    struct { CUevent event; } event;
    struct {
      unsigned long long handle; /* CUgraphConditionalHandle */
      int type;                  /* CU_GRAPH_COND_TYPE_IF 0, WHILE 1, SWITCH 2 */
      unsigned size;
      CUgraph *phGraph_out;
      CUcontext ctx;
    } conditional;
  } u;
  long long reserved2;
} CUgraphNodeParams;
typedef struct {
  int result; /* CUgraphExecUpdateResult: 0 SUCCESS, 1 ERROR, 3 ERROR_NODE_TYPE_CHANGED */
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

typedef struct { char bytes[16]; } CUuuid;

typedef struct {
  int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
  int id;
} CUmemLocation;

typedef struct {
  int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
  int requestedHandleTypes; /* CUmemAllocationHandleType */
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct {
  CUmemLocation location;
  int flags; /* 0 none, 1 read, 3 read-write */
} CUmemAccessDesc;

typedef union {
  char pad[64];
  unsigned long long align_;
  int priority;
  int cooperative;
  struct { unsigned x, y, z; } clusterDim;
} CUlaunchAttributeValue;

typedef struct {
  int id;
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp layout");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc layout");
_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout");

/* Result codes (values of the public CUresult enum). */
#define E_SUCCESS 0
#define E_INVALID_VALUE 1
#define E_OUT_OF_MEMORY 2
#define E_NOT_INITIALIZED 3
#define E_INVALID_DEVICE 101
#define E_INVALID_IMAGE 200
#define E_INVALID_CONTEXT 201
#define E_FILE_NOT_FOUND 301
#define E_INVALID_HANDLE 400
#define E_ILLEGAL_STATE 401
#define E_NOT_FOUND 500
#define E_NOT_READY 600
#define E_NOT_SUPPORTED 801
#define E_ILLEGAL_ADDRESS 700
#define E_CONTEXT_IS_DESTROYED 709
#define E_HOST_MEMORY_ALREADY_REGISTERED 712
#define E_HOST_MEMORY_NOT_REGISTERED 713
#define E_LAUNCH_FAILED 719
#define E_STREAM_CAPTURE_UNSUPPORTED 900
#define E_GRAPH_EXEC_UPDATE_FAILURE 910

#define FC_DRIVER_VERSION 13000
#define FC_GRAN ((size_t)2 << 20)       /* VMM granularity and big-allocation alignment */
#define FC_SMALL_MAX ((size_t)1 << 20)  /* allocations up to this are packed into 2 MiB chunks */
#define FC_SMALL_ALIGN 256
#define FC_VA_LIMIT 0x7ffffffff000ull
#define FC_PARAM_BUF 4096
#define FC_MAX_PARAMS 32
#define FC_NAME_MAX 255

#define FC_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------ */
/* Global state                                                             */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int g_trace;
static int g_inited;
static int g_fork_broken;
static size_t g_total = (size_t)8 << 30;
static size_t g_used;
static unsigned long long g_next_id = 1;

static void fc_lock(void) { pthread_mutex_lock(&g_mu); }
static void fc_unlock(void) { pthread_mutex_unlock(&g_mu); }

static void fc_trace(const char *name, CUresult r) {
  fprintf(stderr, "[fake-cuda] %s -> %d\n", name, r);
}

static uintptr_t round_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

static void *xgrow(void *arr, size_t *cap, size_t elt) {
  size_t nc = *cap ? *cap * 2 : 16;
  void *p = realloc(arr, nc * elt);
  if (!p) {
    fprintf(stderr, "[fake-cuda] out of host memory\n");
    abort();
  }
  *cap = nc;
  return p;
}
#define GROW(a, n, cap) do { if ((n) >= (cap)) (a) = xgrow((a), &(cap), sizeof(*(a))); } while (0)

/* ---- handle registry: every live handle we gave out, with its type ---- */

enum { T_CTX = 1, T_MOD, T_FUNC, T_LIB, T_KERN, T_STREAM, T_EVENT, T_VMEM, T_GRAPH, T_GEXEC, T_GNODE, T_COND, T_ARRAY,
       T_MIPMAP, T_POOL };

struct objent { const void *p; int type; };
static struct objent *g_obj;
static size_t g_nobj, g_capobj;

static void obj_add(const void *p, int type) {
  GROW(g_obj, g_nobj, g_capobj);
  g_obj[g_nobj].p = p;
  g_obj[g_nobj].type = type;
  g_nobj++;
}
static void obj_del(const void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i].p == p) { g_obj[i] = g_obj[--g_nobj]; return; }
}
static int obj_type(const void *p) {
  if (!p) return 0;
  for (size_t i = g_nobj; i-- > 0;)
    if (g_obj[i].p == p) return g_obj[i].type;
  return 0;
}
static int obj_is(const void *p, int type) { return p && obj_type(p) == type; }

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

struct fc_ctx {
  int dev;
  int primary;
  int refcnt;
  int active;
  unsigned flags;
};
static struct fc_ctx g_primary = {0, 1, 0, 0, 0};

#define CTX_STACK_MAX 64
static __thread struct fc_ctx *t_ctx[CTX_STACK_MAX];
static __thread int t_nctx;

static CUresult cur_ctx(struct fc_ctx **out) {
  if (t_nctx == 0) return E_INVALID_CONTEXT;
  struct fc_ctx *c = t_ctx[t_nctx - 1];
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  if (c->primary && !c->active) return E_CONTEXT_IS_DESTROYED;
  if (out) *out = c;
  return E_SUCCESS;
}
#define NEED_CTX(c)                               \
  do {                                            \
    CUresult e__ = cur_ctx(&(c));                 \
    if (e__) return e__;                          \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Memory: address spaces, chunks, regions, reservations                     */
/* ------------------------------------------------------------------------ */

/* A bump-pointer address space.  Allocations never reuse addresses, so a
 * program that allocates in the same order gets the same addresses. */
struct vspace {
  uintptr_t base, cursor;
  uintptr_t open_chunk; /* base of the chunk small allocations go into, or 0 */
};
static struct vspace g_dev;  /* cuMemAlloc*, VMM reservations without a hint */
static struct vspace g_glob; /* __device__ globals of loaded modules */
static struct vspace g_fb;   /* reservations whose address hint could not be honoured */

/* A chunk is one host mapping that backs one big or several small allocations. */
struct chunk {
  uintptr_t base;
  size_t size, used;
  int live;
  int open;
};
static struct chunk *g_ch;
static size_t g_nch, g_capch;

/* A region is one user-visible allocation. */
enum { R_DEV = 1, R_GLOBAL, R_HOST, R_HOSTREG, R_VMM, R_MANAGED };
struct fc_vmem;
struct region {
  uintptr_t base;
  size_t size;
  int kind;
  int access; /* bit 1 read, bit 2 write */
  struct fc_ctx *ctx;
  size_t charged; /* bytes charged to g_used (R_DEV/R_GLOBAL) or mapped (R_HOST) */
  unsigned long long id;
  struct fc_vmem *vm;
};
static struct region *g_reg;
static size_t g_nreg, g_capreg;

/* A VA range reserved with cuMemAddressReserve. */
struct resv { uintptr_t base; size_t size; };
static struct resv *g_rv;
static size_t g_nrv, g_caprv;

/* Physical memory created with cuMemCreate: a memfd. */
struct fc_vmem {
  int fd;
  size_t size;
  int released;
  int maps;
};

static int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen) {
  return a < b + blen && b < a + alen;
}

static int known_overlap(uintptr_t a, size_t len, uintptr_t *end) {
  for (size_t i = 0; i < g_nch; i++)
    if (overlaps(a, len, g_ch[i].base, g_ch[i].size)) { *end = g_ch[i].base + g_ch[i].size; return 1; }
  for (size_t i = 0; i < g_nrv; i++)
    if (overlaps(a, len, g_rv[i].base, g_rv[i].size)) { *end = g_rv[i].base + g_rv[i].size; return 1; }
  return 0;
}

/* Map len bytes in vs at the next free, aligned address at or above the
 * cursor; if that region of the address space is unusable, anywhere. */
static uintptr_t va_map(struct vspace *vs, size_t len, size_t align, int prot) {
  uintptr_t a = round_up(vs->cursor, align), end;
  size_t skip = FC_GRAN;
  for (int tries = 0; tries < 256; tries++) {
    if (a + len < a || a + len > FC_VA_LIMIT) break;
    if (known_overlap(a, len, &end)) { a = round_up(end, align); continue; }
    void *p = mmap((void *)a, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == (void *)a) { vs->cursor = a + len; return a; }
    if (p != MAP_FAILED) munmap(p, len); /* kernel without MAP_FIXED_NOREPLACE took it as a hint */
    else if (errno != EEXIST) break;
    a = round_up(a + skip, align);
    if (skip < ((size_t)1 << 40)) skip <<= 1;
  }
  size_t over = len + align;
  void *p = mmap(NULL, over, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  uintptr_t s = (uintptr_t)p, al = round_up(s, align);
  if (al > s) munmap(p, al - s);
  if (s + over > al + len) munmap((void *)(al + len), s + over - (al + len));
  return al;
}

static struct chunk *chunk_add(uintptr_t base, size_t size, size_t used, int live, int open) {
  GROW(g_ch, g_nch, g_capch);
  struct chunk *c = &g_ch[g_nch++];
  c->base = base; c->size = size; c->used = used; c->live = live; c->open = open;
  return c;
}
static struct chunk *chunk_containing(uintptr_t p) {
  for (size_t i = 0; i < g_nch; i++)
    if (p >= g_ch[i].base && p < g_ch[i].base + g_ch[i].size) return &g_ch[i];
  return NULL;
}
static void chunk_drop(struct chunk *c) {
  munmap((void *)c->base, c->size);
  *c = g_ch[--g_nch];
}

/* Allocate size bytes of zeroed "device" memory in vs. */
static uintptr_t dev_alloc(struct vspace *vs, size_t size, size_t *charged) {
  if (size > FC_SMALL_MAX) {
    size_t m = round_up(size, FC_GRAN);
    uintptr_t a = va_map(vs, m, FC_GRAN, PROT_READ | PROT_WRITE);
    if (!a) return 0;
    chunk_add(a, m, m, 1, 0);
    *charged = m;
    return a;
  }
  size_t r = round_up(size ? size : 1, FC_SMALL_ALIGN);
  struct chunk *c = vs->open_chunk ? chunk_containing(vs->open_chunk) : NULL;
  if (!c || c->used + r > c->size) {
    if (c) {
      c->open = 0;
      if (c->live == 0) chunk_drop(c);
    }
    vs->open_chunk = 0;
    uintptr_t a = va_map(vs, FC_GRAN, FC_GRAN, PROT_READ | PROT_WRITE);
    if (!a) return 0;
    c = chunk_add(a, FC_GRAN, 0, 0, 1);
    vs->open_chunk = a;
  }
  uintptr_t p = c->base + c->used;
  c->used += r;
  c->live++;
  *charged = r;
  return p;
}

static void dev_release(uintptr_t p) {
  struct chunk *c = chunk_containing(p);
  if (!c) return;
  if (--c->live == 0 && !c->open) chunk_drop(c);
}

static size_t region_add(uintptr_t base, size_t size, int kind, int access, struct fc_ctx *ctx,
                         size_t charged, struct fc_vmem *vm) {
  GROW(g_reg, g_nreg, g_capreg);
  struct region *r = &g_reg[g_nreg];
  r->base = base; r->size = size; r->kind = kind; r->access = access; r->ctx = ctx;
  r->charged = charged; r->id = g_next_id++; r->vm = vm;
  return g_nreg++;
}
static long region_find(uintptr_t p) {
  for (size_t i = 0; i < g_nreg; i++)
    if (p >= g_reg[i].base && p - g_reg[i].base < g_reg[i].size) return (long)i;
  return -1;
}
static long region_find_base(uintptr_t p, int kind) {
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].base == p && g_reg[i].kind == kind) return (long)i;
  return -1;
}
static void region_del(size_t i) { g_reg[i] = g_reg[--g_nreg]; }

/* Is [p, p+len) entirely inside allocations that allow `want` (1 read, 2 write)? */
static int range_ok(uintptr_t p, size_t len, int want) {
  if (len == 0) return 1;
  uintptr_t end = p + len;
  if (end < p) return 0;
  while (p < end) {
    long i = region_find(p);
    if (i < 0) return 0;
    if ((g_reg[i].access & want) != want) return 0;
    p = g_reg[i].base + g_reg[i].size;
  }
  return 1;
}

/* Does p fall in address space the fake manages as device memory? */
static int in_device_va(uintptr_t p) {
  if (chunk_containing(p)) return 1;
  for (size_t i = 0; i < g_nrv; i++)
    if (p >= g_rv[i].base && p - g_rv[i].base < g_rv[i].size) return 1;
  return 0;
}
static int is_device_kind(int k) { return k == R_DEV || k == R_GLOBAL || k == R_VMM || k == R_MANAGED; }

static long resv_find_exact(uintptr_t base, size_t size) {
  for (size_t i = 0; i < g_nrv; i++)
    if (g_rv[i].base == base && g_rv[i].size == size) return (long)i;
  return -1;
}
static long resv_containing(uintptr_t p, size_t len) {
  for (size_t i = 0; i < g_nrv; i++)
    if (p >= g_rv[i].base && p + len <= g_rv[i].base + g_rv[i].size && p + len >= p) return (long)i;
  return -1;
}

static void vmem_maybe_free(struct fc_vmem *vm) {
  if (vm->released && vm->maps == 0) {
    close(vm->fd);
    g_used -= vm->size;
    obj_del(vm);
    free(vm);
  }
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
static const char *g_fail;

__attribute__((constructor)) static void fc_ctor(void) {
  g_fail = getenv("FAKE_CUDA_FAIL");
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

static CUresult i_init(unsigned flags) {
  if (flags != 0) return E_INVALID_VALUE;
  if (g_fork_broken) return E_NOT_INITIALIZED;
  if (!g_inited) {
    g_inited = 1;
    if (!obj_is(&g_primary, T_CTX)) obj_add(&g_primary, T_CTX);
  }
  return E_SUCCESS;
}

static CUresult i_driver_version(int *v) {
  if (!v) return E_INVALID_VALUE;
  *v = FC_DRIVER_VERSION;
  return E_SUCCESS;
}

static const struct { int code; const char *name, *text; } k_errors[] = {
  {0, "CUDA_SUCCESS", "no error"},
  {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
  {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
  {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
  {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
  {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {600, "CUDA_ERROR_NOT_READY", "device not ready"},
  {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
  {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
  {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
  {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
  {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
  {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
  {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
  {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
  {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult i_error_str(CUresult code, const char **out, int want_name) {
  if (!out) return E_INVALID_VALUE;
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].code == code) {
      *out = want_name ? k_errors[i].name : k_errors[i].text;
      return E_SUCCESS;
    }
  *out = NULL;
  return E_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

static CUresult chk_dev(CUdevice d) { return d == 0 ? E_SUCCESS : E_INVALID_DEVICE; }

static CUresult i_device_get(CUdevice *d, int ordinal) {
  if (!d) return E_INVALID_VALUE;
  if (ordinal != 0) return E_INVALID_DEVICE;
  *d = 0;
  return E_SUCCESS;
}
static CUresult i_device_count(int *n) {
  if (!n) return E_INVALID_VALUE;
  *n = 1;
  return E_SUCCESS;
}
static CUresult i_device_name(char *name, int len, CUdevice d) {
  if (!name || len <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", "HRR Fake GPU");
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
static CUresult i_device_attr(int *pi, int attrib, CUdevice d) {
  if (!pi || attrib <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *pi = dev_attr(attrib);
  return E_SUCCESS;
}
static CUresult i_device_uuid(CUuuid *u, CUdevice d) {
  static const unsigned char k[16] = {'h', 'r', 'r', '-', 'f', 'a', 'k', 'e', '-', 'g', 'p', 'u', 0, 0, 0, 1};
  if (!u) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  memcpy(u->bytes, k, 16);
  return E_SUCCESS;
}
static CUresult i_device_total_mem(size_t *bytes, CUdevice d) {
  if (!bytes) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *bytes = g_total;
  return E_SUCCESS;
}
static CUresult i_device_pci_bus_id(char *s, int len, CUdevice d) {
  if (!s || len <= 0) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  snprintf(s, (size_t)len, "%s", "0000:01:00.0");
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

static CUresult i_primary_retain(CUcontext *pctx, CUdevice d) {
  if (!pctx) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  g_primary.refcnt++;
  g_primary.active = 1;
  *pctx = &g_primary;
  return E_SUCCESS;
}
static CUresult i_primary_release(CUdevice d) {
  if (chk_dev(d)) return E_INVALID_DEVICE;
  if (g_primary.refcnt <= 0) return E_INVALID_CONTEXT;
  if (--g_primary.refcnt == 0) g_primary.active = 0;
  return E_SUCCESS;
}
static CUresult i_primary_state(CUdevice d, unsigned *flags, int *active) {
  if (!flags || !active) return E_INVALID_VALUE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  *flags = g_primary.flags;
  *active = g_primary.active;
  return E_SUCCESS;
}

static CUresult i_ctx_create(CUcontext *pctx, unsigned flags, CUdevice d) {
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
static CUresult i_ctx_destroy(CUcontext c) {
  if (!obj_is(c, T_CTX) || c->primary) return E_INVALID_CONTEXT;
  int j = 0;
  for (int i = 0; i < t_nctx; i++)
    if (t_ctx[i] != c) t_ctx[j++] = t_ctx[i];
  t_nctx = j;
  obj_del(c);
  free(c);
  return E_SUCCESS;
}
static CUresult i_ctx_set_current(CUcontext c) {
  if (c == NULL) {
    if (t_nctx > 0) t_nctx--;
    return E_SUCCESS;
  }
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  if (t_nctx == 0) return ctx_push(c);
  t_ctx[t_nctx - 1] = c;
  return E_SUCCESS;
}
static CUresult i_ctx_get_current(CUcontext *pc) {
  if (!pc) return E_INVALID_VALUE;
  *pc = t_nctx ? t_ctx[t_nctx - 1] : NULL;
  return E_SUCCESS;
}
static CUresult i_ctx_push(CUcontext c) {
  if (!obj_is(c, T_CTX)) return E_INVALID_CONTEXT;
  return ctx_push(c);
}
static CUresult i_ctx_pop(CUcontext *pc) {
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
static CUresult i_ctx_get_device(CUdevice *d, CUcontext c) {
  struct fc_ctx *x;
  if (!d) return E_INVALID_VALUE;
  CUresult e = ctx_or_current(c, &x);
  if (e) return e;
  *d = x->dev;
  return E_SUCCESS;
}
/* Kernels run when launched, but like a GPU's, their failures show at the next wait: after
   `spin` (a kernel that never finishes) every wait blocks forever; after `fault` every wait
   returns CUDA_ERROR_ILLEGAL_ADDRESS (sticky, as on a GPU). */
static int g_hung;
static CUresult g_sticky;

/* Asynchronous mode (FAKE_CUDA_ASYNC_GBPS=G, for benchmarks and ordering tests): a copy on a
   stream still moves its bytes at once, but keeps the "GPU" busy for n/G ns more (one timeline
   for every stream). Waits sleep until it is idle, queries answer CUDA_ERROR_NOT_READY until
   then, and host functions (cuLaunchHostFunc) run on a worker thread, in order, once the work
   enqueued before them is done; a wait or query is done only when they have returned. (Later
   work on the stream does not wait for a host function here: a simplification.) Unset or 0:
   everything completes at the call, as before. */
static double g_async_gbps = -1; /* < 0: not read yet */
static uint64_t g_busy_until;    /* CLOCK_MONOTONIC ns */
struct fc_hostfn {
  CUhostFn fn;
  void *ud;
  uint64_t due;
  struct fc_hostfn *next;
};
static pthread_mutex_t g_hf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hf_cv = PTHREAD_COND_INITIALIZER;
static struct fc_hostfn *g_hf_head, *g_hf_tail;
static int g_hf_running, g_hf_started;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void sleep_until(uint64_t t) {
  for (uint64_t n = now_ns(); n < t; n = now_ns()) {
    struct timespec d = {(time_t)((t - n) / 1000000000ull), (long)((t - n) % 1000000000ull)};
    nanosleep(&d, NULL);
  }
}
static int async_on(void) {
  if (g_async_gbps < 0) {
    const char *v = getenv("FAKE_CUDA_ASYNC_GBPS");
    g_async_gbps = v && *v ? strtod(v, NULL) : 0;
    if (!(g_async_gbps > 0)) g_async_gbps = 0;
  }
  return g_async_gbps > 0;
}
/* A copy of n bytes on a stream was issued: the GPU is busy that much longer. */
static void async_copy(size_t n) {
  if (!async_on()) return;
  uint64_t now = now_ns();
  if (g_busy_until < now) g_busy_until = now;
  g_busy_until += (uint64_t)((double)n / g_async_gbps);
}
static int async_busy(void) {
  if (!async_on()) return 0;
  pthread_mutex_lock(&g_hf_mu);
  int busy = g_hf_head || g_hf_running;
  pthread_mutex_unlock(&g_hf_mu);
  return busy || now_ns() < g_busy_until;
}
static void async_wait(void) {
  if (!async_on()) return;
  sleep_until(g_busy_until);
  pthread_mutex_lock(&g_hf_mu);
  while (g_hf_head || g_hf_running) pthread_cond_wait(&g_hf_cv, &g_hf_mu);
  pthread_mutex_unlock(&g_hf_mu);
}
static void *hostfn_worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_hf_mu);
    while (!g_hf_head) pthread_cond_wait(&g_hf_cv, &g_hf_mu);
    struct fc_hostfn *h = g_hf_head;
    g_hf_head = h->next;
    if (!g_hf_head) g_hf_tail = NULL;
    g_hf_running = 1;
    pthread_mutex_unlock(&g_hf_mu);
    sleep_until(h->due);
    h->fn(h->ud);
    free(h);
    pthread_mutex_lock(&g_hf_mu);
    g_hf_running = 0;
    pthread_cond_broadcast(&g_hf_cv);
    pthread_mutex_unlock(&g_hf_mu);
  }
  return NULL;
}
/* Queue a host function behind the work enqueued so far; 0 when not in asynchronous mode. */
static int async_hostfn(CUhostFn fn, void *ud) {
  if (!async_on()) return 0;
  struct fc_hostfn *h = calloc(1, sizeof *h);
  if (!h) return 0;
  h->fn = fn;
  h->ud = ud;
  h->due = g_busy_until;
  pthread_mutex_lock(&g_hf_mu);
  if (!g_hf_started) {
    pthread_t t;
    if (pthread_create(&t, NULL, hostfn_worker, NULL) != 0) {
      pthread_mutex_unlock(&g_hf_mu);
      free(h);
      return 0;
    }
    pthread_detach(t);
    g_hf_started = 1;
  }
  if (g_hf_tail) g_hf_tail->next = h;
  else g_hf_head = h;
  g_hf_tail = h;
  pthread_cond_broadcast(&g_hf_cv);
  pthread_mutex_unlock(&g_hf_mu);
  return 1;
}

static CUresult gpu_wait(void) {
  while (g_hung) pause();
  async_wait();
  return g_sticky;
}
/* What a query (cuStreamQuery, cuEventQuery) sees: never done after `spin`. */
static CUresult gpu_query(void) { return g_hung || async_busy() ? E_NOT_READY : g_sticky; }
/* ---- work in flight ----
 * Kernels run at launch, but like the real driver's they count as in flight on their stream
 * until a synchronisation, or a completed event recorded after them, says they are done.
 * Unmapping memory a kernel in flight uses (cuMemUnmap does not wait) faults that kernel: every
 * later wait returns CUDA_ERROR_ILLEGAL_ADDRESS.  NULL and CU_STREAM_LEGACY stand for all. */
struct busy { uintptr_t base; size_t size; const void *s; unsigned long long seq; };
static struct busy *g_busy;
static size_t g_nbusy, g_capbusy;
static unsigned long long g_busy_seq;
static void busy_add(uintptr_t base, size_t size, const void *s) {
  GROW(g_busy, g_nbusy, g_capbusy);
  g_busy[g_nbusy++] = (struct busy){base, size, s, ++g_busy_seq};
}
/* Work on s (all streams for NULL/legacy) queued before `before` is done. */
static void busy_done(const void *s, unsigned long long before) {
  for (size_t i = g_nbusy; i-- > 0;)
    if (((uintptr_t)s <= 1 || g_busy[i].s == s) && g_busy[i].seq < before) g_busy[i] = g_busy[--g_nbusy];
}
static void busy_unmapped(uintptr_t base, size_t size) {
  for (size_t i = 0; i < g_nbusy; i++)
    if (overlaps(base, size, g_busy[i].base, g_busy[i].size)) {
      g_sticky = E_ILLEGAL_ADDRESS;
      return;
    }
}
static CUresult i_ctx_sync(CUcontext c) {
  struct fc_ctx *x;
  CUresult e = ctx_or_current(c, &x);
  if (e) return e;
  busy_done(NULL, ~0ull);
  return gpu_wait();
}
/* Context limits: STACK_SIZE, PRINTF_FIFO_SIZE, MALLOC_HEAP_SIZE, DEV_RUNTIME_SYNC_DEPTH,
   DEV_RUNTIME_PENDING_LAUNCH_COUNT, MAX_L2_FETCH_GRANULARITY, PERSISTING_L2_CACHE_SIZE. */
static size_t g_limits[7] = {1024, (size_t)1 << 20, (size_t)8 << 20, 2, 2048, 64, 0};
static CUresult i_ctx_get_limit(size_t *v, int limit) {
  struct fc_ctx *c;
  if (!v) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (limit < 0 || limit >= 7) return E_INVALID_VALUE;
  *v = g_limits[limit];
  return E_SUCCESS;
}
static int g_ctx_cache;
static CUresult i_ctx_set_cache(int cfg) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (cfg < 0 || cfg > 3) return E_INVALID_VALUE;
  g_ctx_cache = cfg;
  return E_SUCCESS;
}
static CUresult i_ctx_set_limit(int limit, size_t v) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (limit < 0 || limit >= 7) return E_INVALID_VALUE;
  g_limits[limit] = v;
  return E_SUCCESS;
}
static CUresult i_ctx_prio_range(int *least, int *greatest) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return E_SUCCESS;
}
static CUresult i_loading_mode(int *mode) {
  if (!mode) return E_INVALID_VALUE;
  const char *m = getenv("CUDA_MODULE_LOADING");
  *mode = (m && strcmp(m, "EAGER") == 0) ? 1 : 2; /* 1 EAGER, 2 LAZY */
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Streams and events (everything runs synchronously)                       */
/* ------------------------------------------------------------------------ */

struct fc_stream {
  struct fc_ctx *ctx;
  unsigned flags;
  int prio;
  struct fc_graph *cap; /* the graph being captured into, or NULL */
  int cap_mode;         /* CUstreamCaptureMode: 0 GLOBAL, 1 THREAD_LOCAL, 2 RELAXED */
};

/* ---- graphs: a captured stream appends nodes instead of running them ---- */

/* Node kinds (0: a destroyed node, which runs as nothing). */
enum { N_KERNEL = 1, N_MEMSET, N_COPY, N_COPY3D, N_HOST, N_EMPTY, N_EVREC, N_EVWAIT, N_CHILD, N_COND,
       N_PLAN /* a stream-captured pitched/array copy: a `struct plan` in pb */ };
struct fc_func;
struct fc_event;
struct fc_graph;
struct fc_node {
  int kind;
  struct fc_func *f;              /* kernel */
  unsigned long long threads;     /* kernel */
  unsigned char *pb;              /* kernel: FC_PARAM_BUF bytes of arguments */
  uintptr_t dst, src;             /* copy; memset uses dst */
  int dst_dev, src_dev;           /* copy: as copy_checked */
  size_t n;                       /* copy bytes, memset elements (per row) */
  unsigned v;                     /* memset */
  int width;                      /* memset element size */
  size_t pitch, height;           /* memset node: rows (height 0: one) */
  CUDA_MEMCPY3D cp;               /* memcpy node */
  CUhostFn hfn;                   /* host node */
  void *hdata;
  struct fc_event *ev;            /* event record / wait node */
  struct fc_graph *child;         /* child graph node: its own deep copy; conditional: the body */
  struct fc_cond *cond;           /* conditional node: its handle */
  size_t *deps, ndeps;            /* indices of the nodes of the same graph it follows */
  size_t orig;                    /* in an exec: index of the graph node it came from */
  struct fc_nodeh *h;             /* handle of an explicitly added node, or NULL */
};
/* A graph runs its nodes in dependency order (lowest index first among the ready ones, so a
 * captured graph, whose nodes have no explicit dependencies, runs in capture order). */
struct fc_graph {
  struct fc_node *nodes;
  size_t n, cap;
  int owned; /* the body of a conditional node: destroyed with it, not by cuGraphDestroy */
};
/* A conditional handle: an IF node's body runs when its value is nonzero; the value is the
 * default at each launch with CU_GRAPH_COND_ASSIGN_DEFAULT (kernels cannot set it here). */
struct fc_cond {
  unsigned dflt, flags;
};
struct fc_nodeh { /* a CUgraphNode */
  struct fc_graph *g;
  size_t idx;
};
struct fc_gexec {
  struct fc_node *nodes; /* in execution order, without dependencies */
  size_t n;
  struct fc_graph *src;  /* the graph instantiated (compared, never dereferenced once freed) */
};
/* Captures in GLOBAL or THREAD_LOCAL mode now running (both treated as GLOBAL):
 * while any runs, "potentially unsafe" calls (cuMemAlloc, VMM mapping, copies
 * and memsets on the legacy stream) fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
 * as with the real driver.  RELAXED captures forbid nothing. */
static int g_strict_captures;
#define NO_STRICT_CAPTURE() do { if (g_strict_captures) return E_STREAM_CAPTURE_UNSUPPORTED; } while (0)

static struct fc_graph *stream_graph(CUstream s) {
  return ((uintptr_t)s > 2 && obj_is(s, T_STREAM)) ? s->cap : NULL;
}
static struct fc_node *graph_add(struct fc_graph *g) {
  GROW(g->nodes, g->n, g->cap);
  struct fc_node *nd = &g->nodes[g->n++];
  memset(nd, 0, sizeof *nd);
  return nd;
}
static void graph_free(struct fc_graph *g);
/* What a node owns (its argument buffer, dependencies, child graph; not its handle). */
static void node_release(struct fc_node *nd) {
  free(nd->pb);
  free(nd->deps);
  if (nd->child) graph_free(nd->child);
  nd->pb = NULL;
  nd->deps = NULL;
  nd->child = NULL;
}
static void nodes_free(struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    node_release(&nodes[i]);
    if (nodes[i].h) {
      obj_del(nodes[i].h);
      free(nodes[i].h);
    }
  }
  free(nodes);
}
static void graph_free(struct fc_graph *g) {
  obj_del(g); /* a conditional body is a handle of the program's too */
  nodes_free(g->nodes, g->n);
  free(g);
}
static struct fc_graph *graph_dup(const struct fc_graph *g);
/* Deep copy of a node (without its handle). */
static void node_copy(struct fc_node *d, const struct fc_node *s) {
  *d = *s;
  d->h = NULL;
  if (s->pb) {
    d->pb = malloc(FC_PARAM_BUF);
    if (!d->pb) abort();
    memcpy(d->pb, s->pb, FC_PARAM_BUF);
  }
  if (s->ndeps) {
    d->deps = malloc(s->ndeps * sizeof *d->deps);
    if (!d->deps) abort();
    memcpy(d->deps, s->deps, s->ndeps * sizeof *d->deps);
  }
  if (s->child) d->child = graph_dup(s->child);
}
static struct fc_graph *graph_dup(const struct fc_graph *g) {
  struct fc_graph *d = calloc(1, sizeof *d);
  if (!d) abort();
  for (size_t i = 0; i < g->n; i++) node_copy(graph_add(d), &g->nodes[i]);
  return d;
}
/* Deep copy of nodes[0..n) appended to g (as captured work: no dependencies). */
static void graph_append(struct fc_graph *g, const struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct fc_node *nd = graph_add(g);
    node_copy(nd, &nodes[i]);
    free(nd->deps);
    nd->deps = NULL;
    nd->ndeps = 0;
  }
}
/* order[0..g->n): the nodes in dependency order; E_INVALID_VALUE for a cycle. */
static CUresult graph_order(const struct fc_graph *g, size_t *order) {
  char *done = calloc(g->n ? g->n : 1, 1);
  if (!done) return E_OUT_OF_MEMORY;
  for (size_t k = 0; k < g->n; k++) {
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < g->n && pick == SIZE_MAX; i++) {
      if (done[i]) continue;
      int ready = 1;
      for (size_t j = 0; j < g->nodes[i].ndeps && ready; j++) ready = done[g->nodes[i].deps[j]];
      if (ready) pick = i;
    }
    if (pick == SIZE_MAX) {
      free(done);
      return E_INVALID_VALUE;
    }
    done[pick] = 1;
    order[k] = pick;
  }
  free(done);
  return E_SUCCESS;
}
struct fc_event {
  unsigned flags;
  int recorded;
  const void *stream;         /* where it was recorded */
  unsigned long long seq;     /* work queued before it (see busy_done) */
};

/* NULL, CU_STREAM_LEGACY (0x1) and CU_STREAM_PER_THREAD (0x2) are always valid. */
static CUresult chk_stream(CUstream s) {
  if ((uintptr_t)s <= 2) return E_SUCCESS;
  return obj_is(s, T_STREAM) ? E_SUCCESS : E_INVALID_HANDLE;
}

static CUresult i_stream_create(CUstream *ps, unsigned flags, int prio) {
  struct fc_ctx *c;
  if (!ps || flags > 1) return E_INVALID_VALUE;
  NEED_CTX(c);
  struct fc_stream *s = calloc(1, sizeof *s);
  if (!s) return E_OUT_OF_MEMORY;
  s->ctx = c;
  s->flags = flags;
  s->prio = prio > 0 ? 0 : (prio < -5 ? -5 : prio);
  obj_add(s, T_STREAM);
  *ps = s;
  return E_SUCCESS;
}
static CUresult i_stream_destroy(CUstream s) {
  if (!obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (s->cap) {
    if (s->cap_mode != 2) g_strict_captures--;
    nodes_free(s->cap->nodes, s->cap->n);
    free(s->cap);
  }
  obj_del(s);
  free(s);
  return E_SUCCESS;
}
static CUresult i_stream_sync(CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (stream_graph(s)) return E_STREAM_CAPTURE_UNSUPPORTED;
  busy_done(s, ~0ull);
  return gpu_wait();
}
static CUresult i_stream_query(CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  return e ? e : gpu_query();
}
static CUresult i_stream_wait_event(CUstream s, CUevent ev, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  if (flags > 1) return E_INVALID_VALUE;
  return E_SUCCESS;
}
static CUresult i_stream_is_capturing(CUstream s, int *status) {
  struct fc_ctx *c;
  if (!status) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  *status = stream_graph(s) ? 1 : 0; /* CU_STREAM_CAPTURE_STATUS_ACTIVE / _NONE */
  return E_SUCCESS;
}
/* cuStreamGetCaptureInfo (every version: the optional outputs after the id are answered
 * empty): the capture id is the address of the graph being captured into. */
static CUresult i_capture_info(CUstream s, int *status, unsigned long long *id, CUgraph *g, const void **deps,
                               size_t *ndeps) {
  struct fc_ctx *c;
  if (!status) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  struct fc_graph *gr = stream_graph(s);
  *status = gr ? 1 : 0;
  if (id) *id = gr ? (uintptr_t)gr : 0;
  if (g) *g = gr;
  if (deps) *deps = NULL;
  if (ndeps) *ndeps = 0;
  return E_SUCCESS;
}
static CUresult i_begin_capture(CUstream s, int mode) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (mode < 0 || mode > 2) return E_INVALID_VALUE;
  if ((uintptr_t)s <= 2) return E_STREAM_CAPTURE_UNSUPPORTED; /* the NULL/legacy stream cannot capture */
  if (!obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (s->cap) return E_ILLEGAL_STATE;
  s->cap = calloc(1, sizeof *s->cap);
  if (!s->cap) return E_OUT_OF_MEMORY;
  s->cap_mode = mode;
  if (mode != 2) g_strict_captures++;
  return E_SUCCESS;
}
static CUresult i_end_capture(CUstream s, CUgraph *pg) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pg) return E_INVALID_VALUE;
  if ((uintptr_t)s <= 2 || !obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (!s->cap) return E_ILLEGAL_STATE;
  if (s->cap_mode != 2) g_strict_captures--;
  obj_add(s->cap, T_GRAPH);
  *pg = s->cap;
  s->cap = NULL;
  return E_SUCCESS;
}

static CUresult i_event_create(CUevent *pe, unsigned flags) {
  struct fc_ctx *c;
  if (!pe || flags > 7) return E_INVALID_VALUE;
  if ((flags & 4) && !(flags & 2)) return E_INVALID_VALUE; /* INTERPROCESS needs DISABLE_TIMING */
  NEED_CTX(c);
  struct fc_event *ev = calloc(1, sizeof *ev);
  if (!ev) return E_OUT_OF_MEMORY;
  ev->flags = flags;
  obj_add(ev, T_EVENT);
  *pe = ev;
  return E_SUCCESS;
}
static CUresult i_event_record(CUevent ev, CUstream s, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  CUresult e = chk_stream(s);
  if (e) return e;
  if (flags > 1) return E_INVALID_VALUE;
  ev->recorded = 1;
  ev->stream = s;
  ev->seq = g_busy_seq + 1;
  return E_SUCCESS;
}
static void event_done(CUevent ev) {
  if (ev->recorded) busy_done(ev->stream, ev->seq);
}
static CUresult i_event_query(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  if (g_hung || async_busy()) return E_NOT_READY;
  event_done(ev);
  return E_SUCCESS;
}
static CUresult i_event_sync(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  CUresult e = gpu_wait();
  if (!e) event_done(ev);
  return e;
}
static CUresult i_event_elapsed(float *ms, CUevent a, CUevent b) {
  if (!ms) return E_INVALID_VALUE;
  if (!obj_is(a, T_EVENT) || !obj_is(b, T_EVENT)) return E_INVALID_HANDLE;
  if (!a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2)) return E_INVALID_HANDLE;
  *ms = 0.0f;
  return E_SUCCESS;
}
static CUresult i_event_destroy(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  obj_del(ev);
  free(ev);
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Memory API                                                               */
/* ------------------------------------------------------------------------ */

/* Stream-ordered frees keep their memory in the pool: a later stream-ordered allocation of the
 * same size reuses the address (as the real driver's pools do); cuMemPoolTrimTo releases it. */
struct pooled { uintptr_t base; size_t size, charged; };
static struct pooled *g_pooled;
static size_t g_npooled, g_cappooled;
static void pool_trim(void) {
  for (size_t i = 0; i < g_npooled; i++) {
    g_used -= g_pooled[i].charged;
    dev_release(g_pooled[i].base);
  }
  g_npooled = 0;
}

static CUresult i_mem_alloc(CUdeviceptr *dptr, size_t size, CUstream s, int async) {
  struct fc_ctx *c;
  if (!dptr) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (async) {
    CUresult e = chk_stream(s);
    if (e) return e;
  }
  if (size == 0) return E_INVALID_VALUE;
  if (!async) NO_STRICT_CAPTURE();
  if (async)
    for (size_t i = 0; i < g_npooled; i++)
      if (g_pooled[i].size == size) {
        struct pooled b = g_pooled[i];
        g_pooled[i] = g_pooled[--g_npooled];
        region_add(b.base, size, R_DEV, 3, c, b.charged, NULL);
        *dptr = b.base;
        return E_SUCCESS;
      }
  if (size > g_total || g_used + size > g_total) return E_OUT_OF_MEMORY;
  size_t charged = 0;
  uintptr_t p = dev_alloc(&g_dev, size, &charged);
  if (!p) return E_OUT_OF_MEMORY;
  region_add(p, size, R_DEV, 3, c, charged, NULL);
  g_used += charged;
  *dptr = p;
  return E_SUCCESS;
}
/* Rows are padded to 512 bytes (the texture pitch alignment of current GPUs). */
static CUresult i_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem) {
  if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16)) return E_INVALID_VALUE;
  size_t p = round_up(width, 512);
  if (p < width || height > SIZE_MAX / p) return E_INVALID_VALUE;
  CUresult e = i_mem_alloc(dptr, p * height, NULL, 0);
  if (!e) *pitch = p;
  return e;
}
static CUresult i_mem_free(CUdeviceptr p, CUstream s, int async) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (async) {
    CUresult e = chk_stream(s);
    if (e) return e;
  }
  if (p == 0) return E_SUCCESS;
  if (!async) busy_done(NULL, ~0ull); /* cuMemFree waits for the device */
  long m = region_find_base(p, R_MANAGED);
  if (m >= 0 && !async) {
    munmap((void *)p, g_reg[m].charged);
    region_del((size_t)m);
    return E_SUCCESS;
  }
  long i = region_find_base(p, R_DEV);
  if (i < 0) return E_INVALID_VALUE;
  if (async && stream_graph(s)) return E_SUCCESS; /* a free node: the graph keeps its memory */
  if (async) { /* back to the pool, reused by a later stream-ordered allocation */
    GROW(g_pooled, g_npooled, g_cappooled);
    g_pooled[g_npooled++] = (struct pooled){p, g_reg[i].size, g_reg[i].charged};
    region_del((size_t)i);
    return E_SUCCESS;
  }
  g_used -= g_reg[i].charged;
  region_del((size_t)i);
  dev_release(p);
  return E_SUCCESS;
}

/* Managed memory: host memory the device reads and writes (flags: CU_MEM_ATTACH_GLOBAL or _HOST). */
static CUresult i_mem_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned flags) {
  struct fc_ctx *c;
  if (!dptr || size == 0 || (flags != 1 && flags != 2)) return E_INVALID_VALUE;
  NEED_CTX(c);
  NO_STRICT_CAPTURE();
  size_t m = round_up(size, 4096);
  void *p = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return E_OUT_OF_MEMORY;
  region_add((uintptr_t)p, size, R_MANAGED, 3, c, m, NULL);
  *dptr = (uintptr_t)p;
  return E_SUCCESS;
}

/* ---- stream-ordered memory pools ---- */
typedef struct {
  int allocType, handleTypes;
  struct { int type, id; } location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;
struct fc_pool { CUmemPoolProps props; unsigned long long attr[9]; int access; };
static struct fc_pool g_default_pool = {{1, 0, {1, 0}, NULL, 0, 0, {0}}, {0, 1, 1, 1, 0, 0, 0, 0, 0}, 3};
static struct fc_pool *g_cur_pool = &g_default_pool;
static int pool_ok(const void *p) { return p == &g_default_pool || obj_is(p, T_POOL); }

static CUresult i_pool_create(struct fc_pool **pp, const CUmemPoolProps *props) {
  struct fc_ctx *c;
  if (!pp || !props) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (props->allocType != 1 || props->location.type != 1) return E_INVALID_VALUE;
  if (props->location.id != 0) return E_INVALID_DEVICE;
  struct fc_pool *p = calloc(1, sizeof *p);
  if (!p) return E_OUT_OF_MEMORY;
  p->props = *props;
  p->attr[1] = p->attr[2] = p->attr[3] = 1;
  p->access = 3;
  obj_add(p, T_POOL);
  *pp = p;
  return E_SUCCESS;
}
static CUresult i_pool_destroy(struct fc_pool *p) {
  if (!obj_is(p, T_POOL)) return E_INVALID_HANDLE;
  if (g_cur_pool == p) g_cur_pool = &g_default_pool;
  obj_del(p);
  free(p);
  return E_SUCCESS;
}
/* Attributes 1-3 (REUSE_*) are ints; 4 RELEASE_THRESHOLD; 5-8 reserved/used current/high
 * (read-only but for resetting the high marks to 0). */
static CUresult i_pool_attr(struct fc_pool *p, int attr, void *v, int set) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  if (!v || attr < 1 || attr > 8) return E_INVALID_VALUE;
  if (attr <= 3) {
    if (set) p->attr[attr] = *(int *)v != 0;
    else *(int *)v = (int)p->attr[attr];
    return E_SUCCESS;
  }
  if (set) {
    if (attr == 5 || attr == 7) return E_INVALID_VALUE;
    if ((attr == 6 || attr == 8) && *(unsigned long long *)v != 0) return E_INVALID_VALUE;
    p->attr[attr] = *(unsigned long long *)v;
  } else {
    *(unsigned long long *)v = attr >= 5 ? g_used : p->attr[attr];
  }
  return E_SUCCESS;
}
static CUresult i_pool_trim(struct fc_pool *p, size_t keep) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  if (keep == 0) pool_trim();
  return E_SUCCESS;
}
static CUresult i_pool_set_access(struct fc_pool *p, const CUmemAccessDesc *desc, size_t count) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  if (!desc || count == 0) return E_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != 1 || desc[i].flags < 0 || desc[i].flags > 3) return E_INVALID_VALUE;
    if (desc[i].location.id != 0) return E_INVALID_DEVICE;
    p->access = desc[i].flags;
  }
  return E_SUCCESS;
}
static CUresult i_device_pool(struct fc_pool **pp, CUdevice d, int def) {
  if (!pp) return E_INVALID_VALUE;
  CUresult e = chk_dev(d);
  if (e) return e;
  *pp = def ? &g_default_pool : g_cur_pool;
  return E_SUCCESS;
}
static CUresult i_device_set_pool(CUdevice d, struct fc_pool *p) {
  CUresult e = chk_dev(d);
  if (e) return e;
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  g_cur_pool = p;
  return E_SUCCESS;
}
static CUresult i_alloc_from_pool(CUdeviceptr *dptr, size_t size, struct fc_pool *p, CUstream s) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  return i_mem_alloc(dptr, size, s, 1);
}
static CUresult i_mem_get_info(size_t *fr, size_t *total) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (fr) *fr = g_total - g_used;
  if (total) *total = g_total;
  return E_SUCCESS;
}
static CUresult i_mem_addr_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  long i = region_find(p);
  if (i < 0 || !is_device_kind(g_reg[i].kind)) return E_NOT_FOUND;
  if (pbase) *pbase = g_reg[i].base;
  if (psize) *psize = g_reg[i].size;
  return E_SUCCESS;
}

static CUresult i_host_alloc(void **pp, size_t size, unsigned flags) {
  struct fc_ctx *c;
  if (!pp || size == 0 || flags > 7) return E_INVALID_VALUE;
  NEED_CTX(c);
  size_t m = round_up(size, 4096);
  void *p = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return E_OUT_OF_MEMORY;
  region_add((uintptr_t)p, size, R_HOST, 3, c, m, NULL);
  *pp = p;
  return E_SUCCESS;
}
static CUresult i_host_free(void *p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  long i = region_find_base((uintptr_t)p, R_HOST);
  if (i < 0) return E_INVALID_VALUE;
  munmap(p, g_reg[i].charged);
  region_del((size_t)i);
  return E_SUCCESS;
}
static CUresult i_host_register(void *p, size_t size, unsigned flags) {
  struct fc_ctx *c;
  if (!p || size == 0 || flags > 15) return E_INVALID_VALUE;
  NEED_CTX(c);
  for (size_t i = 0; i < g_nreg; i++)
    if (overlaps((uintptr_t)p, size, g_reg[i].base, g_reg[i].size)) return E_HOST_MEMORY_ALREADY_REGISTERED;
  region_add((uintptr_t)p, size, R_HOSTREG, 3, c, 0, NULL);
  return E_SUCCESS;
}
static CUresult i_host_unregister(void *p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  long i = region_find_base((uintptr_t)p, R_HOSTREG);
  if (i < 0) return E_HOST_MEMORY_NOT_REGISTERED;
  region_del((size_t)i);
  return E_SUCCESS;
}
static CUresult i_host_get_dptr(CUdeviceptr *pd, void *p, unsigned flags) {
  struct fc_ctx *c;
  if (!pd || flags != 0) return E_INVALID_VALUE;
  NEED_CTX(c);
  long i = region_find((uintptr_t)p);
  if (i < 0 || (g_reg[i].kind != R_HOST && g_reg[i].kind != R_HOSTREG)) return E_INVALID_VALUE;
  *pd = (uintptr_t)p; /* unified addressing: same value */
  return E_SUCCESS;
}

/* bool-typed attributes are written as one byte */
static CUresult ptr_attr(void *data, int attr, CUdeviceptr p) {
  if (!data) return E_INVALID_VALUE;
  long i = region_find(p);
  struct region *r = i >= 0 ? &g_reg[i] : NULL;
  int dev = r ? is_device_kind(r->kind) : in_device_va(p);
  switch (attr) {
  case 2: /* MEMORY_TYPE: like the real driver, an error for pageable memory it does not know */
    if (!r && !dev) return E_INVALID_VALUE;
    *(unsigned *)data = dev ? 2u : 1u;
    return E_SUCCESS;
  case 1: /* CONTEXT */
    if (!r) return E_INVALID_VALUE;
    *(CUcontext *)data = r->ctx;
    return E_SUCCESS;
  case 3: /* DEVICE_POINTER */
    if (!r) return E_INVALID_VALUE;
    *(CUdeviceptr *)data = p;
    return E_SUCCESS;
  case 4: /* HOST_POINTER */
    if (!r || dev) return E_INVALID_VALUE;
    *(void **)data = (void *)(uintptr_t)p;
    return E_SUCCESS;
  case 8: /* IS_MANAGED */
    if (!r) return E_INVALID_VALUE;
    *(unsigned char *)data = r->kind == R_MANAGED;
    return E_SUCCESS;
  case 6: /* SYNC_MEMOPS */
  case 10: /* IS_LEGACY_CUDA_IPC_CAPABLE */
    if (!r) return E_INVALID_VALUE;
    *(unsigned char *)data = 0;
    return E_SUCCESS;
  case 13: /* MAPPED */
    if (!r) return E_INVALID_VALUE;
    *(unsigned char *)data = 1;
    return E_SUCCESS;
  case 7: /* BUFFER_ID */
    if (!r) return E_INVALID_VALUE;
    *(unsigned long long *)data = r->id;
    return E_SUCCESS;
  case 9: /* DEVICE_ORDINAL */
    if (!r) return E_INVALID_VALUE;
    *(int *)data = 0;
    return E_SUCCESS;
  case 11: /* RANGE_START_ADDR */
    if (!r) return E_INVALID_VALUE;
    *(CUdeviceptr *)data = r->base;
    return E_SUCCESS;
  case 12: /* RANGE_SIZE */
    if (!r) return E_INVALID_VALUE;
    *(size_t *)data = r->size;
    return E_SUCCESS;
  default:
    return E_INVALID_VALUE;
  }
}
static CUresult i_ptr_get_attr(void *data, int attr, CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  return ptr_attr(data, attr, p);
}
static size_t ptr_attr_size(int attr) {
  switch (attr) {
  case 2: case 9: return 4;
  case 6: case 8: case 10: case 13: return 1;
  default: return 8;
  }
}
static CUresult i_ptr_get_attrs(unsigned n, int *attrs, void **data, CUdeviceptr p) {
  struct fc_ctx *c;
  if (n && (!attrs || !data)) return E_INVALID_VALUE;
  NEED_CTX(c);
  int known = region_find(p) >= 0;
  for (unsigned k = 0; k < n; k++) {
    if (!data[k]) continue;
    int a = attrs[k];
    if (a < 1 || a > 13 || a == 5) return E_INVALID_VALUE;
    if (!known) {
      memset(data[k], 0, ptr_attr_size(a)); /* unknown pointer: zeros, MEMORY_TYPE 0 */
      continue;
    }
    CUresult e = ptr_attr(data[k], a, p);
    if (e) memset(data[k], 0, ptr_attr_size(a));
  }
  return E_SUCCESS;
}

/* ---- copies and memsets ---- */

/* dst_dev/src_dev: 1 = must be device-accessible, 0 = host, -1 = either (UVA) */
static CUresult copy_run(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n) {
  if (dst_dev == 1 || (dst_dev < 0 && (region_find(dst) >= 0 || in_device_va(dst))))
    if (!range_ok(dst, n, 2)) return E_INVALID_VALUE;
  if (src_dev == 1 || (src_dev < 0 && (region_find(src) >= 0 || in_device_va(src))))
    if (!range_ok(src, n, 1)) return E_INVALID_VALUE;
  memmove((void *)dst, (const void *)src, n);
  return E_SUCCESS;
}
static CUresult copy_checked(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n,
                             CUstream s, int check_stream) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (check_stream) {
    CUresult e = chk_stream(s);
    if (e) return e;
  } else {
    NO_STRICT_CAPTURE();
    busy_done(NULL, ~0ull); /* a blocking copy waits for the legacy stream */
  }
  if (n == 0) return E_SUCCESS;
  if (!dst || !src) return E_INVALID_VALUE;
  struct fc_graph *g = check_stream ? stream_graph(s) : NULL;
  if (g) { /* captured: the source is read when the graph runs, as with the real driver */
    struct fc_node *nd = graph_add(g);
    nd->kind = N_COPY;
    nd->dst = dst;
    nd->dst_dev = dst_dev;
    nd->src = src;
    nd->src_dev = src_dev;
    nd->n = n;
    return E_SUCCESS;
  }
  CUresult r = copy_run(dst, dst_dev, src, src_dev, n);
  if (r == E_SUCCESS && check_stream) async_copy(n);
  return r;
}
#define H2D(d, s, n, st, chk) copy_checked((uintptr_t)(d), 1, (uintptr_t)(s), 0, (n), (st), (chk))
#define D2H(d, s, n, st, chk) copy_checked((uintptr_t)(d), 0, (uintptr_t)(s), 1, (n), (st), (chk))
#define D2D(d, s, n, st, chk) copy_checked((uintptr_t)(d), 1, (uintptr_t)(s), 1, (n), (st), (chk))
#define UVA(d, s, n, st, chk) copy_checked((uintptr_t)(d), -1, (uintptr_t)(s), -1, (n), (st), (chk))

static CUresult memset_run(CUdeviceptr d, unsigned v, size_t n, int width) {
  if (!range_ok(d, n * (size_t)width, 2)) return E_INVALID_VALUE;
  if (width == 1) {
    memset((void *)(uintptr_t)d, (int)(v & 0xff), n);
  } else if (width == 2) {
    uint16_t *p = (uint16_t *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++) p[i] = (uint16_t)v;
  } else {
    uint32_t *p = (uint32_t *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++) p[i] = v;
  }
  return E_SUCCESS;
}
static CUresult memset_checked(CUdeviceptr d, unsigned v, size_t n, int width, CUstream s, int check_stream) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (check_stream) {
    CUresult e = chk_stream(s);
    if (e) return e;
  } else {
    NO_STRICT_CAPTURE();
  }
  if (n == 0) return E_SUCCESS;
  if (d % (unsigned)width) return E_INVALID_VALUE;
  if (n > SIZE_MAX / (size_t)width) return E_INVALID_VALUE;
  struct fc_graph *g = check_stream ? stream_graph(s) : NULL;
  if (g) {
    struct fc_node *nd = graph_add(g);
    nd->kind = N_MEMSET;
    nd->dst = d;
    nd->v = v;
    nd->n = n;
    nd->width = width;
    return E_SUCCESS;
  }
  return memset_run(d, v, n, width);
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                */
/* ------------------------------------------------------------------------ */

static CUresult chk_prop(const CUmemAllocationProp *prop) {
  if (!prop) return E_INVALID_VALUE;
  if (prop->type != 1 || prop->location.type != 1) return E_INVALID_VALUE;
  if (prop->location.id != 0) return E_INVALID_DEVICE;
  return E_SUCCESS;
}
static CUresult i_mem_granularity(size_t *g, const CUmemAllocationProp *prop, int option) {
  if (!g || option < 0 || option > 1) return E_INVALID_VALUE;
  CUresult e = chk_prop(prop);
  if (e) return e;
  *g = FC_GRAN;
  return E_SUCCESS;
}
static CUresult i_mem_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                              unsigned long long flags) {
  if (!ptr || size == 0 || size % FC_GRAN || flags != 0) return E_INVALID_VALUE;
  if (align & (align - 1)) return E_INVALID_VALUE;
  NO_STRICT_CAPTURE();
  if (align < FC_GRAN) align = FC_GRAN;
  uintptr_t got = 0, end;
  if (addr && addr % 4096 == 0 && addr + size > addr && addr + size <= FC_VA_LIMIT &&
      !known_overlap(addr, size, &end)) {
    void *p = mmap((void *)(uintptr_t)addr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == (void *)(uintptr_t)addr) got = addr;
    else if (p != MAP_FAILED) munmap(p, size);
  }
  /* The address is only a hint.  A hint we cannot honour goes to a separate
   * space so that it does not land on the next address a replayer asks for. */
  if (!got) got = va_map(addr ? &g_fb : &g_dev, size, align, PROT_NONE);
  if (!got) return E_OUT_OF_MEMORY;
  GROW(g_rv, g_nrv, g_caprv);
  g_rv[g_nrv].base = got;
  g_rv[g_nrv].size = size;
  g_nrv++;
  *ptr = got;
  return E_SUCCESS;
}
static void vmm_drop_region(size_t i, int restore) {
  struct region *r = &g_reg[i];
  if (restore)
    mmap((void *)r->base, r->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  struct fc_vmem *vm = r->vm;
  region_del(i);
  vm->maps--;
  vmem_maybe_free(vm);
}
static CUresult i_mem_addr_free(CUdeviceptr ptr, size_t size) {
  long k = resv_find_exact(ptr, size);
  if (k < 0) return E_INVALID_VALUE;
  for (size_t i = g_nreg; i-- > 0;)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) vmm_drop_region(i, 0);
  munmap((void *)(uintptr_t)ptr, size);
  g_rv[k] = g_rv[--g_nrv];
  return E_SUCCESS;
}
static CUresult i_mem_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags) {
  if (!h || flags != 0) return E_INVALID_VALUE;
  CUresult e = chk_prop(prop);
  if (e) return e;
  if (size == 0 || size % FC_GRAN) return E_INVALID_VALUE;
  NO_STRICT_CAPTURE();
  if (size > g_total || g_used + size > g_total) return E_OUT_OF_MEMORY;
  int fd = memfd_create("hrr-fake-cuda-vmm", MFD_CLOEXEC);
  if (fd < 0) return E_OUT_OF_MEMORY;
  if (ftruncate(fd, (off_t)size) != 0) { close(fd); return E_OUT_OF_MEMORY; }
  struct fc_vmem *vm = calloc(1, sizeof *vm);
  if (!vm) { close(fd); return E_OUT_OF_MEMORY; }
  vm->fd = fd;
  vm->size = size;
  obj_add(vm, T_VMEM);
  g_used += size;
  *h = (CUmemGenericAllocationHandle)(uintptr_t)vm;
  return E_SUCCESS;
}
static struct fc_vmem *vmem_get(CUmemGenericAllocationHandle h) {
  struct fc_vmem *vm = (struct fc_vmem *)(uintptr_t)h;
  return obj_is(vm, T_VMEM) ? vm : NULL;
}
static CUresult i_mem_release(CUmemGenericAllocationHandle h) {
  struct fc_vmem *vm = vmem_get(h);
  if (!vm || vm->released) return E_INVALID_VALUE;
  vm->released = 1;
  vmem_maybe_free(vm);
  return E_SUCCESS;
}
static CUresult i_mem_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                          unsigned long long flags) {
  struct fc_vmem *vm = vmem_get(h);
  if (flags != 0 || !vm || vm->released) return E_INVALID_VALUE;
  if (size == 0 || size % FC_GRAN || offset % FC_GRAN || ptr % FC_GRAN) return E_INVALID_VALUE;
  NO_STRICT_CAPTURE();
  if (offset > vm->size || size > vm->size - offset) return E_INVALID_VALUE;
  if (resv_containing(ptr, size) < 0) return E_INVALID_VALUE;
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) return E_INVALID_VALUE;
  void *p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, vm->fd, (off_t)offset);
  if (p == MAP_FAILED) return E_OUT_OF_MEMORY;
  region_add(ptr, size, R_VMM, 0, NULL, 0, vm);
  vm->maps++;
  return E_SUCCESS;
}
/* Collect the VMM mappings that exactly tile [ptr, ptr+size); 0 if they don't. */
static int vmm_tiles(CUdeviceptr ptr, size_t size) {
  uintptr_t p = ptr, end = ptr + size;
  if (size == 0 || end < p) return 0;
  while (p < end) {
    long i = region_find(p);
    if (i < 0 || g_reg[i].kind != R_VMM || g_reg[i].base != p || g_reg[i].base + g_reg[i].size > end) return 0;
    p += g_reg[i].size;
  }
  return 1;
}
static CUresult i_mem_unmap(CUdeviceptr ptr, size_t size) {
  if (!vmm_tiles(ptr, size)) return E_INVALID_VALUE;
  busy_unmapped(ptr, size);
  for (size_t i = g_nreg; i-- > 0;)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) vmm_drop_region(i, 1);
  return E_SUCCESS;
}
static CUresult i_mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  if (!desc || count == 0) return E_INVALID_VALUE;
  int flags = 0;
  for (size_t k = 0; k < count; k++) {
    if (desc[k].location.type != 1) return E_INVALID_VALUE;
    if (desc[k].location.id != 0) return E_INVALID_DEVICE;
    if (desc[k].flags != 0 && desc[k].flags != 1 && desc[k].flags != 3) return E_INVALID_VALUE;
    flags = desc[k].flags;
  }
  if (!vmm_tiles(ptr, size)) return E_INVALID_VALUE;
  int prot = flags == 3 ? PROT_READ | PROT_WRITE : flags == 1 ? PROT_READ : PROT_NONE;
  if (mprotect((void *)(uintptr_t)ptr, size, prot) != 0) return E_INVALID_VALUE;
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) g_reg[i].access = flags;
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Code: images, modules, libraries, functions, kernels                     */
/* ------------------------------------------------------------------------ */

enum { K_NONE = 0, K_AXPY, K_FILL_U32, K_GATHER, K_ADD_GLOBAL, K_SPIN, K_FAULT, K_TEX_FETCH, K_SURF_WRITE, K_NOISY, K_AXMY, K_AXPY_PARAMS, K_NOOP };

struct fc_param { unsigned off, size; };

static const struct builtin {
  const char *name;
  int kid;
  int np;
  struct fc_param p[4];
} k_builtins[] = {
  {"axpy", K_AXPY, 4, {{0, 4}, {8, 8}, {16, 8}, {24, 4}}},
  {"fill_u32", K_FILL_U32, 3, {{0, 8}, {8, 4}, {16, 8}}},
  {"gather", K_GATHER, 3, {{0, 8}, {8, 8}, {16, 4}}},
  {"add_global", K_ADD_GLOBAL, 2, {{0, 8}, {8, 4}}},
  {"spin", K_SPIN, 0, {{0, 0}}},   /* never finishes: every later wait blocks */
  {"fault", K_FAULT, 0, {{0, 0}}}, /* faults: every later wait fails with 700 */
  /* tex_fetch(CUtexObject t, void *out, int n): out[i] = element i of t's resource */
  {"tex_fetch", K_TEX_FETCH, 3, {{0, 8}, {8, 8}, {16, 4}}},
  /* surf_write(CUsurfObject s, unsigned v, int n): element i (4 bytes) of s's array = v + i */
  {"surf_write", K_SURF_WRITE, 3, {{0, 8}, {8, 4}, {12, 4}}},
  {"noisy", K_NOISY, 2, {{0, 8}, {8, 8}}}, /* half of its output differs from run to run */
  {"axmy", K_AXMY, 4, {{0, 4}, {8, 8}, {16, 8}, {24, 4}}}, /* y = a*x - y: axpy's layout, another result */
  /* axpy_params(struct {float a; int n; float *x, *y;}): axpy with its pointers inside one
   * by-value struct, as cuBLAS passes its parameters */
  {"axpy_params", K_AXPY_PARAMS, 1, {{0, 24}}},
  {"hrr_noise", K_NOOP, 1, {{0, 8}}}, /* hrr-playback's own noise kernel (--perturb): spins, here nothing */
  {"idle", K_NOOP, 1, {{0, 8}}},      /* does nothing (the `launches` mode: replay's cost per launch) */
};

#define FATTR_N 16
struct fc_func {
  struct fc_module *mod;
  struct fc_kernel *kern; /* CUkernel for this function, made on demand */
  char *name;
  int kid;
  int np;
  struct fc_param p[FC_MAX_PARAMS];
  int attr[FATTR_N];
  int cache;
};
struct fc_global {
  char *name;
  uintptr_t ptr;
  size_t size;
};
struct fc_module {
  struct fc_library *lib; /* owning library, or NULL for cuModuleLoad* modules */
  int nf, capf;
  struct fc_func **f;
  int ng, capg;
  struct fc_global *g;
};
struct fc_library {
  struct fc_module *mod;
};
struct fc_kernel {
  struct fc_library *lib;
  struct fc_func *fn;
};

static int bytes_are(const unsigned char *p, const unsigned char *m, int n) {
  for (int i = 0; i < n; i++)
    if (p[i] != m[i]) return 0; /* stops at the first mismatch: safe on short strings */
  return 1;
}

/* Find the module text inside an image: fatbin wrapper -> fatbin -> payload,
 * bare fatbin -> payload, or NUL-terminated text. */
static CUresult image_text(const void *image, const char **text, size_t *len) {
  static const unsigned char k_wrap[4] = {0xB1, 0x43, 0x62, 0x46};  /* 0x466243B1 */
  static const unsigned char k_fatb[4] = {0x50, 0xED, 0x55, 0xBA};  /* 0xBA55ED50 */
  static const unsigned char k_elf[4] = {0x7F, 'E', 'L', 'F'};
  const unsigned char *p = image;
  if (!p) return E_INVALID_VALUE;
  if (bytes_are(p, k_wrap, 4)) {
    const void *data;
    memcpy(&data, p + 8, sizeof data);
    if (!data || !bytes_are(data, k_fatb, 4)) return E_INVALID_IMAGE;
    p = data;
  }
  if (bytes_are(p, k_fatb, 4)) {
    uint16_t hs;
    uint64_t fs;
    memcpy(&hs, p + 6, 2);
    memcpy(&fs, p + 8, 8);
    if (hs < 16 || fs == 0 || fs > ((uint64_t)1 << 32)) return E_INVALID_IMAGE;
    *text = (const char *)p + hs;
    *len = (size_t)fs;
    return E_SUCCESS;
  }
  if (bytes_are(p, k_elf, 4)) return E_INVALID_IMAGE; /* real cubins cannot run here */
  size_t n = strlen((const char *)p);
  if (n == 0) return E_INVALID_IMAGE;
  for (size_t i = 0; i < n; i++)
    if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] >= 0x7f) return E_INVALID_IMAGE;
  *text = (const char *)p;
  *len = n;
  return E_SUCCESS;
}

static void func_default_attrs(struct fc_func *f) {
  static const int d[FATTR_N] = {1024, 0, 0, 0, 32, 90, 90, 0, 49152, -1, 0, 0, 0, 0, 0, 0};
  memcpy(f->attr, d, sizeof d);
}

static CUresult mod_add_func(struct fc_module *m, const char *name, char **ptok, int npt) {
  if (strlen(name) > FC_NAME_MAX) return E_INVALID_IMAGE;
  for (int i = 0; i < m->nf; i++)
    if (!strcmp(m->f[i]->name, name)) return E_SUCCESS;
  struct fc_func *f = calloc(1, sizeof *f);
  if (!f) return E_OUT_OF_MEMORY;
  f->mod = m;
  f->name = strdup(name);
  func_default_attrs(f);
  /* `.entry NAME =BUILTIN`: a kernel of that name that behaves as BUILTIN (a replacement
   * kernel with another behaviour, as a recompiled fix would be). */
  const char *as = name;
  if (npt > 0 && ptok[0][0] == '=') {
    as = ptok[0] + 1;
    ptok++;
    npt--;
  }
  for (size_t b = 0; b < sizeof k_builtins / sizeof k_builtins[0]; b++)
    if (!strcmp(k_builtins[b].name, as)) {
      f->kid = k_builtins[b].kid;
      f->np = k_builtins[b].np;
      memcpy(f->p, k_builtins[b].p, sizeof k_builtins[b].p);
    }
  if (f->kid == K_NONE) {
    /* Other kernels may declare their layout: `.entry NAME SIZE@OFFSET ...`. */
    for (int i = 0; i < npt && f->np < FC_MAX_PARAMS; i++) {
      unsigned sz, off;
      char extra;
      if (sscanf(ptok[i], "%u@%u%c", &sz, &off, &extra) != 2 || sz == 0 || off + sz > FC_PARAM_BUF) break;
      f->p[f->np].size = sz;
      f->p[f->np].off = off;
      f->np++;
    }
  }
  if (m->nf >= m->capf) {
    size_t cap = (size_t)m->capf;
    m->f = xgrow(m->f, &cap, sizeof *m->f);
    m->capf = (int)cap;
  }
  m->f[m->nf++] = f;
  obj_add(f, T_FUNC);
  return E_SUCCESS;
}

static CUresult mod_add_global(struct fc_module *m, const char *name, size_t size) {
  if (strlen(name) > FC_NAME_MAX || size == 0 || size > ((size_t)64 << 20)) return E_INVALID_IMAGE;
  for (int i = 0; i < m->ng; i++)
    if (!strcmp(m->g[i].name, name)) return E_SUCCESS;
  if (g_used + size > g_total) return E_OUT_OF_MEMORY;
  size_t charged = 0;
  uintptr_t p = dev_alloc(&g_glob, size, &charged);
  if (!p) return E_OUT_OF_MEMORY;
  region_add(p, size, R_GLOBAL, 3, NULL, charged, NULL);
  g_used += charged;
  if (m->ng >= m->capg) {
    size_t cap = (size_t)m->capg;
    m->g = xgrow(m->g, &cap, sizeof *m->g);
    m->capg = (int)cap;
  }
  m->g[m->ng].name = strdup(name);
  m->g[m->ng].ptr = p;
  m->g[m->ng].size = size;
  m->ng++;
  return E_SUCCESS;
}

static void mod_free(struct fc_module *m) {
  for (int i = 0; i < m->nf; i++) {
    struct fc_func *f = m->f[i];
    if (f->kern) {
      obj_del(f->kern);
      free(f->kern);
    }
    obj_del(f);
    free(f->name);
    free(f);
  }
  for (int i = 0; i < m->ng; i++) {
    long r = region_find_base(m->g[i].ptr, R_GLOBAL);
    if (r >= 0) {
      g_used -= g_reg[r].charged;
      region_del((size_t)r);
    }
    dev_release(m->g[i].ptr);
    free(m->g[i].name);
  }
  free(m->f);
  free(m->g);
  obj_del(m);
  free(m);
}

#define TOK_DELIMS " \t\r(),;{}[]"
static CUresult mod_parse(struct fc_module *m, const char *text, size_t len) {
  char *buf = malloc(len + 1);
  if (!buf) return E_OUT_OF_MEMORY;
  memcpy(buf, text, len);
  buf[len] = 0; /* parsing also stops at an earlier NUL (fatbin padding) */
  CUresult e = E_SUCCESS;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line && !e; line = strtok_r(NULL, "\n", &save)) {
    char *tok[48], *s2 = NULL;
    int nt = 0;
    for (char *t = strtok_r(line, TOK_DELIMS, &s2); t && nt < 48; t = strtok_r(NULL, TOK_DELIMS, &s2)) tok[nt++] = t;
    if (nt == 0 || !strncmp(tok[0], "//", 2)) continue;
    for (int i = 0; i < nt; i++) {
      if (!strcmp(tok[i], ".entry")) {
        if (i + 1 < nt) e = mod_add_func(m, tok[i + 1], tok + i + 2, nt - i - 2);
        break;
      }
      if (!strcmp(tok[i], ".global")) {
        if (i + 2 < nt && tok[i + 1][0] != '.') {
          char *endp;
          unsigned long long sz = strtoull(tok[i + 2], &endp, 0);
          if (*endp == 0 && sz > 0) e = mod_add_global(m, tok[i + 1], (size_t)sz);
        }
        break;
      }
    }
  }
  free(buf);
  return e;
}

static CUresult mod_from_image(const void *image, struct fc_library *lib, struct fc_module **out) {
  const char *text;
  size_t len;
  CUresult e = image_text(image, &text, &len);
  if (e) return e;
  struct fc_module *m = calloc(1, sizeof *m);
  if (!m) return E_OUT_OF_MEMORY;
  m->lib = lib;
  obj_add(m, T_MOD);
  e = mod_parse(m, text, len);
  if (e) {
    mod_free(m);
    return e;
  }
  *out = m;
  return E_SUCCESS;
}

static CUresult i_module_load_data(CUmodule *pm, const void *image) {
  struct fc_ctx *c;
  if (!pm || !image) return E_INVALID_VALUE;
  NEED_CTX(c);
  return mod_from_image(image, NULL, pm);
}
static CUresult i_module_load(CUmodule *pm, const char *path) {
  struct fc_ctx *c;
  if (!pm || !path) return E_INVALID_VALUE;
  NEED_CTX(c);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return E_FILE_NOT_FOUND;
  off_t fsize = lseek(fd, 0, SEEK_END);
  if (fsize <= 0 || fsize > (1 << 30) || lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return E_INVALID_IMAGE;
  }
  size_t n = (size_t)fsize, got = 0;
  char *buf = calloc(1, n + 16);
  if (!buf) { close(fd); return E_OUT_OF_MEMORY; }
  while (got < n) {
    ssize_t k = read(fd, buf + got, n - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  CUresult e = got == n ? mod_from_image(buf, NULL, pm) : E_INVALID_IMAGE;
  free(buf);
  return e;
}
static CUresult i_module_unload(CUmodule m) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(m, T_MOD) || m->lib) return E_INVALID_HANDLE;
  mod_free(m);
  return E_SUCCESS;
}
static struct fc_func *mod_find_func(struct fc_module *m, const char *name) {
  for (int i = 0; i < m->nf; i++)
    if (!strcmp(m->f[i]->name, name)) return m->f[i];
  return NULL;
}
static struct fc_global *mod_find_global(struct fc_module *m, const char *name) {
  for (int i = 0; i < m->ng; i++)
    if (!strcmp(m->g[i].name, name)) return &m->g[i];
  return NULL;
}
static CUresult i_module_get_function(CUfunction *pf, CUmodule m, const char *name) {
  struct fc_ctx *c;
  if (!pf || !name) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (!obj_is(m, T_MOD)) return E_INVALID_HANDLE;
  struct fc_func *f = mod_find_func(m, name);
  if (!f) return E_NOT_FOUND;
  *pf = f;
  return E_SUCCESS;
}
static CUresult global_out(struct fc_module *m, const char *name, CUdeviceptr *dptr, size_t *bytes) {
  struct fc_global *g = mod_find_global(m, name);
  if (!g) return E_NOT_FOUND;
  if (dptr) *dptr = g->ptr;
  if (bytes) *bytes = g->size;
  return E_SUCCESS;
}
static CUresult i_module_get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  struct fc_ctx *c;
  if (!name) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (!obj_is(m, T_MOD)) return E_INVALID_HANDLE;
  return global_out(m, name, dptr, bytes);
}

static CUresult i_library_load_data(CUlibrary *pl, const void *code) {
  if (!pl || !code) return E_INVALID_VALUE;
  struct fc_library *l = calloc(1, sizeof *l);
  if (!l) return E_OUT_OF_MEMORY;
  CUresult e = mod_from_image(code, l, &l->mod);
  if (e) {
    free(l);
    return e;
  }
  obj_add(l, T_LIB);
  *pl = l;
  return E_SUCCESS;
}
static CUresult i_library_unload(CUlibrary l) {
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  mod_free(l->mod);
  obj_del(l);
  free(l);
  return E_SUCCESS;
}
static CUresult i_library_get_kernel(CUkernel *pk, CUlibrary l, const char *name) {
  if (!pk || !name) return E_INVALID_VALUE;
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  struct fc_func *f = mod_find_func(l->mod, name);
  if (!f) return E_NOT_FOUND;
  if (!f->kern) {
    struct fc_kernel *k = calloc(1, sizeof *k);
    if (!k) return E_OUT_OF_MEMORY;
    k->lib = l;
    k->fn = f;
    f->kern = k;
    obj_add(k, T_KERN);
  }
  *pk = f->kern;
  return E_SUCCESS;
}
static CUresult i_library_get_module(CUmodule *pm, CUlibrary l) {
  struct fc_ctx *c;
  if (!pm) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  *pm = l->mod;
  return E_SUCCESS;
}
static CUresult i_library_get_global(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name) {
  struct fc_ctx *c;
  if (!name) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  return global_out(l->mod, name, dptr, bytes);
}
static CUresult i_kernel_get_function(CUfunction *pf, CUkernel k) {
  struct fc_ctx *c;
  if (!pf) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  *pf = k->fn;
  return E_SUCCESS;
}

/* CUfunction or CUkernel (both accepted where CUDA 12 accepts both) */
static struct fc_func *func_or_kernel(const void *h) {
  switch (obj_type(h)) {
  case T_FUNC: return (struct fc_func *)h;
  case T_KERN: return ((const struct fc_kernel *)h)->fn;
  default: return NULL;
  }
}

static CUresult fattr_get(struct fc_func *f, int *pi, int a) {
  if (!pi || a < 0 || a >= FATTR_N) return E_INVALID_VALUE;
  *pi = f->attr[a];
  return E_SUCCESS;
}
static CUresult fattr_set(struct fc_func *f, int a, int v) {
  switch (a) {
  case 8: /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    if (v < 0 || v > 232448) return E_INVALID_VALUE;
    break;
  case 9: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
    if (v < -1 || v > 100) return E_INVALID_VALUE;
    break;
  case 11: case 12: case 13: case 14: case 15:
    if (v < 0) return E_INVALID_VALUE;
    break;
  default:
    return E_INVALID_VALUE;
  }
  f->attr[a] = v;
  return E_SUCCESS;
}
static CUresult i_func_get_attr(int *pi, int a, CUfunction h) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  return fattr_get(f, pi, a);
}
static CUresult i_func_set_attr(CUfunction h, int a, int v) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  return fattr_set(f, a, v);
}
static CUresult i_func_set_cache(CUfunction h, int cfg) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  if (cfg < 0 || cfg > 3) return E_INVALID_VALUE;
  f->cache = cfg;
  return E_SUCCESS;
}
static CUresult i_kernel_get_attr(int *pi, int a, CUkernel k, CUdevice d) {
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  return fattr_get(k->fn, pi, a);
}
static CUresult i_kernel_set_attr(int a, int v, CUkernel k, CUdevice d) {
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  return fattr_set(k->fn, a, v);
}
static CUresult param_info(struct fc_func *f, size_t idx, size_t *off, size_t *size) {
  if (idx >= (size_t)f->np) return E_INVALID_VALUE;
  if (off) *off = f->p[idx].off;
  if (size) *size = f->p[idx].size;
  return E_SUCCESS;
}
/* Strict like the real driver: a CUkernel is not a CUfunction here. */
static CUresult i_func_param_info(CUfunction h, size_t idx, size_t *off, size_t *size) {
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  return param_info(h, idx, off, size);
}
static CUresult i_kernel_param_info(CUkernel k, size_t idx, size_t *off, size_t *size) {
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  return param_info(k->fn, idx, off, size);
}
static CUresult i_func_get_name(const char **name, CUfunction h) {
  if (!name) return E_INVALID_VALUE;
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  *name = h->name;
  return E_SUCCESS;
}
static CUresult i_func_get_module(CUmodule *pm, CUfunction h) {
  if (!pm) return E_INVALID_VALUE;
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  *pm = h->mod;
  return E_SUCCESS;
}
static CUresult i_module_enumerate(CUfunction *fns, unsigned n, CUmodule m) {
  if (!fns) return E_INVALID_VALUE;
  if (!obj_is(m, T_MOD)) return E_INVALID_HANDLE;
  if (n > (unsigned)m->nf) return E_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) fns[i] = m->f[i];
  return E_SUCCESS;
}
static CUresult i_library_get_kernel(CUkernel *pk, CUlibrary l, const char *name);
static CUresult i_library_enumerate(CUkernel *ks, unsigned n, CUlibrary l) {
  if (!ks) return E_INVALID_VALUE;
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  if (n > (unsigned)l->mod->nf) return E_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    CUresult r = i_library_get_kernel(&ks[i], l, l->mod->f[i]->name);
    if (r) return r;
  }
  return E_SUCCESS;
}
/* cuGetExportTable: the real driver's private tables, the way cudart and libraries such as
 * cuFFT reach driver internals. The fake has one, whatever the id: a size word, then a function
 * looking a function up in a module, a path to a CUfunction that capture cannot see. */
static CUresult i_module_get_function(CUfunction *pf, CUmodule m, const char *name);
static CUresult hidden_get_function(CUfunction *pf, CUmodule m, const char *name) {
  return i_module_get_function(pf, m, name);
}
static const void *k_export_table[] = {(const void *)(2 * sizeof(void *)), (const void *)hidden_get_function};
static CUresult i_get_export_table(const void **table, const CUuuid *id) {
  if (!table || !id) return E_INVALID_VALUE;
  *table = k_export_table;
  return E_SUCCESS;
}
static CUresult i_kernel_get_name(const char **name, CUkernel k) {
  if (!name) return E_INVALID_VALUE;
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  *name = k->fn->name;
  return E_SUCCESS;
}
static CUresult i_occupancy(int *nb, CUfunction h, int block, size_t smem, unsigned flags) {
  if (!nb || block <= 0 || flags > 1) return E_INVALID_VALUE;
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  if (block > 1024 || smem > (size_t)f->attr[8]) {
    *nb = 0;
    return E_SUCCESS;
  }
  *nb = 1;
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Arrays, 2D/3D copies, texture and surface objects                        */
/* ------------------------------------------------------------------------ */

/* An array holds its elements packed (rows of Width elements, Height rows per
 * slice, Depth slices; 0 counts as 1).  Mipmapped arrays own one array per
 * level.  Texture and surface object values start at a base derived from the
 * process id, so a replay gets different values than the recorded run (as a
 * real driver may) and the tools' substitution of values in kernel arguments
 * is exercised ($FAKE_CUDA_OBJECT_BASE fixes the first value instead).  Resource
 * view descriptors are accepted and not applied. */

typedef struct { size_t Width, Height; int Format; unsigned NumChannels; } CUDA_ARRAY_DESCRIPTOR;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } CUDA_ARRAY3D_DESCRIPTOR;
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
/* CUDA_MEMCPY3D: defined with the graph types above */
typedef struct {
  int resType; /* 0 ARRAY, 1 MIPMAPPED_ARRAY, 2 LINEAR, 3 PITCH2D */
  union {
    struct { void *hArray; } array;
    struct { void *hMipmappedArray; } mipmap;
    struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t sizeInBytes; } linear;
    struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t width, height, pitchInBytes; } pitch2D;
    int reserved[32];
  } res;
  unsigned flags;
} CUDA_RESOURCE_DESC;
_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR) == 24, "CUDA_ARRAY_DESCRIPTOR layout");
_Static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR) == 40, "CUDA_ARRAY3D_DESCRIPTOR layout");
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D layout");
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D layout");
_Static_assert(sizeof(CUDA_RESOURCE_DESC) == 144, "CUDA_RESOURCE_DESC layout");

#define MT_HOST 1
#define MT_DEVICE 2
#define MT_ARRAY 3
#define MT_UNIFIED 4
#define ARRAY_SURFACE_LDST 2u

struct fc_mipmap;
struct fc_array {
  size_t w, h, d; /* as created (0: dimension absent) */
  int format;
  unsigned nch, flags;
  size_t elem; /* bytes per element, channels included */
  size_t bytes;
  unsigned char *data;
  struct fc_mipmap *owner; /* level of this mipmapped array, or NULL */
};
struct fc_mipmap {
  unsigned n;
  struct fc_array **lv;
};

static size_t format_bytes(int f) {
  switch (f) {
  case 0x01: case 0x08: return 1;         /* UNSIGNED_INT8, SIGNED_INT8 */
  case 0x02: case 0x09: case 0x10: return 2; /* UNSIGNED_INT16, SIGNED_INT16, HALF */
  case 0x03: case 0x0a: case 0x20: return 4; /* UNSIGNED_INT32, SIGNED_INT32, FLOAT */
  default: return 0;
  }
}
static size_t dim1(size_t v) { return v ? v : 1; }

static CUresult array_new(const CUDA_ARRAY3D_DESCRIPTOR *d, struct fc_mipmap *owner, struct fc_array **out) {
  size_t fb = format_bytes(d->Format);
  if (!fb || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)) return E_INVALID_VALUE;
  if (!d->Width || (d->Depth && !d->Height) || (d->Flags & ~0xfu)) return E_INVALID_VALUE;
  if (d->Width > 65536 || d->Height > 65536 || d->Depth > 4096) return E_INVALID_VALUE;
  size_t elem = fb * d->NumChannels;
  size_t bytes = d->Width * elem * dim1(d->Height) * dim1(d->Depth);
  if (g_used + bytes > g_total) return E_OUT_OF_MEMORY;
  struct fc_array *a = calloc(1, sizeof *a);
  if (!a) return E_OUT_OF_MEMORY;
  a->data = calloc(1, bytes);
  if (!a->data) {
    free(a);
    return E_OUT_OF_MEMORY;
  }
  a->w = d->Width;
  a->h = d->Height;
  a->d = d->Depth;
  a->format = d->Format;
  a->nch = d->NumChannels;
  a->flags = d->Flags;
  a->elem = elem;
  a->bytes = bytes;
  a->owner = owner;
  g_used += bytes;
  obj_add(a, T_ARRAY);
  *out = a;
  return E_SUCCESS;
}
static void array_free(struct fc_array *a) {
  obj_del(a);
  g_used -= a->bytes;
  free(a->data);
  free(a);
}
static CUresult i_array3d_create(void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  struct fc_ctx *c;
  if (!pa || !d) return E_INVALID_VALUE;
  NEED_CTX(c);
  return array_new(d, NULL, (struct fc_array **)pa);
}
static CUresult i_array_create(void **pa, const CUDA_ARRAY_DESCRIPTOR *d) {
  if (!d) return E_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
  return i_array3d_create(pa, &d3);
}
static CUresult i_array_destroy(void *h) {
  if (!obj_is(h, T_ARRAY) || ((struct fc_array *)h)->owner) return E_INVALID_HANDLE;
  array_free(h);
  return E_SUCCESS;
}
static CUresult i_mipmap_create(void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels) {
  struct fc_ctx *c;
  if (!pm || !d || !levels) return E_INVALID_VALUE;
  NEED_CTX(c);
  size_t big = d->Width > d->Height ? d->Width : d->Height;
  if (d->Depth > big) big = d->Depth;
  unsigned most = 1;
  while (big >> most) most++;
  if (levels > most) return E_INVALID_VALUE;
  struct fc_mipmap *m = calloc(1, sizeof *m);
  if (!m || !(m->lv = calloc(levels, sizeof *m->lv))) {
    free(m);
    return E_OUT_OF_MEMORY;
  }
  obj_add(m, T_MIPMAP);
  CUDA_ARRAY3D_DESCRIPTOR l = *d;
  for (unsigned i = 0; i < levels; i++) {
    CUresult e = array_new(&l, m, &m->lv[i]);
    if (e) {
      for (unsigned k = 0; k < i; k++) array_free(m->lv[k]);
      obj_del(m);
      free(m->lv);
      free(m);
      return e;
    }
    m->n = i + 1;
    l.Width = l.Width > 1 ? l.Width / 2 : 1;
    l.Height = l.Height > 1 ? l.Height / 2 : l.Height;
    l.Depth = l.Depth > 1 ? l.Depth / 2 : l.Depth;
  }
  *pm = m;
  return E_SUCCESS;
}
static CUresult i_mipmap_level(void **pa, void *h, unsigned level) {
  if (!pa || !obj_is(h, T_MIPMAP)) return E_INVALID_HANDLE;
  struct fc_mipmap *m = h;
  if (level >= m->n) return E_INVALID_VALUE;
  *pa = m->lv[level];
  return E_SUCCESS;
}
static CUresult i_mipmap_destroy(void *h) {
  if (!obj_is(h, T_MIPMAP)) return E_INVALID_HANDLE;
  struct fc_mipmap *m = h;
  for (unsigned i = 0; i < m->n; i++) array_free(m->lv[i]);
  obj_del(m);
  free(m->lv);
  free(m);
  return E_SUCCESS;
}

/* ---- 2D/3D copies: each side resolved to a base address, a pitch and a slice height ---- */

struct plan {
  uintptr_t dst, src;
  size_t dpitch, dsh, spitch, ssh;
  size_t w, h, d;
};
static void plan_run(const struct plan *p) {
  for (size_t k = 0; k < p->d; k++)
    for (size_t r = 0; r < p->h; r++)
      memmove((void *)(p->dst + (k * p->dsh + r) * p->dpitch), (const void *)(p->src + (k * p->ssh + r) * p->spitch),
              p->w);
}
/* One side: type, host pointer, device pointer, array, offsets, lod, pitch, slice height.
 * want: 1 read, 2 write (for device range checks). */
static CUresult side_resolve(int type, uintptr_t host, CUdeviceptr dev, void *arr, size_t x, size_t y, size_t z,
                             size_t lod, size_t pitch, size_t sh, const struct plan *p, int want, uintptr_t *base,
                             size_t *opitch, size_t *osh) {
  if (lod) return E_INVALID_VALUE;
  if (type == MT_ARRAY) {
    if (!obj_is(arr, T_ARRAY)) return E_INVALID_HANDLE;
    struct fc_array *a = arr;
    size_t row = a->w * a->elem;
    if (x > row || p->w > row - x || y + p->h > dim1(a->h) || z + p->d > dim1(a->d)) return E_INVALID_VALUE;
    *opitch = row;
    *osh = dim1(a->h);
    *base = (uintptr_t)a->data + x + (y + z * dim1(a->h)) * row;
    return E_SUCCESS;
  }
  uintptr_t ptr;
  int device;
  if (type == MT_HOST) {
    ptr = host;
    device = 0;
  } else if (type == MT_DEVICE) {
    ptr = dev;
    device = 1;
  } else if (type == MT_UNIFIED) {
    ptr = dev;
    device = region_find(dev) >= 0 ? is_device_kind(g_reg[region_find(dev)].kind) : in_device_va(dev);
  } else {
    return E_INVALID_VALUE;
  }
  if (!ptr) return E_INVALID_VALUE;
  if ((p->h > 1 || p->d > 1) && (pitch < p->w || x > pitch - p->w)) return E_INVALID_VALUE;
  if (p->d > 1 && y + p->h > sh) return E_INVALID_VALUE;
  *opitch = pitch;
  *osh = sh;
  *base = ptr + x + (y + z * sh) * pitch;
  size_t span = ((p->d - 1) * sh + (p->h - 1)) * pitch + p->w;
  if (device && !range_ok(*base, span, want)) return E_INVALID_VALUE;
  return E_SUCCESS;
}
static CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream s, int async) {
  struct fc_ctx *ctx;
  if (!c) return E_INVALID_VALUE;
  NEED_CTX(ctx);
  if (async) {
    CUresult e = chk_stream(s);
    if (e) return e;
  } else {
    NO_STRICT_CAPTURE();
  }
  struct plan p = {0, 0, 0, 0, 0, 0, c->WidthInBytes, c->Height, c->Depth};
  if (!p.w || !p.h || !p.d) return E_SUCCESS;
  CUresult e = side_resolve(c->srcMemoryType, (uintptr_t)c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes,
                            c->srcY, c->srcZ, c->srcLOD, c->srcPitch, c->srcHeight, &p, 1, &p.src, &p.spitch, &p.ssh);
  if (!e)
    e = side_resolve(c->dstMemoryType, (uintptr_t)c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY,
                     c->dstZ, c->dstLOD, c->dstPitch, c->dstHeight, &p, 2, &p.dst, &p.dpitch, &p.dsh);
  if (e) return e;
  struct fc_graph *g = async ? stream_graph(s) : NULL;
  if (g) { /* captured: rows are copied when the graph runs */
    struct fc_node *nd = graph_add(g);
    nd->kind = N_PLAN;
    nd->pb = calloc(1, FC_PARAM_BUF);
    if (!nd->pb) abort();
    memcpy(nd->pb, &p, sizeof p);
    return E_SUCCESS;
  }
  plan_run(&p);
  return E_SUCCESS;
}
static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int async) {
  if (!c) return E_INVALID_VALUE;
  CUDA_MEMCPY3D d = {0};
  d.srcXInBytes = c->srcXInBytes;
  d.srcY = c->srcY;
  d.srcMemoryType = c->srcMemoryType;
  d.srcHost = c->srcHost;
  d.srcDevice = c->srcDevice;
  d.srcArray = c->srcArray;
  d.srcPitch = c->srcPitch;
  d.dstXInBytes = c->dstXInBytes;
  d.dstY = c->dstY;
  d.dstMemoryType = c->dstMemoryType;
  d.dstHost = c->dstHost;
  d.dstDevice = c->dstDevice;
  d.dstArray = c->dstArray;
  d.dstPitch = c->dstPitch;
  d.WidthInBytes = c->WidthInBytes;
  d.Height = c->Height;
  d.Depth = 1;
  return copy3d(&d, s, async);
}
/* 1D copies to, from and between arrays: a byte offset into the array's packed storage. */
static CUresult array_span(void *h, size_t off, size_t n, uintptr_t *addr) {
  if (!obj_is(h, T_ARRAY)) return E_INVALID_HANDLE;
  struct fc_array *a = h;
  if (off > a->bytes || n > a->bytes - off) return E_INVALID_VALUE;
  *addr = (uintptr_t)a->data + off;
  return E_SUCCESS;
}
/* dst_arr/src_arr: array handles (or NULL: dst/src is a pointer, device when *_dev) */
static CUresult copy_array_1d(void *dst_arr, size_t doff, uintptr_t dst, int dst_dev, void *src_arr, size_t soff,
                              uintptr_t src, int src_dev, size_t n, CUstream s, int async) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = E_SUCCESS;
  if (dst_arr) {
    e = array_span(dst_arr, doff, n, &dst);
    dst_dev = 0; /* array storage: checked above */
  }
  if (!e && src_arr) {
    e = array_span(src_arr, soff, n, &src);
    src_dev = 0;
  }
  if (e) return e;
  return copy_checked(dst, dst_dev, src, src_dev, n, s, async);
}

/* ---- texture and surface objects ---- */

struct fc_texobj {
  unsigned long long id;
  int surf;
  CUDA_RESOURCE_DESC res;
};
static struct fc_texobj *g_tex;
static size_t g_ntex, g_captex;
static unsigned long long g_next_tex;

static struct fc_texobj *tex_find(unsigned long long id, int surf) {
  for (size_t i = 0; i < g_ntex; i++)
    if (g_tex[i].id == id && g_tex[i].surf == surf) return &g_tex[i];
  return NULL;
}
static CUresult res_check(const CUDA_RESOURCE_DESC *r, int surf) {
  if (!r || r->flags) return E_INVALID_VALUE;
  switch (r->resType) {
  case 0:
    if (!obj_is(r->res.array.hArray, T_ARRAY)) return E_INVALID_HANDLE;
    if (surf && !(((struct fc_array *)r->res.array.hArray)->flags & ARRAY_SURFACE_LDST)) return E_INVALID_VALUE;
    return E_SUCCESS;
  case 1:
    if (surf) return E_INVALID_VALUE;
    return obj_is(r->res.mipmap.hMipmappedArray, T_MIPMAP) ? E_SUCCESS : E_INVALID_HANDLE;
  case 2:
    if (surf || !format_bytes(r->res.linear.format) || !r->res.linear.sizeInBytes) return E_INVALID_VALUE;
    return range_ok(r->res.linear.devPtr, r->res.linear.sizeInBytes, 1) ? E_SUCCESS : E_INVALID_VALUE;
  case 3:
    if (surf || !format_bytes(r->res.pitch2D.format) || !r->res.pitch2D.height) return E_INVALID_VALUE;
    if (r->res.pitch2D.pitchInBytes < r->res.pitch2D.width * format_bytes(r->res.pitch2D.format) *
                                          r->res.pitch2D.numChannels)
      return E_INVALID_VALUE;
    return range_ok(r->res.pitch2D.devPtr, r->res.pitch2D.pitchInBytes * r->res.pitch2D.height, 1)
               ? E_SUCCESS
               : E_INVALID_VALUE;
  default:
    return E_INVALID_VALUE;
  }
}
static CUresult obj_create(unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *texdesc, int surf) {
  struct fc_ctx *c;
  if (!po || (!surf && !texdesc)) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = res_check(r, surf);
  if (e) return e;
  if (!g_next_tex) { /* FAKE_CUDA_OBJECT_BASE: a fixed first value (tests) */
    const char *b = getenv("FAKE_CUDA_OBJECT_BASE");
    g_next_tex = b ? strtoull(b, NULL, 0) : 0;
    if (!g_next_tex) g_next_tex = 0x100 + ((unsigned long long)getpid() % 0xfff0) * 0x100;
  }
  GROW(g_tex, g_ntex, g_captex);
  struct fc_texobj *t = &g_tex[g_ntex++];
  t->id = g_next_tex++;
  t->surf = surf;
  t->res = *r;
  *po = t->id;
  return E_SUCCESS;
}
static CUresult obj_destroy(unsigned long long id, int surf) {
  struct fc_texobj *t = tex_find(id, surf);
  if (!t) return E_INVALID_VALUE;
  *t = g_tex[--g_ntex];
  return E_SUCCESS;
}
/* The elements of an object's resource: element i at *base + (i / *row) * *pitch + (i % *row) * *elem. */
static int obj_elems(const struct fc_texobj *t, uintptr_t *base, size_t *elem, size_t *row, size_t *pitch,
                     size_t *count) {
  const CUDA_RESOURCE_DESC *r = &t->res;
  const struct fc_array *a = NULL;
  if (r->resType == 0) a = r->res.array.hArray;
  if (r->resType == 1) a = ((struct fc_mipmap *)r->res.mipmap.hMipmappedArray)->lv[0];
  if (a) {
    if (!obj_is(a, T_ARRAY)) return 0;
    *base = (uintptr_t)a->data;
    *elem = a->elem;
    *row = a->w;
    *pitch = a->w * a->elem;
    *count = a->bytes / a->elem;
    return 1;
  }
  if (r->resType == 2) {
    *base = r->res.linear.devPtr;
    *elem = format_bytes(r->res.linear.format) * r->res.linear.numChannels;
    *row = r->res.linear.sizeInBytes / *elem;
    *pitch = *row * *elem;
    *count = *row;
  } else {
    *base = r->res.pitch2D.devPtr;
    *elem = format_bytes(r->res.pitch2D.format) * r->res.pitch2D.numChannels;
    *row = r->res.pitch2D.width;
    *pitch = r->res.pitch2D.pitchInBytes;
    *count = r->res.pitch2D.width * r->res.pitch2D.height;
  }
  return *elem && *row && range_ok(*base, (*count / *row - 1) * *pitch + *row * *elem, 1);
}

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
static uint8_t noise_byte(void) {
  static unsigned long long base;
  static unsigned launches;
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
  return (uint8_t)(base * 37 + launches++); /* 37 is odd: processes 1..255 apart differ */
}

static CUresult run_kernel(struct fc_func *f, const unsigned char *pb, unsigned long long threads) {
  switch (f->kid) {
  case K_AXPY: {
    float a = RD(float, 0);
    uint64_t x = RD(uint64_t, 8), y = RD(uint64_t, 16);
    unsigned long long n = count_of(RD(int32_t, 24), threads);
    if (!range_ok(x, n * 4, 1) || !range_ok(y, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    const float *X = (const float *)(uintptr_t)x;
    float *Y = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n; i++) Y[i] = a * X[i] + Y[i];
    return E_SUCCESS;
  }
  case K_NOOP:
    return E_SUCCESS;
  case K_AXPY_PARAMS: {
    float a = RD(float, 0);
    unsigned long long n = count_of(RD(int32_t, 4), threads);
    uint64_t x = RD(uint64_t, 8), y = RD(uint64_t, 16);
    if (!range_ok(x, n * 4, 1) || !range_ok(y, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    const float *X = (const float *)(uintptr_t)x;
    float *Y = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n; i++) Y[i] = a * X[i] + Y[i];
    return E_SUCCESS;
  }
  case K_AXMY: {
    float a = RD(float, 0);
    uint64_t x = RD(uint64_t, 8), y = RD(uint64_t, 16);
    unsigned long long n = count_of(RD(int32_t, 24), threads);
    if (!range_ok(x, n * 4, 1) || !range_ok(y, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    const float *X = (const float *)(uintptr_t)x;
    float *Y = (float *)(uintptr_t)y;
    for (unsigned long long i = 0; i < n; i++) Y[i] = a * X[i] - Y[i];
    return E_SUCCESS;
  }
  case K_FILL_U32: {
    uint64_t p = RD(uint64_t, 0);
    uint32_t v = RD(uint32_t, 8);
    uint64_t n64 = RD(uint64_t, 16);
    unsigned long long n = n64 < threads ? n64 : threads;
    if (n > (1ull << 40) || !range_ok(p, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    uint32_t *P = (uint32_t *)(uintptr_t)p;
    for (unsigned long long i = 0; i < n; i++) P[i] = v;
    return E_SUCCESS;
  }
  case K_GATHER: {
    uint64_t t = RD(uint64_t, 0), o = RD(uint64_t, 8);
    unsigned long long n = count_of(RD(int32_t, 16), threads);
    if (!range_ok(t, n * 8, 1) || !range_ok(o, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    const uint64_t *T = (const uint64_t *)(uintptr_t)t;
    for (unsigned long long i = 0; i < n; i++)
      if (!range_ok(T[i], 4, 1)) return E_ILLEGAL_ADDRESS;
    float *O = (float *)(uintptr_t)o;
    for (unsigned long long i = 0; i < n; i++) O[i] = *(const float *)(uintptr_t)T[i];
    return E_SUCCESS;
  }
  case K_ADD_GLOBAL: {
    uint64_t o = RD(uint64_t, 0);
    unsigned long long n = count_of(RD(int32_t, 8), threads);
    struct fc_global *g = mod_find_global(f->mod, "g_bias");
    if (!g || g->size < 4) return E_LAUNCH_FAILED;
    if (!range_ok(o, n * 4, 2)) return E_ILLEGAL_ADDRESS;
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
      if (!range_ok(o, n * elem, 2)) return E_ILLEGAL_ADDRESS;
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
  case K_NOISY: {
    /* noisy(unsigned *out, unsigned long long n): the first half of `out` deterministic, the
       second half (rounded up) a value new at every launch, like a kernel writing a clock or
       an atomic ticket: the program's own nondeterminism, for replay to tell apart. */
    uint64_t p = RD(uint64_t, 0), n64 = RD(uint64_t, 8);
    unsigned long long n = n64 < threads ? n64 : threads;
    if (n > (1ull << 40) || !range_ok(p, n * 4, 2)) return E_ILLEGAL_ADDRESS;
    uint32_t *P = (uint32_t *)(uintptr_t)p;
    uint32_t noise = noise_byte() * 0x01010101u;
    for (unsigned long long i = 0; i < n; i++) P[i] = i < n / 2 ? (uint32_t)i * 2654435761u : noise;
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
static CUresult launch_dims(const struct fc_func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem) {
  if (!gx || !gy || !gz || !bx || !by || !bz) return E_INVALID_VALUE;
  if (gx > 2147483647u || gy > 65535 || gz > 65535) return E_INVALID_VALUE;
  if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024) return E_INVALID_VALUE;
  if (shmem > (unsigned)f->attr[8]) return E_INVALID_VALUE;
  return E_SUCCESS;
}
/* The arguments of a launch (or kernel node), from `params` or `extra`, laid out in pb. */
static CUresult launch_args(const struct fc_func *f, void **params, void **extra, unsigned char *pb) {
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

static CUresult launch(const void *h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shmem, CUstream s, void **params, void **extra) {
  struct fc_ctx *c;
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if ((e = launch_dims(f, gx, gy, gz, bx, by, bz, shmem))) return e;
  unsigned char pb[FC_PARAM_BUF];
  if ((e = launch_args(f, params, extra, pb))) return e;
  struct fc_graph *g = stream_graph(s);
  if (g) { /* captured: arguments are copied now, the kernel runs when the graph does */
    struct fc_node *nd = graph_add(g);
    nd->kind = N_KERNEL;
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

static CUresult launch_ex(const CUlaunchConfig *cfg, const void *h, void **params, void **extra) {
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

static CUresult i_graph_create(CUgraph *pg, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pg || flags) return E_INVALID_VALUE;
  struct fc_graph *g = calloc(1, sizeof *g);
  if (!g) return E_OUT_OF_MEMORY;
  obj_add(g, T_GRAPH);
  *pg = g;
  return E_SUCCESS;
}
static CUresult i_graph_instantiate(CUgraphExec *pe, CUgraph g, cuuint64_t flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pe || flags > 0xf) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  size_t *order = malloc((g->n ? g->n : 1) * sizeof *order);
  if (!order) return E_OUT_OF_MEMORY;
  CUresult e = graph_order(g, order);
  if (e) {
    free(order);
    return e;
  }
  struct fc_gexec *x = calloc(1, sizeof *x);
  if (!x) abort();
  struct fc_graph tmp = {NULL, 0, 0};
  for (size_t k = 0; k < g->n; k++) {
    const struct fc_node *src = &g->nodes[order[k]];
    if (!src->kind) continue; /* destroyed */
    graph_append(&tmp, src, 1);
    tmp.nodes[tmp.n - 1].orig = order[k];
  }
  free(order);
  x->nodes = tmp.nodes;
  x->n = tmp.n;
  x->src = g;
  obj_add(x, T_GEXEC);
  *pe = x;
  return E_SUCCESS;
}
static CUresult i_graph_instantiate_params(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
  if (!p) return E_INVALID_VALUE;
  if ((p->flags & 2) && chk_stream(p->hUploadStream)) return E_INVALID_HANDLE; /* UPLOAD */
  CUresult e = i_graph_instantiate(pe, g, p->flags);
  p->hErrNode_out = NULL;
  p->result_out = e ? 1 : 0; /* CUDA_GRAPH_INSTANTIATE_ERROR / _SUCCESS */
  return e;
}

/* One side of a CUDA_MEMCPY3D: its base address and whether it is device memory (-1: unified,
 * found from the address as copy_checked does). */
static int copy3d_side(int type, const void *host, CUdeviceptr dev, uintptr_t *base, int *is_dev) {
  switch (type) {
  case 1: *base = (uintptr_t)host; *is_dev = 0; return 0;
  case 2: *base = (uintptr_t)dev; *is_dev = 1; return 0;
  case 4: *base = (uintptr_t)dev; *is_dev = -1; return 0;
  default: return -1; /* CUDA arrays are not implemented */
  }
}
static CUresult copy3d_run(const CUDA_MEMCPY3D *p) {
  uintptr_t sb, db;
  int sd, dd;
  if (copy3d_side(p->srcMemoryType, p->srcHost, p->srcDevice, &sb, &sd)) return E_INVALID_VALUE;
  if (copy3d_side(p->dstMemoryType, p->dstHost, p->dstDevice, &db, &dd)) return E_INVALID_VALUE;
  size_t h = p->Height ? p->Height : 1, d = p->Depth ? p->Depth : 1;
  size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes, dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  size_t sh = p->srcHeight ? p->srcHeight : h, dh = p->dstHeight ? p->dstHeight : h;
  for (size_t z = 0; z < d; z++)
    for (size_t y = 0; y < h; y++) {
      uintptr_t so = sb + p->srcXInBytes + ((p->srcZ + z) * sh + p->srcY + y) * sp;
      uintptr_t dof = db + p->dstXInBytes + ((p->dstZ + z) * dh + p->dstY + y) * dp;
      CUresult e = copy_run(dof, dd, so, sd, p->WidthInBytes);
      if (e) return e;
    }
  return E_SUCCESS;
}
static CUresult graph_run(const struct fc_graph *g);
static CUresult node_run(const struct fc_node *nd) {
  CUresult e = E_SUCCESS;
  switch (nd->kind) {
  case N_KERNEL: return run_kernel(nd->f, nd->pb, nd->threads);
  case N_MEMSET:
    for (size_t r = 0; r < (nd->height ? nd->height : 1) && !e; r++)
      e = memset_run(nd->dst + r * nd->pitch, nd->v, nd->n, nd->width);
    return e;
  case N_COPY: return copy_run(nd->dst, nd->dst_dev, nd->src, nd->src_dev, nd->n);
  case N_COPY3D: return copy3d_run(&nd->cp);
  case N_PLAN: plan_run((const struct plan *)nd->pb); return E_SUCCESS;
  case N_HOST: nd->hfn(nd->hdata); return E_SUCCESS; /* host nodes must not call CUDA */
  case N_EVREC:
    if (obj_is(nd->ev, T_EVENT)) nd->ev->recorded = 1;
    return E_SUCCESS;
  case N_CHILD: return graph_run(nd->child);
  case N_COND: return (nd->cond->flags & 1) && nd->cond->dflt ? graph_run(nd->child) : E_SUCCESS;
  case 0: case N_EMPTY: case N_EVWAIT: return E_SUCCESS;
  default: return E_LAUNCH_FAILED;
  }
}
static CUresult graph_run(const struct fc_graph *g) {
  size_t *order = malloc((g->n ? g->n : 1) * sizeof *order);
  if (!order) return E_OUT_OF_MEMORY;
  CUresult e = graph_order(g, order);
  for (size_t k = 0; k < g->n && !e; k++) e = node_run(&g->nodes[order[k]]);
  free(order);
  return e;
}
static CUresult i_graph_launch(CUgraphExec x, CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  CUresult e = chk_stream(s);
  if (e) return e;
  struct fc_graph *g = stream_graph(s);
  if (g) { /* launched into a capture: becomes part of that graph */
    graph_append(g, x->nodes, x->n);
    return E_SUCCESS;
  }
  for (size_t i = 0; i < x->n && !e; i++) e = node_run(&x->nodes[i]);
  return e;
}
static CUresult i_graph_upload(CUgraphExec x, CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  return chk_stream(s);
}
static CUresult i_graph_destroy(CUgraph g) {
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (g->owned) return E_INVALID_VALUE;
  obj_del(g);
  graph_free(g);
  return E_SUCCESS;
}
static CUresult i_graph_exec_destroy(CUgraphExec x) {
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  obj_del(x);
  nodes_free(x->nodes, x->n);
  free(x);
  return E_SUCCESS;
}

/* ---- explicit construction: a node is filled from its parameters, then added ---- */

static CUresult kernel_fill(struct fc_node *nd, const void *fh, const CUDA_KERNEL_NODE_PARAMS *p) {
  struct fc_func *f = func_or_kernel(fh);
  if (!f) return E_INVALID_HANDLE;
  CUresult e = launch_dims(f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                           p->sharedMemBytes);
  if (e) return e;
  unsigned char pb[FC_PARAM_BUF];
  if ((e = launch_args(f, p->kernelParams, p->extra, pb))) return e;
  nd->kind = N_KERNEL;
  nd->f = f;
  nd->threads = (unsigned long long)p->gridDimX * p->blockDimX;
  nd->pb = malloc(FC_PARAM_BUF);
  if (!nd->pb) abort();
  memcpy(nd->pb, pb, FC_PARAM_BUF);
  return E_SUCCESS;
}
/* v2 parameters (func, or kern when func is NULL). */
static CUresult kernel_fill_v2(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS *p) {
  if (!p) return E_INVALID_VALUE;
  return kernel_fill(nd, p->func ? (const void *)p->func : (const void *)p->kern, p);
}
static CUresult kernel_fill_v1(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
  if (!p) return E_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS v2;
  memset(&v2, 0, sizeof v2);
  memcpy(&v2, p, sizeof *p);
  return kernel_fill_v2(nd, &v2);
}
static CUresult memcpy_fill(struct fc_node *nd, const CUDA_MEMCPY3D *p) {
  uintptr_t b;
  int d;
  if (!p || !p->WidthInBytes) return E_INVALID_VALUE;
  if (copy3d_side(p->srcMemoryType, p->srcHost, p->srcDevice, &b, &d) || !b) return E_INVALID_VALUE;
  if (copy3d_side(p->dstMemoryType, p->dstHost, p->dstDevice, &b, &d) || !b) return E_INVALID_VALUE;
  nd->kind = N_COPY3D;
  nd->cp = *p;
  return E_SUCCESS;
}
static CUresult memset_fill(struct fc_node *nd, const CUDA_MEMSET_NODE_PARAMS *p) {
  if (!p || !p->width || !p->height) return E_INVALID_VALUE;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return E_INVALID_VALUE;
  if (p->dst % p->elementSize || (p->height > 1 && p->pitch < p->width * p->elementSize)) return E_INVALID_VALUE;
  nd->kind = N_MEMSET;
  nd->dst = p->dst;
  nd->v = p->value;
  nd->n = p->width;
  nd->width = (int)p->elementSize;
  nd->pitch = p->pitch;
  nd->height = p->height;
  return E_SUCCESS;
}
static CUresult host_fill(struct fc_node *nd, const CUDA_HOST_NODE_PARAMS *p) {
  if (!p || !p->fn) return E_INVALID_VALUE;
  nd->kind = N_HOST;
  nd->hfn = p->fn;
  nd->hdata = p->userData;
  return E_SUCCESS;
}
static CUresult child_fill(struct fc_node *nd, CUgraph child) {
  if (!obj_is(child, T_GRAPH)) return E_INVALID_HANDLE;
  nd->kind = N_CHILD;
  nd->child = graph_dup(child); /* the child graph is cloned, as by the real driver */
  return E_SUCCESS;
}
static CUresult event_fill(struct fc_node *nd, CUevent ev, int kind) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  nd->kind = kind;
  nd->ev = ev;
  return E_SUCCESS;
}
/* A conditional node (IF with one body graph only; WHILE and SWITCH are not implemented). */
static CUresult cond_fill(struct fc_node *nd, const unsigned long long *handle, int type, unsigned size,
                          CUgraph *out) {
  struct fc_cond *c = (struct fc_cond *)(uintptr_t)*handle;
  if (!obj_is(c, T_COND) || !out) return E_INVALID_VALUE;
  if (type != 0 || size != 1) return E_NOT_SUPPORTED;
  struct fc_graph *body = calloc(1, sizeof *body);
  if (!body) abort();
  body->owned = 1;
  obj_add(body, T_GRAPH);
  nd->kind = N_COND;
  nd->cond = c;
  nd->child = body;
  return E_SUCCESS;
}
static CUresult i_cond_handle_create(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx, unsigned dflt,
                                     unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!out || flags > 1) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (!obj_is(ctx, T_CTX)) return E_INVALID_CONTEXT;
  struct fc_cond *h = calloc(1, sizeof *h); /* lives as long as the process (as its graph would) */
  if (!h) abort();
  h->dflt = dflt;
  h->flags = flags;
  obj_add(h, T_COND);
  *out = (CUgraphConditionalHandle)(uintptr_t)h;
  return E_SUCCESS;
}
/* The filled node `nd` (`e`: how filling went) added to g after deps[0..n). */
static CUresult node_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, struct fc_node *nd,
                         CUresult e) {
  struct fc_ctx *c;
  CUresult ce = cur_ctx(&c);
  if (!e) e = ce;
  if (!e && !out) e = E_INVALID_VALUE;
  if (!e && !obj_is(g, T_GRAPH)) e = E_INVALID_HANDLE;
  if (!e && n && !deps) e = E_INVALID_VALUE;
  for (size_t i = 0; i < n && !e; i++)
    if (!obj_is(deps[i], T_GNODE) || deps[i]->g != g) e = E_INVALID_VALUE;
  if (e) {
    node_release(nd);
    return e;
  }
  if (n) {
    nd->deps = malloc(n * sizeof *nd->deps);
    if (!nd->deps) abort();
    for (size_t i = 0; i < n; i++) nd->deps[i] = deps[i]->idx;
    nd->ndeps = n;
  }
  struct fc_nodeh *h = malloc(sizeof *h);
  if (!h) abort();
  h->g = g;
  h->idx = g->n;
  nd->h = h;
  *graph_add(g) = *nd;
  obj_add(h, T_GNODE);
  *out = h;
  return E_SUCCESS;
}
/* The generic CUgraphNodeParams. */
static CUresult node_add_generic(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                 CUgraphNodeParams *p) {
  struct fc_node nd;
  memset(&nd, 0, sizeof nd);
  CUresult e = E_INVALID_VALUE;
  if (p) switch (p->type) {
    case 0: e = kernel_fill_v2(&nd, &p->u.kernel); break;
    case 1: e = memcpy_fill(&nd, &p->u.memcpy.copyParams); break;
    case 2: e = memset_fill(&nd, &p->u.memset.p); break;
    case 3: e = host_fill(&nd, &p->u.host); break;
    case 4: e = child_fill(&nd, p->u.graph.graph); break;
    case 5: nd.kind = N_EMPTY; e = E_SUCCESS; break;
    case 6: e = event_fill(&nd, p->u.event.event, N_EVWAIT); break;
    case 7: e = event_fill(&nd, p->u.event.event, N_EVREC); break;
    case 13: e = cond_fill(&nd, &p->u.conditional.handle, p->u.conditional.type, p->u.conditional.size,
                           p->u.conditional.phGraph_out);
      break;
    default: e = E_NOT_SUPPORTED; break; /* memory nodes are not implemented */
    }
  struct fc_graph *body = nd.kind == N_COND ? nd.child : NULL;
  e = node_add(out, g, deps, n, &nd, e);
  if (!e && body) p->u.conditional.phGraph_out[0] = body;
  return e;
}
#define NODE_ADD(fill) \
  do { struct fc_node nd; memset(&nd, 0, sizeof nd); CUresult e = (fill); return node_add(out, g, deps, n, &nd, e); } while (0)
static CUresult i_add_kernel_v1(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                const CUDA_KERNEL_NODE_PARAMS_v1 *p) { NODE_ADD(kernel_fill_v1(&nd, p)); }
static CUresult i_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_KERNEL_NODE_PARAMS *p) { NODE_ADD(kernel_fill_v2(&nd, p)); }
static CUresult i_add_memcpy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_MEMCPY3D *p, CUcontext ctx) {
  NODE_ADD(obj_is(ctx, T_CTX) ? memcpy_fill(&nd, p) : E_INVALID_CONTEXT);
}
static CUresult i_add_memset(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  NODE_ADD(obj_is(ctx, T_CTX) ? memset_fill(&nd, p) : E_INVALID_CONTEXT);
}
static CUresult i_add_host(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                           const CUDA_HOST_NODE_PARAMS *p) { NODE_ADD(host_fill(&nd, p)); }
static CUresult i_add_empty(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n) {
  NODE_ADD((nd.kind = N_EMPTY, E_SUCCESS));
}
/* Memory alloc/free nodes: the allocation is made when the node is added (its address is the
 * graph's from then on) and kept; both nodes run as empty ones. `p` is a
 * CUDA_MEM_ALLOC_NODE_PARAMS: bytesize at byte 104, dptr (out) at 112. */
static CUresult mem_alloc_fill(struct fc_node *nd, unsigned char *p) {
  if (!p) return E_INVALID_VALUE;
  size_t bytes;
  memcpy(&bytes, p + 104, 8);
  CUdeviceptr d;
  CUresult e = i_mem_alloc(&d, bytes, NULL, 0);
  if (e) return e;
  memcpy(p + 112, &d, 8);
  nd->kind = N_EMPTY;
  return E_SUCCESS;
}
static CUresult i_add_mem_alloc(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, unsigned char *p) {
  NODE_ADD(mem_alloc_fill(&nd, p));
}
static CUresult i_add_mem_free(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d) {
  NODE_ADD((nd.kind = N_EMPTY, d ? E_SUCCESS : E_INVALID_VALUE));
}
static CUresult i_add_event(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUevent ev, int kind) {
  NODE_ADD(event_fill(&nd, ev, kind));
}
static CUresult i_add_child(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child) {
  NODE_ADD(child_fill(&nd, child));
}
static CUresult i_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (n && (!from || !to)) return E_INVALID_VALUE;
  for (size_t i = 0; i < n; i++)
    if (!obj_is(from[i], T_GNODE) || !obj_is(to[i], T_GNODE) || from[i]->g != g || to[i]->g != g ||
        from[i] == to[i])
      return E_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    struct fc_node *t = &g->nodes[to[i]->idx];
    size_t cap = t->ndeps;
    GROW(t->deps, t->ndeps, cap);
    t->deps[t->ndeps++] = from[i]->idx;
  }
  return E_SUCCESS;
}
/* Replace what `dst` does by `nd`'s parameters (same kind; its dependencies, handle and origin
 * stay). */
static CUresult node_set(struct fc_node *dst, struct fc_node *nd, CUresult e) {
  if (!e && dst->kind != nd->kind) e = E_INVALID_VALUE;
  if (e) {
    node_release(nd);
    return e;
  }
  size_t *deps = dst->deps, ndeps = dst->ndeps, orig = dst->orig;
  struct fc_nodeh *h = dst->h;
  dst->deps = NULL;
  node_release(dst);
  *dst = *nd;
  dst->deps = deps;
  dst->ndeps = ndeps;
  dst->orig = orig;
  dst->h = h;
  return E_SUCCESS;
}
/* The graph node of handle h. */
static struct fc_node *graph_node(CUgraphNode h) {
  return obj_is(h, T_GNODE) && obj_is(h->g, T_GRAPH) ? &h->g->nodes[h->idx] : NULL;
}
/* The node of exec x instantiated from graph node h. */
static struct fc_node *exec_node(CUgraphExec x, CUgraphNode h) {
  if (!obj_is(x, T_GEXEC) || !obj_is(h, T_GNODE) || h->g != x->src) return NULL;
  for (size_t i = 0; i < x->n; i++)
    if (x->nodes[i].orig == h->idx) return &x->nodes[i];
  return NULL;
}
#define NODE_SET(target, fill) \
  do { struct fc_node *t__ = (target); if (!t__) return E_INVALID_VALUE; \
       struct fc_node nd; memset(&nd, 0, sizeof nd); CUresult e = (fill); return node_set(t__, &nd, e); } while (0)
static CUresult i_graph_destroy_node(CUgraphNode h) {
  struct fc_node *nd = graph_node(h);
  if (!nd) return E_INVALID_VALUE;
  node_release(nd);
  nd->kind = 0; /* runs as nothing; what depended on it still follows its dependencies */
  nd->h = NULL;
  obj_del(h);
  free(h);
  return E_SUCCESS;
}
static CUresult i_graph_clone(CUgraph *out, CUgraph g) {
  if (!out) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  struct fc_graph *c = graph_dup(g);
  obj_add(c, T_GRAPH);
  *out = c;
  return E_SUCCESS;
}
/* cuGraphExecUpdate: the exec takes g's parameters when g has the same nodes (kinds, in order). */
static CUresult i_graph_exec_update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  if (!obj_is(x, T_GEXEC) || !obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  CUgraphExec y;
  CUresult e = i_graph_instantiate(&y, g, 0);
  if (e) return e;
  int same = y->n == x->n;
  for (size_t i = 0; i < x->n && same; i++) same = x->nodes[i].kind == y->nodes[i].kind;
  if (info) {
    memset(info, 0, sizeof *info);
    info->result = same ? 0 : 3;
  }
  if (same)
    for (size_t i = 0; i < x->n; i++) {
      y->nodes[i].orig = x->nodes[i].orig;
      struct fc_node t = x->nodes[i];
      x->nodes[i] = y->nodes[i];
      y->nodes[i] = t;
    }
  i_graph_exec_destroy(y);
  return same ? E_SUCCESS : E_GRAPH_EXEC_UPDATE_FAILURE;
}

static CUresult hostfn_check(CUstream s, CUhostFn fn) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  return fn ? E_SUCCESS : E_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Exported entry points                                                    */
/* ------------------------------------------------------------------------ */

/* Every export takes the global lock, optionally checks cuInit, runs its
 * implementation and traces.  Each export also gets a hidden alias
 * NAME__self so that cuGetProcAddress hands out this library's own function
 * even when an LD_PRELOAD interposer defines the same name.  Every export
 * (including _ptsz/_ptds/_vN variants) is a distinct function, so dladdr()
 * on a returned pointer names exactly the variant chosen. */
#define DEF_(name, params, call, needinit)                                   \
  FC_EXPORT CUresult name params;                                            \
  CUresult name params {                                                     \
    CUresult r__;                                                            \
    fc_lock();                                                               \
    r__ = ((needinit) && !g_inited) ? E_NOT_INITIALIZED                      \
          : (g_fail && !strcmp(g_fail, #name)) ? E_NOT_SUPPORTED : (call);   \
    fc_unlock();                                                             \
    if (g_trace) fc_trace(#name, r__);                                       \
    return r__;                                                              \
  }                                                                          \
  extern __typeof__(name) name##__self __attribute__((alias(#name), visibility("hidden")));
#define DEF(name, params, call) DEF_(name, params, call, 1)
#define DEF0(name, params, call) DEF_(name, params, call, 0)

/* init / version / errors */
DEF0(cuInit, (unsigned flags), i_init(flags))
DEF0(cuDriverGetVersion, (int *v), i_driver_version(v))
DEF0(cuGetErrorName, (CUresult err, const char **s), i_error_str(err, s, 1))
DEF0(cuGetErrorString, (CUresult err, const char **s), i_error_str(err, s, 0))

/* devices */
DEF(cuDeviceGet, (CUdevice *d, int ordinal), i_device_get(d, ordinal))
DEF(cuDeviceGetCount, (int *n), i_device_count(n))
DEF(cuDeviceGetName, (char *name, int len, CUdevice d), i_device_name(name, len, d))
DEF(cuDeviceGetAttribute, (int *pi, int attrib, CUdevice d), i_device_attr(pi, attrib, d))
DEF(cuDeviceGetUuid, (CUuuid *u, CUdevice d), i_device_uuid(u, d))
DEF(cuDeviceGetUuid_v2, (CUuuid *u, CUdevice d), i_device_uuid(u, d))
DEF(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice d), i_device_total_mem(bytes, d))
DEF(cuDeviceGetPCIBusId, (char *s, int len, CUdevice d), i_device_pci_bus_id(s, len, d))
DEF(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice d), i_primary_retain(pctx, d))
DEF(cuDevicePrimaryCtxRelease, (CUdevice d), i_primary_release(d))
DEF(cuDevicePrimaryCtxRelease_v2, (CUdevice d), i_primary_release(d))
DEF(cuDevicePrimaryCtxGetState, (CUdevice d, unsigned *flags, int *active), i_primary_state(d, flags, active))

/* contexts */
DEF(cuCtxCreate_v2, (CUcontext *pctx, unsigned flags, CUdevice d), i_ctx_create(pctx, flags, d))
DEF(cuCtxCreate_v3, (CUcontext *pctx, void *affinity, int n, unsigned flags, CUdevice d),
    ((void)affinity, (void)n, i_ctx_create(pctx, flags, d)))
DEF(cuCtxCreate_v4, (CUcontext *pctx, void *params, unsigned flags, CUdevice d),
    ((void)params, i_ctx_create(pctx, flags, d)))
DEF(cuCtxDestroy_v2, (CUcontext c), i_ctx_destroy(c))
DEF(cuCtxSetCurrent, (CUcontext c), i_ctx_set_current(c))
DEF(cuCtxGetCurrent, (CUcontext *pc), i_ctx_get_current(pc))
DEF(cuCtxPushCurrent_v2, (CUcontext c), i_ctx_push(c))
DEF(cuCtxPopCurrent_v2, (CUcontext *pc), i_ctx_pop(pc))
DEF(cuCtxGetDevice, (CUdevice *d), i_ctx_get_device(d, NULL))
DEF(cuCtxGetDevice_v2, (CUdevice *d, CUcontext c), i_ctx_get_device(d, c))
DEF(cuCtxSynchronize, (void), i_ctx_sync(NULL))
DEF(cuCtxSynchronize_v2, (CUcontext c), i_ctx_sync(c))
DEF(cuCtxGetLimit, (size_t *v, int limit), i_ctx_get_limit(v, limit))
DEF(cuCtxSetLimit, (int limit, size_t v), i_ctx_set_limit(limit, v))
DEF(cuCtxSetCacheConfig, (int cfg), i_ctx_set_cache(cfg))
DEF(cuCtxGetStreamPriorityRange, (int *least, int *greatest), i_ctx_prio_range(least, greatest))
DEF0(cuModuleGetLoadingMode, (int *mode), i_loading_mode(mode))

/* memory */
DEF(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), i_mem_alloc(p, n, NULL, 0))
DEF(cuMemAllocPitch_v2, (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem),
    i_mem_alloc_pitch(p, pitch, w, h, elem))
DEF(cuMemFree_v2, (CUdeviceptr p), i_mem_free(p, NULL, 0))
DEF(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF(cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF(cuMemFreeAsync, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
DEF(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
DEF(cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned flags), i_mem_alloc_managed(p, n, flags))
DEF(cuMemAllocFromPoolAsync, (CUdeviceptr *p, size_t n, struct fc_pool *pool, CUstream s), i_alloc_from_pool(p, n, pool, s))
DEF(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *p, size_t n, struct fc_pool *pool, CUstream s), i_alloc_from_pool(p, n, pool, s))
DEF(cuMemPoolCreate, (struct fc_pool **p, const CUmemPoolProps *props), i_pool_create(p, props))
DEF(cuMemPoolDestroy, (struct fc_pool *p), i_pool_destroy(p))
DEF(cuMemPoolSetAttribute, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 1))
DEF(cuMemPoolGetAttribute, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 0))
DEF(cuMemPoolTrimTo, (struct fc_pool *p, size_t keep), i_pool_trim(p, keep))
DEF(cuMemPoolSetAccess, (struct fc_pool *p, const CUmemAccessDesc *d, size_t n), i_pool_set_access(p, d, n))
DEF(cuDeviceGetDefaultMemPool, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 1))
DEF(cuDeviceGetMemPool, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 0))
DEF(cuDeviceSetMemPool, (CUdevice d, struct fc_pool *p), i_device_set_pool(d, p))
DEF(cuMemGetInfo_v2, (size_t *fr, size_t *total), i_mem_get_info(fr, total))
DEF(cuMemGetAddressRange_v2, (CUdeviceptr *b, size_t *s, CUdeviceptr p), i_mem_addr_range(b, s, p))
DEF(cuMemHostAlloc, (void **pp, size_t n, unsigned flags), i_host_alloc(pp, n, flags))
DEF(cuMemAllocHost_v2, (void **pp, size_t n), i_host_alloc(pp, n, 0))
DEF(cuMemFreeHost, (void *p), i_host_free(p))
DEF(cuMemHostRegister_v2, (void *p, size_t n, unsigned flags), i_host_register(p, n, flags))
DEF(cuMemHostUnregister, (void *p), i_host_unregister(p))
DEF(cuMemHostGetDevicePointer_v2, (CUdeviceptr *pd, void *p, unsigned flags), i_host_get_dptr(pd, p, flags))
DEF(cuPointerGetAttribute, (void *data, int attr, CUdeviceptr p), i_ptr_get_attr(data, attr, p))
DEF(cuPointerGetAttributes, (unsigned n, int *attrs, void **data, CUdeviceptr p), i_ptr_get_attrs(n, attrs, data, p))

/* copies */
DEF(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), UVA(d, s, n, NULL, 0))
DEF(cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), UVA(d, s, n, NULL, 0))
DEF(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), UVA(d, s, n, st, 1))
DEF(cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), UVA(d, s, n, st, 1))
DEF(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), H2D(d, s, n, NULL, 0))
DEF(cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void *s, size_t n), H2D(d, s, n, NULL, 0))
DEF(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), gpu_wait() ?: D2H(d, s, n, NULL, 0))
DEF(cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n), gpu_wait() ?: D2H(d, s, n, NULL, 0))
DEF(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), D2D(d, s, n, NULL, 0))
DEF(cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), D2D(d, s, n, NULL, 0))
DEF(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream st), H2D(d, s, n, st, 1))
DEF(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void *s, size_t n, CUstream st), H2D(d, s, n, st, 1))
DEF(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st), D2H(d, s, n, st, 1))
DEF(cuMemcpyDtoHAsync_v2_ptsz, (void *d, CUdeviceptr s, size_t n, CUstream st), D2H(d, s, n, st, 1))
DEF(cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), D2D(d, s, n, st, 1))
DEF(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), D2D(d, s, n, st, 1))

/* arrays, 2D/3D copies, texture and surface objects */
DEF(cuArrayCreate_v2, (void **pa, const CUDA_ARRAY_DESCRIPTOR *d), i_array_create(pa, d))
DEF(cuArray3DCreate_v2, (void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d), i_array3d_create(pa, d))
DEF(cuArrayDestroy, (void *a), i_array_destroy(a))
DEF(cuMipmappedArrayCreate, (void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned n), i_mipmap_create(pm, d, n))
DEF(cuMipmappedArrayGetLevel, (void **pa, void *m, unsigned level), i_mipmap_level(pa, m, level))
DEF(cuMipmappedArrayDestroy, (void *m), i_mipmap_destroy(m))
DEF(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream s), copy2d(p, s, 1))
DEF(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *p, CUstream s), copy2d(p, s, 1))
DEF(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), gpu_wait() ?: copy3d(p, NULL, 0))
DEF(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p), gpu_wait() ?: copy3d(p, NULL, 0))
DEF(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream s), copy3d(p, s, 1))
DEF(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *p, CUstream s), copy3d(p, s, 1))
#define HTOA_P (void *a, size_t off, const void *src, size_t n)
#define ATOH_P (void *dst, void *a, size_t off, size_t n)
DEF(cuMemcpyHtoA_v2, HTOA_P, copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, NULL, 0))
DEF(cuMemcpyHtoA_v2_ptds, HTOA_P, copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, NULL, 0))
DEF(cuMemcpyAtoH_v2, ATOH_P, gpu_wait() ?: copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, NULL, 0))
DEF(cuMemcpyAtoH_v2_ptds, ATOH_P, gpu_wait() ?: copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, NULL, 0))
DEF(cuMemcpyHtoAAsync_v2, (void *a, size_t off, const void *src, size_t n, CUstream s),
    copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, s, 1))
DEF(cuMemcpyHtoAAsync_v2_ptsz, (void *a, size_t off, const void *src, size_t n, CUstream s),
    copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, s, 1))
DEF(cuMemcpyAtoHAsync_v2, (void *dst, void *a, size_t off, size_t n, CUstream s),
    copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, s, 1))
DEF(cuMemcpyAtoHAsync_v2_ptsz, (void *dst, void *a, size_t off, size_t n, CUstream s),
    copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, s, 1))
DEF(cuMemcpyAtoD_v2, (CUdeviceptr d, void *a, size_t off, size_t n), copy_array_1d(NULL, 0, d, 1, a, off, 0, 0, n, NULL, 0))
DEF(cuMemcpyAtoD_v2_ptds, (CUdeviceptr d, void *a, size_t off, size_t n),
    copy_array_1d(NULL, 0, d, 1, a, off, 0, 0, n, NULL, 0))
DEF(cuMemcpyDtoA_v2, (void *a, size_t off, CUdeviceptr s, size_t n), copy_array_1d(a, off, 0, 0, NULL, 0, s, 1, n, NULL, 0))
DEF(cuMemcpyDtoA_v2_ptds, (void *a, size_t off, CUdeviceptr s, size_t n),
    copy_array_1d(a, off, 0, 0, NULL, 0, s, 1, n, NULL, 0))
DEF(cuMemcpyAtoA_v2, (void *d, size_t doff, void *s, size_t soff, size_t n),
    copy_array_1d(d, doff, 0, 0, s, soff, 0, 0, n, NULL, 0))
DEF(cuMemcpyAtoA_v2_ptds, (void *d, size_t doff, void *s, size_t soff, size_t n),
    copy_array_1d(d, doff, 0, 0, s, soff, 0, 0, n, NULL, 0))
DEF(cuTexObjectCreate, (unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *t, const void *v),
    ((void)v, obj_create(po, r, t, 0)))
DEF(cuTexObjectDestroy, (unsigned long long o), obj_destroy(o, 0))
DEF(cuSurfObjectCreate, (unsigned long long *po, const CUDA_RESOURCE_DESC *r), obj_create(po, r, NULL, 1))
DEF(cuSurfObjectDestroy, (unsigned long long o), obj_destroy(o, 1))

/* memsets */
DEF(cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), memset_checked(d, v, n, 1, NULL, 0))
DEF(cuMemsetD8_v2_ptds, (CUdeviceptr d, unsigned char v, size_t n), memset_checked(d, v, n, 1, NULL, 0))
DEF(cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n), memset_checked(d, v, n, 2, NULL, 0))
DEF(cuMemsetD16_v2_ptds, (CUdeviceptr d, unsigned short v, size_t n), memset_checked(d, v, n, 2, NULL, 0))
DEF(cuMemsetD32_v2, (CUdeviceptr d, unsigned v, size_t n), memset_checked(d, v, n, 4, NULL, 0))
DEF(cuMemsetD32_v2_ptds, (CUdeviceptr d, unsigned v, size_t n), memset_checked(d, v, n, 4, NULL, 0))
DEF(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream s), memset_checked(d, v, n, 1, s, 1))
DEF(cuMemsetD8Async_ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream s), memset_checked(d, v, n, 1, s, 1))
DEF(cuMemsetD16Async, (CUdeviceptr d, unsigned short v, size_t n, CUstream s), memset_checked(d, v, n, 2, s, 1))
DEF(cuMemsetD16Async_ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream s), memset_checked(d, v, n, 2, s, 1))
DEF(cuMemsetD32Async, (CUdeviceptr d, unsigned v, size_t n, CUstream s), memset_checked(d, v, n, 4, s, 1))
DEF(cuMemsetD32Async_ptsz, (CUdeviceptr d, unsigned v, size_t n, CUstream s), memset_checked(d, v, n, 4, s, 1))

/* virtual memory management (no context needed) */
DEF(cuMemGetAllocationGranularity, (size_t *g, const CUmemAllocationProp *prop, int option),
    i_mem_granularity(g, prop, option))
DEF(cuMemAddressReserve, (CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags),
    i_mem_reserve(p, size, align, addr, flags))
DEF(cuMemAddressFree, (CUdeviceptr p, size_t size), i_mem_addr_free(p, size))
DEF(cuMemCreate, (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                  unsigned long long flags), i_mem_create(h, size, prop, flags))
DEF(cuMemRelease, (CUmemGenericAllocationHandle h), i_mem_release(h))
DEF(cuMemMap, (CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags),
    i_mem_map(p, size, offset, h, flags))
DEF(cuMemUnmap, (CUdeviceptr p, size_t size), i_mem_unmap(p, size))
DEF(cuMemSetAccess, (CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count),
    i_mem_set_access(p, size, desc, count))

/* streams and events */
DEF(cuStreamCreate, (CUstream *ps, unsigned flags), i_stream_create(ps, flags, 0))
DEF(cuStreamCreateWithPriority, (CUstream *ps, unsigned flags, int prio), i_stream_create(ps, flags, prio))
DEF(cuStreamDestroy_v2, (CUstream s), i_stream_destroy(s))
DEF(cuStreamSynchronize, (CUstream s), i_stream_sync(s))
DEF(cuStreamSynchronize_ptsz, (CUstream s), i_stream_sync(s))
DEF(cuStreamQuery, (CUstream s), i_stream_query(s))
DEF(cuStreamQuery_ptsz, (CUstream s), i_stream_query(s))
DEF(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned flags), i_stream_wait_event(s, e, flags))
DEF(cuStreamWaitEvent_ptsz, (CUstream s, CUevent e, unsigned flags), i_stream_wait_event(s, e, flags))
DEF(cuStreamIsCapturing, (CUstream s, int *st), i_stream_is_capturing(s, st))
DEF(cuStreamIsCapturing_ptsz, (CUstream s, int *st), i_stream_is_capturing(s, st))
DEF(cuStreamGetCaptureInfo_v2, (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, size_t *nd),
    i_capture_info(s, st, id, g, d, nd))
DEF(cuStreamGetCaptureInfo_v3,
    (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, const void **ed, size_t *nd),
    i_capture_info(s, st, id, g, d, (ed ? (*ed = NULL, nd) : nd)))
DEF(cuEventCreate, (CUevent *pe, unsigned flags), i_event_create(pe, flags))
DEF(cuEventRecord, (CUevent e, CUstream s), i_event_record(e, s, 0))
DEF(cuEventRecord_ptsz, (CUevent e, CUstream s), i_event_record(e, s, 0))
DEF(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned flags), i_event_record(e, s, flags))
DEF(cuEventRecordWithFlags_ptsz, (CUevent e, CUstream s, unsigned flags), i_event_record(e, s, flags))
DEF(cuEventSynchronize, (CUevent e), i_event_sync(e))
DEF(cuEventQuery, (CUevent e), i_event_query(e) ?: gpu_query())
DEF(cuEventElapsedTime, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEF(cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEF(cuEventDestroy_v2, (CUevent e), i_event_destroy(e))

/* stream capture and graphs */
DEF(cuStreamBeginCapture_v2, (CUstream s, int mode), i_begin_capture(s, mode))
DEF(cuStreamBeginCapture_v2_ptsz, (CUstream s, int mode), i_begin_capture(s, mode))
DEF(cuStreamEndCapture, (CUstream s, CUgraph *g), i_end_capture(s, g))
DEF(cuStreamEndCapture_ptsz, (CUstream s, CUgraph *g), i_end_capture(s, g))
DEF(cuGraphCreate, (CUgraph *g, unsigned flags), i_graph_create(g, flags))
DEF(cuGraphInstantiate_v2, (CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t logsz),
    ((void)log, (void)logsz, (err ? (void)(*err = NULL) : (void)0), i_graph_instantiate(x, g, 0)))
DEF(cuGraphInstantiateWithFlags, (CUgraphExec *x, CUgraph g, unsigned long long flags), i_graph_instantiate(x, g, flags))
DEF(cuGraphInstantiateWithParams, (CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p),
    i_graph_instantiate_params(x, g, p))
DEF(cuGraphInstantiateWithParams_ptsz, (CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p),
    i_graph_instantiate_params(x, g, p))
DEF(cuGraphLaunch, (CUgraphExec x, CUstream s), i_graph_launch(x, s))
DEF(cuGraphLaunch_ptsz, (CUgraphExec x, CUstream s), i_graph_launch(x, s))
DEF(cuGraphDestroy, (CUgraph g), i_graph_destroy(g))
DEF(cuGraphExecDestroy, (CUgraphExec x), i_graph_exec_destroy(x))
/* explicit graph construction */
DEF(cuGraphAddKernelNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_add_kernel_v1(o, g, d, n, p))
DEF(cuGraphAddKernelNode_v2, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS *p), i_add_kernel(o, g, d, n, p))
DEF(cuGraphAddMemcpyNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMCPY3D *p, CUcontext c), i_add_memcpy(o, g, d, n, p, c))
DEF(cuGraphAddMemsetNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c), i_add_memset(o, g, d, n, p, c))
DEF(cuGraphAddHostNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_HOST_NODE_PARAMS *p), i_add_host(o, g, d, n, p))
DEF(cuGraphAddEmptyNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n), i_add_empty(o, g, d, n))
DEF(cuGraphAddMemAllocNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, unsigned char *p),
    i_add_mem_alloc(o, g, d, n, p))
DEF(cuGraphAddMemFreeNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUdeviceptr p),
    i_add_mem_free(o, g, d, n, p))
DEF(cuGraphAddEventRecordNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVREC))
DEF(cuGraphAddEventWaitNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVWAIT))
DEF(cuGraphAddChildGraphNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraph child), i_add_child(o, g, d, n, child))
DEF(cuGraphAddNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraphNodeParams *p), node_add_generic(o, g, d, n, p))
DEF(cuGraphAddNode_v2, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, const void *edges, size_t n,
                        CUgraphNodeParams *p), ((void)edges, node_add_generic(o, g, d, n, p)))
DEF(cuGraphAddDependencies, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, size_t n), i_add_deps(g, f, t, n))
DEF(cuGraphAddDependencies_v2, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, const void *edges, size_t n),
    ((void)edges, i_add_deps(g, f, t, n)))
static CUresult i_set_kernel_v1(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS_v1 *p) { NODE_SET(t, kernel_fill_v1(&nd, p)); }
static CUresult i_set_kernel(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS *p) { NODE_SET(t, kernel_fill_v2(&nd, p)); }
static CUresult i_set_memcpy(struct fc_node *t, const CUDA_MEMCPY3D *p) { NODE_SET(t, memcpy_fill(&nd, p)); }
static CUresult i_set_memset(struct fc_node *t, const CUDA_MEMSET_NODE_PARAMS *p) { NODE_SET(t, memset_fill(&nd, p)); }
static CUresult i_set_host(struct fc_node *t, const CUDA_HOST_NODE_PARAMS *p) { NODE_SET(t, host_fill(&nd, p)); }
static CUresult i_set_child(struct fc_node *t, CUgraph c) { NODE_SET(t, child_fill(&nd, c)); }
DEF(cuGraphKernelNodeSetParams, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_set_kernel_v1(graph_node(h), p))
DEF(cuGraphKernelNodeSetParams_v2, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p), i_set_kernel(graph_node(h), p))
DEF(cuGraphMemcpyNodeSetParams, (CUgraphNode h, const CUDA_MEMCPY3D *p), i_set_memcpy(graph_node(h), p))
DEF(cuGraphMemsetNodeSetParams, (CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p), i_set_memset(graph_node(h), p))
DEF(cuGraphHostNodeSetParams, (CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p), i_set_host(graph_node(h), p))
DEF(cuGraphExecKernelNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
    i_set_kernel_v1(exec_node(x, h), p))
DEF(cuGraphExecKernelNodeSetParams_v2, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p),
    i_set_kernel(exec_node(x, h), p))
DEF(cuGraphExecMemcpyNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_MEMCPY3D *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memcpy(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecMemsetNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memset(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecHostNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p),
    i_set_host(exec_node(x, h), p))
DEF(cuGraphExecChildGraphNodeSetParams, (CUgraphExec x, CUgraphNode h, CUgraph c), i_set_child(exec_node(x, h), c))
DEF(cuGraphExecUpdate_v2, (CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info), i_graph_exec_update(x, g, info))
DEF(cuGraphUpload, (CUgraphExec x, CUstream s), i_graph_upload(x, s))
DEF(cuGraphUpload_ptsz, (CUgraphExec x, CUstream s), i_graph_upload(x, s))
DEF(cuGraphClone, (CUgraph *c, CUgraph g), i_graph_clone(c, g))
DEF(cuGraphDestroyNode, (CUgraphNode h), i_graph_destroy_node(h))
DEF(cuGraphConditionalHandleCreate, (CUgraphConditionalHandle *h, CUgraph g, CUcontext c, unsigned dflt, unsigned flags),
    i_cond_handle_create(h, g, c, dflt, flags))

/* modules and libraries */
DEF(cuModuleLoad, (CUmodule *pm, const char *path), i_module_load(pm, path))
DEF(cuModuleLoadData, (CUmodule *pm, const void *image), i_module_load_data(pm, image))
DEF(cuModuleLoadDataEx, (CUmodule *pm, const void *image, unsigned n, void *opts, void **vals),
    ((void)n, (void)opts, (void)vals, i_module_load_data(pm, image)))
DEF(cuModuleLoadFatBinary, (CUmodule *pm, const void *image), i_module_load_data(pm, image))
DEF(cuModuleUnload, (CUmodule m), i_module_unload(m))
DEF(cuModuleGetFunction, (CUfunction *pf, CUmodule m, const char *name), i_module_get_function(pf, m, name))
DEF(cuModuleGetGlobal_v2, (CUdeviceptr *d, size_t *n, CUmodule m, const char *name), i_module_get_global(d, n, m, name))
DEF(cuLibraryLoadData, (CUlibrary *pl, const void *code, void *jo, void **jv, unsigned njo, void *lo, void **lv,
                        unsigned nlo),
    ((void)jo, (void)jv, (void)njo, (void)lo, (void)lv, (void)nlo, i_library_load_data(pl, code)))
DEF(cuLibraryUnload, (CUlibrary l), i_library_unload(l))
DEF(cuLibraryGetKernel, (CUkernel *pk, CUlibrary l, const char *name), i_library_get_kernel(pk, l, name))
DEF(cuLibraryGetModule, (CUmodule *pm, CUlibrary l), i_library_get_module(pm, l))
DEF(cuLibraryGetGlobal, (CUdeviceptr *d, size_t *n, CUlibrary l, const char *name), i_library_get_global(d, n, l, name))
DEF(cuKernelGetFunction, (CUfunction *pf, CUkernel k), i_kernel_get_function(pf, k))
DEF(cuKernelGetAttribute, (int *pi, int a, CUkernel k, CUdevice d), i_kernel_get_attr(pi, a, k, d))
DEF(cuKernelSetAttribute, (int a, int v, CUkernel k, CUdevice d), i_kernel_set_attr(a, v, k, d))
DEF(cuKernelGetParamInfo, (CUkernel k, size_t i, size_t *off, size_t *size), i_kernel_param_info(k, i, off, size))
DEF(cuKernelGetName, (const char **name, CUkernel k), i_kernel_get_name(name, k))
DEF(cuFuncGetAttribute, (int *pi, int a, CUfunction f), i_func_get_attr(pi, a, f))
DEF(cuFuncSetAttribute, (CUfunction f, int a, int v), i_func_set_attr(f, a, v))
DEF(cuFuncSetCacheConfig, (CUfunction f, int cfg), i_func_set_cache(f, cfg))
DEF(cuFuncGetParamInfo, (CUfunction f, size_t i, size_t *off, size_t *size), i_func_param_info(f, i, off, size))
DEF(cuFuncGetName, (const char **name, CUfunction f), i_func_get_name(name, f))
DEF(cuFuncGetModule, (CUmodule *pm, CUfunction f), i_func_get_module(pm, f))
DEF(cuModuleEnumerateFunctions, (CUfunction *fns, unsigned n, CUmodule m), i_module_enumerate(fns, n, m))
DEF(cuLibraryEnumerateKernels, (CUkernel *ks, unsigned n, CUlibrary l), i_library_enumerate(ks, n, l))
DEF(cuGetExportTable, (const void **table, const CUuuid *id), i_get_export_table(table, id))
DEF(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *nb, CUfunction f, int block, size_t smem),
    i_occupancy(nb, f, block, smem, 0))
DEF(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    (int *nb, CUfunction f, int block, size_t smem, unsigned flags), i_occupancy(nb, f, block, smem, flags))

/* launches */
#define LK_PARAMS (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
                   unsigned shmem, CUstream s, void **params, void **extra)
#define LC_PARAMS (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
                   unsigned shmem, CUstream s, void **params)
DEF(cuLaunchKernel, LK_PARAMS, launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
DEF(cuLaunchKernel_ptsz, LK_PARAMS, launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
DEF(cuLaunchCooperativeKernel, LC_PARAMS, launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL))
DEF(cuLaunchCooperativeKernel_ptsz, LC_PARAMS, launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL))
DEF(cuLaunchKernelEx, (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra),
    launch_ex(cfg, f, params, extra))
DEF(cuLaunchKernelEx_ptsz, (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra),
    launch_ex(cfg, f, params, extra))

/* Host functions run inline, outside the lock (they may call back into CUDA). */
static CUresult hostfn(const char *name, CUstream s, CUhostFn fn, void *ud) {
  CUresult r;
  fc_lock();
  r = g_inited ? hostfn_check(s, fn) : E_NOT_INITIALIZED;
  struct fc_graph *g = r == E_SUCCESS ? stream_graph(s) : NULL;
  if (g) { /* inside a stream capture: a host node, run at each launch */
    struct fc_node *nd = graph_add(g);
    nd->kind = N_HOST;
    nd->hfn = fn;
    nd->hdata = ud;
  }
  int queued = r == E_SUCCESS && (g || async_hostfn(fn, ud));
  fc_unlock();
  if (r == E_SUCCESS && !queued) fn(ud);
  if (g_trace) fc_trace(name, r);
  return r;
}
FC_EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *ud);
CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *ud) { return hostfn("cuLaunchHostFunc", s, fn, ud); }
extern __typeof__(cuLaunchHostFunc) cuLaunchHostFunc__self __attribute__((alias("cuLaunchHostFunc"), visibility("hidden")));
FC_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *ud);
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *ud) { return hostfn("cuLaunchHostFunc_ptsz", s, fn, ud); }
extern __typeof__(cuLaunchHostFunc_ptsz) cuLaunchHostFunc_ptsz__self
    __attribute__((alias("cuLaunchHostFunc_ptsz"), visibility("hidden")));

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                         */
/* ------------------------------------------------------------------------ */

/* status: 0 SUCCESS, 1 SYMBOL_NOT_FOUND, 2 VERSION_NOT_SUFFICIENT */
static CUresult i_get_proc_address(const char *sym, void **pfn, int ver, cuuint64_t flags, int *status);
DEF0(cuGetProcAddress, (const char *sym, void **pfn, int ver, cuuint64_t flags),
     i_get_proc_address(sym, pfn, ver, flags, NULL))
DEF0(cuGetProcAddress_v2, (const char *sym, void **pfn, int ver, cuuint64_t flags, int *status),
     i_get_proc_address(sym, pfn, ver, flags, status))

/* base name, first CUDA version of this variant, default export, per-thread
 * default stream export (or NULL).  For a base with several rows the row
 * with the highest `since` not above the requested version wins. */
struct pa_ent {
  const char *base;
  int since;
  void *fn;
  void *pt;
};
#define P(base, since, fn) {base, since, (void *)fn##__self, NULL},
#define PT(base, since, fn, pt) {base, since, (void *)fn##__self, (void *)pt##__self},

static const struct pa_ent k_procs[] = {
  P("cuInit", 2000, cuInit)
  P("cuDriverGetVersion", 2020, cuDriverGetVersion)
  P("cuGetProcAddress", 11030, cuGetProcAddress)
  P("cuGetProcAddress", 12000, cuGetProcAddress_v2)
  P("cuGetErrorName", 6000, cuGetErrorName)
  P("cuGetErrorString", 6000, cuGetErrorString)
  P("cuDeviceGet", 2000, cuDeviceGet)
  P("cuDeviceGetCount", 2000, cuDeviceGetCount)
  P("cuDeviceGetName", 2000, cuDeviceGetName)
  P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute)
  P("cuDeviceGetUuid", 9020, cuDeviceGetUuid)
  P("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2)
  P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2)
  P("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId)
  P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain)
  P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease)
  P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2)
  P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState)
  P("cuCtxCreate", 3020, cuCtxCreate_v2)
  P("cuCtxCreate", 11040, cuCtxCreate_v3)
  P("cuCtxCreate", 12050, cuCtxCreate_v4)
  P("cuCtxDestroy", 4000, cuCtxDestroy_v2)
  P("cuCtxSetCurrent", 4000, cuCtxSetCurrent)
  P("cuCtxGetCurrent", 4000, cuCtxGetCurrent)
  P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2)
  P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2)
  P("cuCtxGetDevice", 2000, cuCtxGetDevice)
  P("cuCtxGetDevice_v2", 13000, cuCtxGetDevice_v2)
  P("cuCtxSynchronize", 2000, cuCtxSynchronize)
  P("cuCtxSynchronize_v2", 13000, cuCtxSynchronize_v2)
  P("cuCtxGetLimit", 3010, cuCtxGetLimit)
  P("cuCtxSetLimit", 3010, cuCtxSetLimit)
  P("cuCtxSetCacheConfig", 3020, cuCtxSetCacheConfig)
  P("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange)
  P("cuModuleGetLoadingMode", 11070, cuModuleGetLoadingMode)
  P("cuMemAlloc", 3020, cuMemAlloc_v2)
  P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2)
  P("cuMemFree", 3020, cuMemFree_v2)
  PT("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz)
  PT("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)
  P("cuMemAllocManaged", 6000, cuMemAllocManaged)
  PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz)
  P("cuMemPoolCreate", 11020, cuMemPoolCreate)
  P("cuMemPoolDestroy", 11020, cuMemPoolDestroy)
  P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute)
  P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute)
  P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo)
  P("cuMemPoolSetAccess", 11020, cuMemPoolSetAccess)
  P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool)
  P("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool)
  P("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool)
  P("cuMemGetInfo", 3020, cuMemGetInfo_v2)
  P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2)
  P("cuMemHostAlloc", 2020, cuMemHostAlloc)
  P("cuMemAllocHost", 3020, cuMemAllocHost_v2)
  P("cuMemFreeHost", 2000, cuMemFreeHost)
  P("cuMemHostRegister", 6050, cuMemHostRegister_v2)
  P("cuMemHostUnregister", 4000, cuMemHostUnregister)
  P("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2)
  P("cuPointerGetAttribute", 4000, cuPointerGetAttribute)
  P("cuPointerGetAttributes", 7000, cuPointerGetAttributes)
  PT("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds)
  PT("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz)
  PT("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)
  PT("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)
  PT("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)
  PT("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz)
  PT("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz)
  PT("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz)
  PT("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds)
  PT("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds)
  PT("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz)
  PT("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds)
  PT("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz)
  PT("cuMemcpyHtoA", 3020, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds)
  PT("cuMemcpyAtoH", 3020, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds)
  PT("cuMemcpyHtoAAsync", 3020, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz)
  PT("cuMemcpyAtoHAsync", 3020, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz)
  PT("cuMemcpyAtoD", 3020, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds)
  PT("cuMemcpyDtoA", 3020, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds)
  PT("cuMemcpyAtoA", 3020, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds)
  P("cuArrayCreate", 3020, cuArrayCreate_v2)
  P("cuArray3DCreate", 3020, cuArray3DCreate_v2)
  P("cuArrayDestroy", 2000, cuArrayDestroy)
  P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate)
  P("cuMipmappedArrayGetLevel", 5000, cuMipmappedArrayGetLevel)
  P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy)
  P("cuTexObjectCreate", 5000, cuTexObjectCreate)
  P("cuTexObjectDestroy", 5000, cuTexObjectDestroy)
  P("cuSurfObjectCreate", 5000, cuSurfObjectCreate)
  P("cuSurfObjectDestroy", 5000, cuSurfObjectDestroy)
  PT("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds)
  PT("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds)
  PT("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds)
  PT("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz)
  PT("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz)
  PT("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz)
  P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity)
  P("cuMemAddressReserve", 10020, cuMemAddressReserve)
  P("cuMemAddressFree", 10020, cuMemAddressFree)
  P("cuMemCreate", 10020, cuMemCreate)
  P("cuMemRelease", 10020, cuMemRelease)
  P("cuMemMap", 10020, cuMemMap)
  P("cuMemUnmap", 10020, cuMemUnmap)
  P("cuMemSetAccess", 10020, cuMemSetAccess)
  P("cuStreamCreate", 2000, cuStreamCreate)
  P("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority)
  P("cuStreamDestroy", 4000, cuStreamDestroy_v2)
  PT("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz)
  PT("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz)
  PT("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz)
  PT("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz)
  P("cuEventCreate", 2000, cuEventCreate)
  PT("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz)
  PT("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz)
  P("cuEventSynchronize", 2000, cuEventSynchronize)
  P("cuEventQuery", 2000, cuEventQuery)
  P("cuEventElapsedTime", 2000, cuEventElapsedTime)
  P("cuEventElapsedTime", 12080, cuEventElapsedTime_v2)
  P("cuEventDestroy", 4000, cuEventDestroy_v2)
  P("cuModuleLoad", 2000, cuModuleLoad)
  P("cuModuleLoadData", 2000, cuModuleLoadData)
  P("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx)
  P("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary)
  P("cuModuleUnload", 2000, cuModuleUnload)
  P("cuModuleGetFunction", 2000, cuModuleGetFunction)
  P("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2)
  P("cuLibraryLoadData", 12000, cuLibraryLoadData)
  P("cuLibraryUnload", 12000, cuLibraryUnload)
  P("cuLibraryGetKernel", 12000, cuLibraryGetKernel)
  P("cuLibraryGetModule", 12000, cuLibraryGetModule)
  P("cuLibraryGetGlobal", 12000, cuLibraryGetGlobal)
  P("cuKernelGetFunction", 12000, cuKernelGetFunction)
  P("cuKernelGetAttribute", 12000, cuKernelGetAttribute)
  P("cuKernelSetAttribute", 12000, cuKernelSetAttribute)
  P("cuKernelGetName", 12030, cuKernelGetName)
  P("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo)
  P("cuFuncGetAttribute", 2020, cuFuncGetAttribute)
  P("cuFuncSetAttribute", 9000, cuFuncSetAttribute)
  P("cuFuncSetCacheConfig", 3000, cuFuncSetCacheConfig)
  P("cuFuncGetName", 12030, cuFuncGetName)
  P("cuFuncGetModule", 11000, cuFuncGetModule)
  P("cuModuleEnumerateFunctions", 12000, cuModuleEnumerateFunctions)
  P("cuLibraryEnumerateKernels", 12000, cuLibraryEnumerateKernels)
  P("cuGetExportTable", 3000, cuGetExportTable)
  P("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo)
  P("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor)
  P("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
  PT("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz)
  PT("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz)
  PT("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz)
  PT("cuLaunchHostFunc", 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz)
  PT("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz)
  PT("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz)
  P("cuGraphCreate", 10000, cuGraphCreate)
  P("cuGraphInstantiate", 11000, cuGraphInstantiate_v2)
  P("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags)
  P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags)
  PT("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz)
  PT("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz)
  P("cuGraphDestroy", 10000, cuGraphDestroy)
  P("cuGraphExecDestroy", 10000, cuGraphExecDestroy)
  P("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode)
  P("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2)
  P("cuGraphAddMemcpyNode", 10000, cuGraphAddMemcpyNode)
  P("cuGraphAddMemsetNode", 10000, cuGraphAddMemsetNode)
  P("cuGraphAddHostNode", 10000, cuGraphAddHostNode)
  P("cuGraphAddEmptyNode", 10000, cuGraphAddEmptyNode)
  P("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode)
  P("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode)
  P("cuGraphAddEventRecordNode", 11010, cuGraphAddEventRecordNode)
  P("cuGraphAddEventWaitNode", 11010, cuGraphAddEventWaitNode)
  P("cuGraphAddChildGraphNode", 10000, cuGraphAddChildGraphNode)
  P("cuGraphAddNode", 12020, cuGraphAddNode)
  P("cuGraphAddNode", 12030, cuGraphAddNode_v2)
  P("cuGraphAddDependencies", 10000, cuGraphAddDependencies)
  P("cuGraphAddDependencies", 12030, cuGraphAddDependencies_v2)
  P("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams)
  P("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2)
  P("cuGraphMemcpyNodeSetParams", 10000, cuGraphMemcpyNodeSetParams)
  P("cuGraphMemsetNodeSetParams", 10000, cuGraphMemsetNodeSetParams)
  P("cuGraphHostNodeSetParams", 10000, cuGraphHostNodeSetParams)
  P("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams)
  P("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2)
  P("cuGraphExecMemcpyNodeSetParams", 10020, cuGraphExecMemcpyNodeSetParams)
  P("cuGraphExecMemsetNodeSetParams", 10020, cuGraphExecMemsetNodeSetParams)
  P("cuGraphExecHostNodeSetParams", 10020, cuGraphExecHostNodeSetParams)
  P("cuGraphExecChildGraphNodeSetParams", 11010, cuGraphExecChildGraphNodeSetParams)
  P("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2)
  PT("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz)
  P("cuGraphClone", 10000, cuGraphClone)
  P("cuGraphDestroyNode", 10000, cuGraphDestroyNode)
  P("cuGraphConditionalHandleCreate", 12030, cuGraphConditionalHandleCreate)
};

static CUresult i_get_proc_address(const char *sym, void **pfn, int ver, cuuint64_t flags, int *status) {
  if (!sym || !pfn) return E_INVALID_VALUE;
  *pfn = NULL;
  if (ver > FC_DRIVER_VERSION || flags > 2) return E_INVALID_VALUE;
  const struct pa_ent *best = NULL;
  int seen = 0;
  for (size_t i = 0; i < sizeof k_procs / sizeof k_procs[0]; i++) {
    if (strcmp(k_procs[i].base, sym)) continue;
    seen = 1;
    if (k_procs[i].since <= ver && (!best || k_procs[i].since > best->since)) best = &k_procs[i];
  }
  if (!best) {
    if (status) *status = seen ? 2 : 1;
    return E_SUCCESS;
  }
  *pfn = (flags == 2 && best->pt && ver >= 7000) ? best->pt : best->fn;
  if (status) *status = 0;
  return E_SUCCESS;
}

