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
typedef struct fc_node_opaque *CUgraphNode;

typedef struct {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out; /* CUgraphInstantiateResult */
} CUDA_GRAPH_INSTANTIATE_PARAMS;

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

enum { T_CTX = 1, T_MOD, T_FUNC, T_LIB, T_KERN, T_STREAM, T_EVENT, T_VMEM, T_GRAPH, T_GEXEC };

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
enum { R_DEV = 1, R_GLOBAL, R_HOST, R_HOSTREG, R_VMM };
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
static int is_device_kind(int k) { return k == R_DEV || k == R_GLOBAL || k == R_VMM; }

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
static CUresult i_ctx_sync(CUcontext c) {
  struct fc_ctx *x;
  CUresult e = ctx_or_current(c, &x);
  return e ? e : gpu_wait();
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

enum { N_KERNEL = 1, N_MEMSET, N_COPY };
struct fc_func;
struct fc_node {
  int kind;
  struct fc_func *f;              /* kernel */
  unsigned long long threads;     /* kernel */
  unsigned char *pb;              /* kernel: FC_PARAM_BUF bytes of arguments */
  uintptr_t dst, src;             /* copy; memset uses dst */
  int dst_dev, src_dev;           /* copy: as copy_checked */
  size_t n;                       /* copy bytes, memset elements */
  unsigned v;                     /* memset */
  int width;                      /* memset */
};
struct fc_graph {
  struct fc_node *nodes;
  size_t n, cap;
};
struct fc_gexec {
  struct fc_node *nodes;
  size_t n;
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
static void nodes_free(struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) free(nodes[i].pb);
  free(nodes);
}
/* Deep copy of nodes[0..n) appended to g. */
static void graph_append(struct fc_graph *g, const struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct fc_node *nd = graph_add(g);
    *nd = nodes[i];
    if (nodes[i].pb) {
      nd->pb = malloc(FC_PARAM_BUF);
      if (!nd->pb) abort();
      memcpy(nd->pb, nodes[i].pb, FC_PARAM_BUF);
    }
  }
}
struct fc_event {
  unsigned flags;
  int recorded;
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
  return stream_graph(s) ? E_STREAM_CAPTURE_UNSUPPORTED : gpu_wait();
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
  return E_SUCCESS;
}
static CUresult i_event_query(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  return async_busy() ? E_NOT_READY : E_SUCCESS;
}
static CUresult i_event_sync(CUevent ev) {
  return obj_is(ev, T_EVENT) ? gpu_wait() : E_INVALID_HANDLE;
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
  if (size > g_total || g_used + size > g_total) return E_OUT_OF_MEMORY;
  size_t charged = 0;
  uintptr_t p = dev_alloc(&g_dev, size, &charged);
  if (!p) return E_OUT_OF_MEMORY;
  region_add(p, size, R_DEV, 3, c, charged, NULL);
  g_used += charged;
  *dptr = p;
  return E_SUCCESS;
}
static CUresult i_mem_free(CUdeviceptr p, CUstream s, int async) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (async) {
    CUresult e = chk_stream(s);
    if (e) return e;
  }
  if (p == 0) return E_SUCCESS;
  long i = region_find_base(p, R_DEV);
  if (i < 0) return E_INVALID_VALUE;
  g_used -= g_reg[i].charged;
  region_del((size_t)i);
  dev_release(p);
  return E_SUCCESS;
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
  case 2: /* MEMORY_TYPE */
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
  case 6: /* SYNC_MEMOPS */
  case 8: /* IS_MANAGED */
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

enum { K_NONE = 0, K_AXPY, K_FILL_U32, K_GATHER, K_ADD_GLOBAL, K_SPIN, K_FAULT };

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
  for (size_t b = 0; b < sizeof k_builtins / sizeof k_builtins[0]; b++)
    if (!strcmp(k_builtins[b].name, name)) {
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
/* Kernel execution                                                         */
/* ------------------------------------------------------------------------ */

static unsigned long long count_of(long long n, unsigned long long threads) {
  if (n <= 0) return 0;
  return (unsigned long long)n < threads ? (unsigned long long)n : threads;
}
#define RD(T, off) ({ T v__; memcpy(&v__, pb + (off), sizeof v__); v__; })

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

static CUresult launch(const void *h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shmem, CUstream s, void **params, void **extra) {
  struct fc_ctx *c;
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (!gx || !gy || !gz || !bx || !by || !bz) return E_INVALID_VALUE;
  if (gx > 2147483647u || gy > 65535 || gz > 65535) return E_INVALID_VALUE;
  if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024) return E_INVALID_VALUE;
  if (shmem > (unsigned)f->attr[8]) return E_INVALID_VALUE;
  if (params && extra) return E_INVALID_VALUE;
  unsigned char pb[FC_PARAM_BUF];
  memset(pb, 0, sizeof pb);
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
  return run_kernel(f, pb, (unsigned long long)gx * bx);
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
  struct fc_gexec *x = calloc(1, sizeof *x);
  if (!x) return E_OUT_OF_MEMORY;
  struct fc_graph tmp = {NULL, 0, 0};
  graph_append(&tmp, g->nodes, g->n);
  x->nodes = tmp.nodes;
  x->n = tmp.n;
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
  for (size_t i = 0; i < x->n; i++) {
    const struct fc_node *nd = &x->nodes[i];
    switch (nd->kind) {
    case N_KERNEL: e = run_kernel(nd->f, nd->pb, nd->threads); break;
    case N_MEMSET: e = memset_run(nd->dst, nd->v, nd->n, nd->width); break;
    case N_COPY: e = copy_run(nd->dst, nd->dst_dev, nd->src, nd->src_dev, nd->n); break;
    default: e = E_LAUNCH_FAILED;
    }
    if (e) return e;
  }
  return E_SUCCESS;
}
static CUresult i_graph_destroy(CUgraph g) {
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  obj_del(g);
  nodes_free(g->nodes, g->n);
  free(g);
  return E_SUCCESS;
}
static CUresult i_graph_exec_destroy(CUgraphExec x) {
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  obj_del(x);
  nodes_free(x->nodes, x->n);
  free(x);
  return E_SUCCESS;
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
DEF(cuMemFree_v2, (CUdeviceptr p), i_mem_free(p, NULL, 0))
DEF(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF(cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF(cuMemFreeAsync, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
DEF(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
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
  int queued = r == E_SUCCESS && async_hostfn(fn, ud);
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
  P("cuMemFree", 3020, cuMemFree_v2)
  PT("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz)
  PT("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)
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

