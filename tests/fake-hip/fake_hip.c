/*
 * fake_hip.c - a CPU-only stand-in for the HIP runtime (libamdhip64.so.5).
 *
 * Built with SONAME libamdhip64.so.5 and the runtime's symbol versions (hip_4.2 ... hip_5.1), so
 * unmodified programs built by hipcc against ROCm 5.2 run on it through LD_LIBRARY_PATH, and
 * so do the hrr capture and replay tools.  "Device" memory is host memory at deterministic
 * addresses, streams run synchronously, and the kernels of the test programs (apps/) run on
 * the CPU, found by name.  See README.md next to this file for the contract.
 *
 * Written from scratch for hrr; it follows the public HIP ABI (names, versions, struct layouts
 * of ROCm 5.2, error codes) and nothing else.
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
#include <sys/stat.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* ------------------------------------------------------------------------ */
/* ABI (own minimal definitions; layouts follow the ROCm 5.2 headers)       */
/* ------------------------------------------------------------------------ */

typedef int hipError_t;
typedef struct { unsigned x, y, z; } dim3;
typedef struct fh_stream *hipStream_t;
typedef struct fh_event *hipEvent_t;
typedef struct fh_module *hipModule_t;
typedef struct fh_func *hipFunction_t;
typedef struct fh_vmem *hipMemGenericAllocationHandle_t;
typedef void (*hipHostFn_t)(void *);

typedef struct { int type; int id; } hipMemLocation; /* type: hipMemLocationTypeDevice = 1 */
/* The ROCm 5 layout (ROCm 6 reorders it to match CUDA's CUmemAllocationProp). */
typedef struct {
  unsigned char compressionType;
  hipMemLocation location;
  int requestedHandleType;
  int type; /* hipMemAllocationTypePinned = 1 */
  unsigned short usage;
  void *win32HandleMetaData;
} hipMemAllocationProp;
typedef struct { hipMemLocation location; int flags; } hipMemAccessDesc;

_Static_assert(sizeof(hipMemAllocationProp) == 32, "hipMemAllocationProp layout");
_Static_assert(sizeof(hipMemAccessDesc) == 12, "hipMemAccessDesc layout");

/* hipDeviceProp_t of ROCm 5.2: 792 bytes; the fields the fake fills. */
#define PROP_BYTES 792
#define PROP_NAME 0
#define PROP_TOTAL_MEM 256
#define PROP_MAJOR 328
#define PROP_MINOR 332
#define PROP_GCN_ARCH 392
#define PROP_GCN_ARCH_NAME 396

enum {
  E_SUCCESS = 0,
  E_INVALID_VALUE = 1,
  E_OUT_OF_MEMORY = 2,
  E_INVALID_DEVICE_FUNCTION = 98,
  E_INVALID_DEVICE = 101,
  E_INVALID_SYMBOL = 13,
  E_MISSING_CONFIGURATION = 52,
  E_INVALID_IMAGE = 200,
  E_FILE_NOT_FOUND = 301,
  E_INVALID_HANDLE = 400,
  E_NOT_FOUND = 500,
  E_NOT_READY = 600,
  E_ILLEGAL_ADDRESS = 700,
  E_NOT_SUPPORTED = 801,
};

#define FH_VERSION 50221153 /* HIP_VERSION of ROCm 5.2.3 */
#define FH_GRAN ((size_t)64 << 10)
#define FH_TOTAL ((size_t)16 << 30)
#define FH_VA_BASE ((uintptr_t)0x7d0000000000ULL)

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread hipError_t t_last;
static int g_trace;

static void lock(void) { pthread_mutex_lock(&g_mu); }
static void unlock(void) { pthread_mutex_unlock(&g_mu); }

static hipError_t ret(const char *name, hipError_t r) {
  if (r != E_SUCCESS) t_last = r;
  if (g_trace) fprintf(stderr, "[fake-hip] %s -> %d\n", name, r);
  return r;
}
#define RET(r) return ret(__func__, (r))

static uintptr_t round_up(uintptr_t x, uintptr_t a) { return (x + a - 1) / a * a; }

#define GROW(arr, n, cap)                                                        \
  do {                                                                           \
    if ((n) == (cap)) {                                                          \
      size_t nc_ = (cap) ? (cap) * 2 : 16;                                       \
      void *p_ = realloc((arr), nc_ * sizeof(*(arr)));                           \
      if (!p_) abort();                                                          \
      (arr) = p_;                                                                \
      (cap) = nc_;                                                               \
    }                                                                            \
  } while (0)

__attribute__((constructor)) static void fh_init(void) {
  const char *t = getenv("FAKE_HIP_TRACE");
  g_trace = t && *t && *t != '0';
}

/* ------------------------------------------------------------------------ */
/* Address space and regions                                                */
/* ------------------------------------------------------------------------ */

enum { R_DEV = 1, R_HOST, R_HOSTREG, R_VMM, R_GLOBAL };
struct region { uintptr_t base; size_t size, mapped; int kind, access; };
static struct region *g_reg;
static size_t g_nreg, g_capreg;

struct resv { uintptr_t base; size_t size; };
static struct resv *g_rv;
static size_t g_nrv, g_caprv;

static uintptr_t g_cursor;
static size_t g_used;

static void region_add(uintptr_t base, size_t size, size_t mapped, int kind, int access) {
  GROW(g_reg, g_nreg, g_capreg);
  g_reg[g_nreg++] = (struct region){base, size, mapped, kind, access};
}
static long region_at(uintptr_t p) {
  for (size_t i = 0; i < g_nreg; i++)
    if (p >= g_reg[i].base && p - g_reg[i].base < g_reg[i].size) return (long)i;
  return -1;
}
static long region_base(uintptr_t p, int kind) {
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].base == p && g_reg[i].kind == kind) return (long)i;
  return -1;
}
static void region_del(size_t i) { g_reg[i] = g_reg[--g_nreg]; }
static int is_device_kind(int k) { return k == R_DEV || k == R_VMM || k == R_GLOBAL; }

/* Is [p, p+len) inside regions a kernel or copy may touch (device=1: device memory only)? */
static int range_ok(uintptr_t p, size_t len, int device) {
  if (len == 0) return 1;
  uintptr_t end = p + len;
  if (end < p) return 0;
  while (p < end) {
    long i = region_at(p);
    if (i < 0 || g_reg[i].access != 3) return 0;
    if (device && !is_device_kind(g_reg[i].kind)) return 0;
    p = g_reg[i].base + g_reg[i].size;
  }
  return 1;
}
static int is_device_ptr(const void *p) {
  long i = region_at((uintptr_t)p);
  return i >= 0 && is_device_kind(g_reg[i].kind);
}

/* Map len bytes at the next free `align`-aligned address of the device window (the same order
 * of calls gives the same addresses), anywhere if the window is unusable. */
static uintptr_t va_map(size_t len, int prot, size_t align) {
  if (!g_cursor) {
    const char *b = getenv("FAKE_HIP_VA_BASE");
    g_cursor = b && *b ? (uintptr_t)strtoull(b, NULL, 0) : FH_VA_BASE;
  }
  uintptr_t a = round_up(g_cursor, align);
  for (int tries = 0; tries < 4096; tries++) {
    void *p = mmap((void *)a, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == (void *)a) {
      g_cursor = a + len + 4096; /* a guard page between allocations */
      return a;
    }
    if (p != MAP_FAILED) munmap(p, len);
    a += FH_GRAN;
  }
  size_t over = len + align;
  void *p = mmap(NULL, over, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  uintptr_t s = (uintptr_t)p, al = round_up(s, align);
  if (al > s) munmap(p, al - s);
  if (s + over > al + len) munmap((void *)(al + len), s + over - (al + len));
  return al;
}

static hipError_t dev_alloc(void **out, size_t size, int kind) {
  if (!out) return E_INVALID_VALUE;
  if (size == 0) { *out = NULL; return E_SUCCESS; }
  size_t m = round_up(size, 4096);
  if (g_used + m > FH_TOTAL) return E_OUT_OF_MEMORY;
  uintptr_t a = va_map(m, PROT_READ | PROT_WRITE, 4096);
  if (!a) return E_OUT_OF_MEMORY;
  g_used += m;
  region_add(a, size, m, kind, 3);
  *out = (void *)a;
  return E_SUCCESS;
}

static hipError_t dev_free(void *p, int kind) {
  if (!p) return E_SUCCESS;
  long i = region_base((uintptr_t)p, kind);
  if (i < 0) return E_INVALID_VALUE;
  munmap(p, g_reg[i].mapped);
  g_used -= g_reg[i].mapped;
  region_del((size_t)i);
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Errors, init, devices                                                    */
/* ------------------------------------------------------------------------ */

static const struct { int code; const char *name, *text; } k_errors[] = {
  {0, "hipSuccess", "no error"},
  {1, "hipErrorInvalidValue", "invalid argument"},
  {2, "hipErrorOutOfMemory", "out of memory"},
  {13, "hipErrorInvalidSymbol", "invalid device symbol"},
  {52, "hipErrorMissingConfiguration", "__global__ function call is not configured"},
  {98, "hipErrorInvalidDeviceFunction", "invalid device function"},
  {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
  {101, "hipErrorInvalidDevice", "invalid device ordinal"},
  {200, "hipErrorInvalidImage", "device kernel image is invalid"},
  {301, "hipErrorFileNotFound", "file not found"},
  {400, "hipErrorInvalidHandle", "invalid resource handle"},
  {500, "hipErrorNotFound", "named symbol not found"},
  {600, "hipErrorNotReady", "device not ready"},
  {700, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
  {801, "hipErrorNotSupported", "operation not supported"},
};

const char *hipGetErrorName(hipError_t e) {
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].code == e) return k_errors[i].name;
  return "hipErrorUnknown";
}
const char *hipGetErrorString(hipError_t e) {
  for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].code == e) return k_errors[i].text;
  return "unknown error";
}
hipError_t hipGetLastError(void) { hipError_t e = t_last; t_last = E_SUCCESS; return e; }
hipError_t hipPeekAtLastError(void) { return t_last; }

hipError_t hipInit(unsigned flags) { RET(flags ? E_INVALID_VALUE : E_SUCCESS); }
hipError_t hipDriverGetVersion(int *v) { if (!v) RET(E_INVALID_VALUE); *v = FH_VERSION; RET(E_SUCCESS); }
hipError_t hipRuntimeGetVersion(int *v) { if (!v) RET(E_INVALID_VALUE); *v = FH_VERSION; RET(E_SUCCESS); }
hipError_t hipGetDeviceCount(int *n) { if (!n) RET(E_INVALID_VALUE); *n = 1; RET(E_SUCCESS); }
hipError_t hipSetDevice(int d) { RET(d == 0 ? E_SUCCESS : E_INVALID_DEVICE); }
hipError_t hipGetDevice(int *d) { if (!d) RET(E_INVALID_VALUE); *d = 0; RET(E_SUCCESS); }
hipError_t hipDeviceGet(int *d, int ordinal) {
  if (!d) RET(E_INVALID_VALUE);
  if (ordinal != 0) RET(E_INVALID_DEVICE);
  *d = 0;
  RET(E_SUCCESS);
}
hipError_t hipDeviceGetName(char *name, int len, int d) {
  if (!name || len <= 0) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  snprintf(name, (size_t)len, "%s", "HRR Fake AMD GPU");
  RET(E_SUCCESS);
}
hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
  if (!bytes) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  *bytes = FH_TOTAL;
  RET(E_SUCCESS);
}
hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
  if (!v) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  switch (attr) {
  case 56: *v = 1024; break; /* hipDeviceAttributeMaxThreadsPerBlock (5.2 numbering) */
  case 87: *v = 64; break;   /* hipDeviceAttributeWarpSize */
  default: *v = 0;
  }
  RET(E_SUCCESS);
}
hipError_t hipGetDeviceProperties(void *prop, int d) {
  if (!prop) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  unsigned char *p = prop;
  memset(p, 0, PROP_BYTES);
  strcpy((char *)p + PROP_NAME, "HRR Fake AMD GPU");
  size_t total = FH_TOTAL;
  memcpy(p + PROP_TOTAL_MEM, &total, sizeof total);
  int major = 9, minor = 0, arch = 910;
  memcpy(p + PROP_MAJOR, &major, 4);
  memcpy(p + PROP_MINOR, &minor, 4);
  memcpy(p + PROP_GCN_ARCH, &arch, 4);
  strcpy((char *)p + PROP_GCN_ARCH_NAME, "gfx90a:sramecc+:xnack-");
  RET(E_SUCCESS);
}
hipError_t hipSetDeviceFlags(unsigned flags) { (void)flags; RET(E_SUCCESS); }
hipError_t hipDeviceSynchronize(void) { RET(E_SUCCESS); }
hipError_t hipDeviceReset(void) { RET(E_SUCCESS); }

/* ------------------------------------------------------------------------ */
/* Streams and events (everything runs synchronously)                       */
/* ------------------------------------------------------------------------ */

struct fh_stream { unsigned flags; int priority; };
struct fh_event { unsigned flags; unsigned long long stamp; int recorded; };
static void **g_obj;
static size_t g_nobj, g_capobj;
static unsigned long long g_clock;

static void obj_add(void *p) { GROW(g_obj, g_nobj, g_capobj); g_obj[g_nobj++] = p; }
static int obj_del(void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i] == p) { g_obj[i] = g_obj[--g_nobj]; return 1; }
  return 0;
}
static int obj_known(const void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i] == p) return 1;
  return 0;
}
/* The null stream and hipStreamPerThread (2) are always valid. */
static int stream_ok(hipStream_t s) { return (uintptr_t)s <= 2 || obj_known(s); }

static hipError_t stream_new(hipStream_t *ps, unsigned flags, int prio) {
  if (!ps) return E_INVALID_VALUE;
  struct fh_stream *s = calloc(1, sizeof *s);
  s->flags = flags;
  s->priority = prio;
  lock(); obj_add(s); unlock();
  *ps = s;
  return E_SUCCESS;
}
hipError_t hipStreamCreate(hipStream_t *ps) { RET(stream_new(ps, 0, 0)); }
hipError_t hipStreamCreateWithFlags(hipStream_t *ps, unsigned f) { RET(stream_new(ps, f, 0)); }
hipError_t hipStreamCreateWithPriority(hipStream_t *ps, unsigned f, int p) { RET(stream_new(ps, f, p)); }
hipError_t hipStreamDestroy(hipStream_t s) {
  lock(); int ok = s && obj_del(s); unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  free(s);
  RET(E_SUCCESS);
}
hipError_t hipStreamSynchronize(hipStream_t s) { lock(); int ok = stream_ok(s); unlock(); RET(ok ? E_SUCCESS : E_INVALID_HANDLE); }
hipError_t hipStreamQuery(hipStream_t s) { return hipStreamSynchronize(s); }
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  (void)flags;
  lock(); int ok = stream_ok(s) && obj_known(e); unlock();
  RET(ok ? E_SUCCESS : E_INVALID_HANDLE);
}
static hipError_t event_new(hipEvent_t *pe, unsigned flags) {
  if (!pe) return E_INVALID_VALUE;
  struct fh_event *e = calloc(1, sizeof *e);
  e->flags = flags;
  lock(); obj_add(e); unlock();
  *pe = e;
  return E_SUCCESS;
}
hipError_t hipEventCreate(hipEvent_t *pe) { RET(event_new(pe, 0)); }
hipError_t hipEventCreateWithFlags(hipEvent_t *pe, unsigned f) { RET(event_new(pe, f)); }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  lock();
  int ok = obj_known(e) && stream_ok(s);
  if (ok) { e->stamp = ++g_clock; e->recorded = 1; }
  unlock();
  RET(ok ? E_SUCCESS : E_INVALID_HANDLE);
}
hipError_t hipEventSynchronize(hipEvent_t e) { lock(); int ok = obj_known(e); unlock(); RET(ok ? E_SUCCESS : E_INVALID_HANDLE); }
hipError_t hipEventQuery(hipEvent_t e) { return hipEventSynchronize(e); }
hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) {
  lock(); int ok = ms && obj_known(a) && obj_known(b) && a->recorded && b->recorded; unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  *ms = (float)(b->stamp - a->stamp) * 0.25f;
  RET(E_SUCCESS);
}
hipError_t hipEventDestroy(hipEvent_t e) {
  lock(); int ok = e && obj_del(e); unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  free(e);
  RET(E_SUCCESS);
}
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *data) {
  if (!fn) RET(E_INVALID_VALUE);
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  fn(data);
  RET(E_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

hipError_t hipMalloc(void **p, size_t size) { lock(); hipError_t r = dev_alloc(p, size, R_DEV); unlock(); RET(r); }
hipError_t hipExtMallocWithFlags(void **p, size_t size, unsigned flags) { (void)flags; return hipMalloc(p, size); }
hipError_t hipMallocManaged(void **p, size_t size, unsigned flags) { (void)flags; return hipMalloc(p, size); }
hipError_t hipMallocAsync(void **p, size_t size, hipStream_t s) {
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  return hipMalloc(p, size);
}
hipError_t hipMallocPitch(void **p, size_t *pitch, size_t width, size_t height) {
  if (!pitch) RET(E_INVALID_VALUE);
  *pitch = round_up(width ? width : 1, 256);
  return hipMalloc(p, *pitch * height);
}
hipError_t hipFree(void *p) { lock(); hipError_t r = dev_free(p, R_DEV); unlock(); RET(r); }
hipError_t hipFreeAsync(void *p, hipStream_t s) {
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  return hipFree(p);
}
hipError_t hipHostMalloc(void **pp, size_t size, unsigned flags) {
  (void)flags;
  if (!pp) RET(E_INVALID_VALUE);
  size_t m = round_up(size ? size : 1, 4096);
  void *p = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) RET(E_OUT_OF_MEMORY);
  lock(); region_add((uintptr_t)p, size, m, R_HOST, 3); unlock();
  *pp = p;
  RET(E_SUCCESS);
}
hipError_t hipHostFree(void *p) {
  if (!p) RET(E_SUCCESS);
  lock();
  long i = region_base((uintptr_t)p, R_HOST);
  size_t m = i >= 0 ? g_reg[i].mapped : 0;
  if (i >= 0) region_del((size_t)i);
  unlock();
  if (i < 0) RET(E_INVALID_VALUE);
  munmap(p, m);
  RET(E_SUCCESS);
}
hipError_t hipHostRegister(void *p, size_t size, unsigned flags) {
  (void)flags;
  if (!p || !size) RET(E_INVALID_VALUE);
  lock(); region_add((uintptr_t)p, size, 0, R_HOSTREG, 3); unlock();
  RET(E_SUCCESS);
}
hipError_t hipHostUnregister(void *p) {
  lock();
  long i = region_base((uintptr_t)p, R_HOSTREG);
  if (i >= 0) region_del((size_t)i);
  unlock();
  RET(i >= 0 ? E_SUCCESS : E_INVALID_VALUE);
}
hipError_t hipHostGetDevicePointer(void **dp, void *p, unsigned flags) {
  (void)flags;
  if (!dp) RET(E_INVALID_VALUE);
  lock(); long i = region_at((uintptr_t)p); unlock();
  if (i < 0) RET(E_INVALID_VALUE);
  *dp = p;
  RET(E_SUCCESS);
}
hipError_t hipMemGetInfo(size_t *free_, size_t *total) {
  if (!free_ || !total) RET(E_INVALID_VALUE);
  lock(); *free_ = FH_TOTAL - g_used; *total = FH_TOTAL; unlock();
  RET(E_SUCCESS);
}

/* --- VMM: reservations are PROT_NONE mappings, physical memory is a memfd --- */

struct fh_vmem { int fd; size_t size; };

static int resv_containing(uintptr_t p, size_t len) {
  for (size_t i = 0; i < g_nrv; i++)
    if (p >= g_rv[i].base && p + len <= g_rv[i].base + g_rv[i].size && p + len >= p) return 1;
  return 0;
}
static int prop_ok(const hipMemAllocationProp *prop) {
  return prop && prop->type == 1 && prop->location.type == 1 && prop->location.id == 0;
}
hipError_t hipMemGetAllocationGranularity(size_t *g, const hipMemAllocationProp *prop, int option) {
  (void)option;
  if (!g || !prop_ok(prop)) RET(E_INVALID_VALUE);
  *g = FH_GRAN;
  RET(E_SUCCESS);
}
hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t align, void *addr, unsigned long long flags) {
  (void)align; (void)flags;
  if (!ptr || !size || size % FH_GRAN) RET(E_INVALID_VALUE);
  uintptr_t a = 0;
  lock();
  if (addr && (uintptr_t)addr % FH_GRAN == 0) {
    void *p = mmap(addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == addr) a = (uintptr_t)p;
    else if (p != MAP_FAILED) munmap(p, size);
  }
  if (!a) a = va_map(size, PROT_NONE, FH_GRAN);
  if (a) { GROW(g_rv, g_nrv, g_caprv); g_rv[g_nrv++] = (struct resv){a, size}; }
  unlock();
  if (!a) RET(E_OUT_OF_MEMORY);
  *ptr = (void *)a;
  RET(E_SUCCESS);
}
hipError_t hipMemAddressFree(void *ptr, size_t size) {
  lock();
  for (size_t i = 0; i < g_nrv; i++)
    if (g_rv[i].base == (uintptr_t)ptr && g_rv[i].size == size) {
      for (size_t j = 0; j < g_nreg;)
        if (g_reg[j].kind == R_VMM && g_reg[j].base >= g_rv[i].base && g_reg[j].base < g_rv[i].base + size) region_del(j);
        else j++;
      munmap(ptr, size);
      g_rv[i] = g_rv[--g_nrv];
      unlock();
      RET(E_SUCCESS);
    }
  unlock();
  RET(E_INVALID_VALUE);
}
hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *h, size_t size, const hipMemAllocationProp *prop, unsigned long long flags) {
  (void)flags;
  if (!h || !size || size % FH_GRAN || !prop_ok(prop)) RET(E_INVALID_VALUE);
  int fd = memfd_create("fake-hip-vmm", MFD_CLOEXEC);
  if (fd < 0) RET(E_OUT_OF_MEMORY);
  if (ftruncate(fd, (off_t)size) != 0) { close(fd); RET(E_OUT_OF_MEMORY); }
  struct fh_vmem *v = calloc(1, sizeof *v);
  v->fd = fd;
  v->size = size;
  lock(); obj_add(v); unlock();
  *h = v;
  RET(E_SUCCESS);
}
hipError_t hipMemRelease(hipMemGenericAllocationHandle_t h) {
  lock(); int ok = h && obj_del(h); unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  close(h->fd); /* live mappings keep the memory */
  free(h);
  RET(E_SUCCESS);
}
hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t h, unsigned long long flags) {
  (void)flags;
  lock();
  int ok = obj_known(h) && size && offset + size <= h->size && resv_containing((uintptr_t)ptr, size);
  if (ok) {
    void *p = mmap(ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, (off_t)offset);
    ok = p == ptr;
    if (ok) region_add((uintptr_t)ptr, size, 0, R_VMM, 0);
  }
  unlock();
  RET(ok ? E_SUCCESS : E_INVALID_VALUE);
}
hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc, size_t count) {
  if (!desc || count < 1 || desc->location.id != 0 || desc->flags != 3) RET(E_INVALID_VALUE);
  lock();
  int ok = 0;
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].kind == R_VMM && g_reg[i].base >= (uintptr_t)ptr && g_reg[i].base + g_reg[i].size <= (uintptr_t)ptr + size) {
      mprotect((void *)g_reg[i].base, g_reg[i].size, PROT_READ | PROT_WRITE);
      g_reg[i].access = 3;
      ok = 1;
    }
  unlock();
  RET(ok ? E_SUCCESS : E_INVALID_VALUE);
}
hipError_t hipMemUnmap(void *ptr, size_t size) {
  lock();
  long i = region_base((uintptr_t)ptr, R_VMM);
  int ok = i >= 0 && g_reg[i].size == size;
  if (ok) {
    mmap(ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    region_del((size_t)i);
  }
  unlock();
  RET(ok ? E_SUCCESS : E_INVALID_VALUE);
}

/* --- copies and memsets --- */

enum { K_H2H = 0, K_H2D = 1, K_D2H = 2, K_D2D = 3, K_DEFAULT = 4 };

static hipError_t copy(void *dst, const void *src, size_t n, int kind) {
  if (n == 0) return E_SUCCESS;
  if (!dst || !src) return E_INVALID_VALUE;
  lock();
  if (kind == K_DEFAULT)
    kind = is_device_ptr(src) ? (is_device_ptr(dst) ? K_D2D : K_D2H) : (is_device_ptr(dst) ? K_H2D : K_H2H);
  int ok = kind >= K_H2H && kind <= K_D2D;
  if (ok && (kind == K_H2D || kind == K_D2D)) ok = range_ok((uintptr_t)dst, n, 1);
  if (ok && (kind == K_D2H || kind == K_D2D)) ok = range_ok((uintptr_t)src, n, 1);
  if (ok) memmove(dst, src, n);
  unlock();
  return ok ? E_SUCCESS : E_INVALID_VALUE;
}
hipError_t hipMemcpy(void *d, const void *s, size_t n, int kind) { RET(copy(d, s, n, kind)); }
hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, int kind, hipStream_t st) {
  if (!stream_ok(st)) RET(E_INVALID_HANDLE);
  RET(copy(d, s, n, kind));
}
hipError_t hipMemcpyWithStream(void *d, const void *s, size_t n, int kind, hipStream_t st) { return hipMemcpyAsync(d, s, n, kind, st); }
hipError_t hipMemcpyHtoD(void *d, void *s, size_t n) { RET(copy(d, s, n, K_H2D)); }
hipError_t hipMemcpyDtoH(void *d, void *s, size_t n) { RET(copy(d, s, n, K_D2H)); }
hipError_t hipMemcpyDtoD(void *d, void *s, size_t n) { RET(copy(d, s, n, K_D2D)); }
hipError_t hipMemcpyHtoDAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_H2D, st); }
hipError_t hipMemcpyDtoHAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_D2H, st); }
hipError_t hipMemcpyDtoDAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_D2D, st); }

static hipError_t fill(void *dst, unsigned v, size_t count, int width, hipStream_t st) {
  if (!stream_ok(st)) return E_INVALID_HANDLE;
  lock();
  int ok = range_ok((uintptr_t)dst, count * (size_t)width, 1);
  if (ok) {
    unsigned char *p = dst;
    for (size_t i = 0; i < count; i++) {
      if (width == 1) p[i] = (unsigned char)v;
      else if (width == 2) { unsigned short x = (unsigned short)v; memcpy(p + 2 * i, &x, 2); }
      else memcpy(p + 4 * i, &v, 4);
    }
  }
  unlock();
  return ok ? E_SUCCESS : E_INVALID_VALUE;
}
hipError_t hipMemset(void *d, int v, size_t n) { RET(fill(d, (unsigned char)v, n, 1, NULL)); }
hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t s) { RET(fill(d, (unsigned char)v, n, 1, s)); }
hipError_t hipMemsetD8(void *d, unsigned char v, size_t n) { RET(fill(d, v, n, 1, NULL)); }
hipError_t hipMemsetD8Async(void *d, unsigned char v, size_t n, hipStream_t s) { RET(fill(d, v, n, 1, s)); }
hipError_t hipMemsetD16(void *d, unsigned short v, size_t n) { RET(fill(d, v, n, 2, NULL)); }
hipError_t hipMemsetD16Async(void *d, unsigned short v, size_t n, hipStream_t s) { RET(fill(d, v, n, 2, s)); }
hipError_t hipMemsetD32(void *d, int v, size_t n) { RET(fill(d, (unsigned)v, n, 4, NULL)); }
hipError_t hipMemsetD32Async(void *d, int v, size_t n, hipStream_t s) { RET(fill(d, (unsigned)v, n, 4, s)); }

/* ------------------------------------------------------------------------ */
/* Code: fat binaries, modules, functions, globals                          */
/* ------------------------------------------------------------------------ */

/* A code container: a registered fat binary or a loaded module. */
struct global { char *name; uintptr_t dev; size_t size; const void *host_var; };
struct fh_module {
  const unsigned char *image; /* a bundle or an ELF */
  size_t len;
  int owned;                  /* image was copied (modules) */
  struct global *globals;
  size_t nglob, capglob;
};
struct fh_func { struct fh_module *owner; const struct kernel *k; char *name; };

static struct fh_func **g_fn;
static size_t g_nfn, g_capfn;
/* host stub -> function (registered <<<>>> kernels) */
struct stub { const void *host; struct fh_func *f; };
static struct stub *g_stub;
static size_t g_nstub, g_capstub;

static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* Length of a bundle or ELF image, 0 if neither. */
static size_t image_len(const unsigned char *p) {
  if (!memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24)) {
    uint64_t n = rd64(p + 24), pos = 32, len = 32;
    if (n > 4096) return 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t off = rd64(p + pos), size = rd64(p + pos + 8), tl = rd64(p + pos + 16);
      if (tl > 4096) return 0;
      pos += 24 + tl;
      if (off + size > len) len = off + size;
      if (pos > len) len = pos;
    }
    return (size_t)len;
  }
  if (!memcmp(p, "\x7f" "ELF", 4) && p[4] == 2) {
    uint64_t shoff = rd64(p + 0x28), phoff = rd64(p + 0x20);
    uint64_t end = shoff + (uint64_t)rd16(p + 0x3c) * rd16(p + 0x3a);
    uint64_t pe = phoff + (uint64_t)rd16(p + 0x38) * rd16(p + 0x36);
    if (pe > end) end = pe;
    for (unsigned i = 0; i < rd16(p + 0x3c); i++) {
      const unsigned char *sh = p + shoff + (uint64_t)i * rd16(p + 0x3a);
      uint32_t type; memcpy(&type, sh + 4, 4);
      if (type == 8) continue; /* SHT_NOBITS */
      uint64_t e = rd64(sh + 0x18) + rd64(sh + 0x20);
      if (e > end) end = e;
    }
    return (size_t)end;
  }
  return 0;
}

/* Does the image hold the NUL-terminated string `name` (a symbol or metadata name)? */
static int image_has(const struct fh_module *m, const char *name) {
  size_t n = strlen(name) + 1;
  return m->image && memmem(m->image, m->len, name, n) != NULL;
}

/* ---- the kernels of the test programs, run on the CPU ---- */

struct kargs { const unsigned char *buf; size_t len; };
struct launch { dim3 grid, block; struct fh_module *owner; };

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

static struct global *global_find(struct fh_module *m, const char *name);

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
static hipError_t k_fill_u32(struct kargs a, const struct launch *l) { /* (unsigned*, unsigned, int) */
  unsigned *p = (unsigned *)arg_u64(a, 0);
  unsigned v = arg_u32(a, 8);
  size_t n = upto((int)arg_u32(a, 12), l);
  DEV(p, n * 4);
  for (size_t i = 0; i < n; i++) p[i] = v + (unsigned)i;
  return E_SUCCESS;
}
static hipError_t k_scale(struct kargs a, const struct launch *l) { /* (float*, float, int) */
  float *x = (float *)arg_u64(a, 0);
  float s = arg_f32(a, 8);
  size_t n = upto((int)arg_u32(a, 12), l);
  DEV(x, n * 4);
  for (size_t i = 0; i < n; i++) x[i] *= s;
  return E_SUCCESS;
}
static hipError_t k_add_into(struct kargs a, const struct launch *l) { /* (float*, const float*, int) */
  float *d = (float *)arg_u64(a, 0);
  const float *s = (const float *)arg_u64(a, 8);
  size_t n = upto((int)arg_u32(a, 16), l);
  DEV(d, n * 4); DEV(s, n * 4);
  for (size_t i = 0; i < n; i++) d[i] += s[i];
  return E_SUCCESS;
}

/* Kernel table: name, argument layout (what hipcc's metadata says: size@offset per argument
 * the program passes), CPU implementation. */
struct kernel {
  const char *name;
  int nargs;
  unsigned off[6], size[6];
  hipError_t (*run)(struct kargs, const struct launch *);
};
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

static struct fh_func *func_new(struct fh_module *owner, const char *name) {
  struct fh_func *f = calloc(1, sizeof *f);
  f->owner = owner;
  f->name = strdup(name);
  f->k = kernel_named(name);
  GROW(g_fn, g_nfn, g_capfn);
  g_fn[g_nfn++] = f;
  return f;
}
static int func_known(const struct fh_func *f) {
  for (size_t i = 0; i < g_nfn; i++)
    if (g_fn[i] == f) return 1;
  return 0;
}

/* Sizes of the __device__ variables of the test programs (found in a module by name). */
static const struct { const char *name; size_t size; } k_globals[] = {{"c_coeffs", 16}};

static struct global *global_add(struct fh_module *m, const char *name, size_t size, const void *init, const void *host_var) {
  void *p;
  if (dev_alloc(&p, size, R_GLOBAL) != E_SUCCESS) return NULL;
  if (init) memcpy(p, init, size);
  GROW(m->globals, m->nglob, m->capglob);
  struct global *g = &m->globals[m->nglob++];
  g->name = strdup(name);
  g->dev = (uintptr_t)p;
  g->size = size;
  g->host_var = host_var;
  return g;
}
/* A module's variable, created (zeroed) on first use when the image names it. */
static struct global *global_find(struct fh_module *m, const char *name) {
  for (size_t i = 0; i < m->nglob; i++)
    if (!strcmp(m->globals[i].name, name)) return &m->globals[i];
  if (!image_has(m, name)) return NULL;
  for (size_t i = 0; i < sizeof k_globals / sizeof k_globals[0]; i++)
    if (!strcmp(k_globals[i].name, name)) return global_add(m, name, k_globals[i].size, NULL, NULL);
  return NULL;
}

static struct fh_module **g_mod;
static size_t g_nmod, g_capmod;
static int mod_known(const struct fh_module *m) {
  for (size_t i = 0; i < g_nmod; i++)
    if (g_mod[i] == m) return 1;
  return 0;
}
static struct fh_module *mod_new(const unsigned char *image, size_t len, int copy) {
  struct fh_module *m = calloc(1, sizeof *m);
  if (copy) {
    unsigned char *c = malloc(len);
    memcpy(c, image, len);
    image = c;
  }
  m->image = image;
  m->len = len;
  m->owned = copy;
  GROW(g_mod, g_nmod, g_capmod);
  g_mod[g_nmod++] = m;
  return m;
}
static void mod_free(struct fh_module *m) {
  for (size_t i = 0; i < g_nmod; i++)
    if (g_mod[i] == m) { g_mod[i] = g_mod[--g_nmod]; break; }
  for (size_t i = 0; i < m->nglob; i++) { dev_free((void *)m->globals[i].dev, R_GLOBAL); free(m->globals[i].name); }
  for (size_t i = 0; i < g_nfn;)
    if (g_fn[i]->owner == m) { free(g_fn[i]->name); free(g_fn[i]); g_fn[i] = g_fn[--g_nfn]; }
    else i++;
  for (size_t i = 0; i < g_nstub;)
    if (!func_known(g_stub[i].f)) g_stub[i] = g_stub[--g_nstub];
    else i++;
  free(m->globals);
  if (m->owned) free((void *)m->image);
  free(m);
}

/* --- registration (what hipcc's start-up code calls) --- */

struct hipf_wrapper { unsigned magic, version; const void *binary; void *unused; };

void **__hipRegisterFatBinary(const void *data) {
  const struct hipf_wrapper *w = data;
  if (!w || w->magic != 0x48495046 || !w->binary) return NULL;
  size_t len = image_len(w->binary);
  if (!len) return NULL;
  lock();
  struct fh_module *m = mod_new(w->binary, len, 0);
  unlock();
  return (void **)m;
}
void __hipRegisterFunction(void **modules, const void *host, char *devfn, const char *devname,
                           unsigned limit, void *tid, void *bid, dim3 *bdim, dim3 *gdim, int *wsize) {
  (void)devfn; (void)limit; (void)tid; (void)bid; (void)bdim; (void)gdim; (void)wsize;
  lock();
  struct fh_module *m = (struct fh_module *)modules;
  if (mod_known(m) && host && devname) {
    GROW(g_stub, g_nstub, g_capstub);
    g_stub[g_nstub++] = (struct stub){host, func_new(m, devname)};
  }
  unlock();
}
void __hipRegisterVar(void **modules, void *var, char *hostvar, const char *devvar, int ext,
                      size_t size, int constant, int global) {
  (void)hostvar; (void)ext; (void)constant; (void)global;
  lock();
  struct fh_module *m = (struct fh_module *)modules;
  if (mod_known(m) && var && devvar && size) global_add(m, devvar, size, var, var);
  unlock();
}
void __hipUnregisterFatBinary(void **modules) {
  lock();
  if (mod_known((struct fh_module *)modules)) mod_free((struct fh_module *)modules);
  unlock();
}

static struct global *var_of(const void *host_var) {
  for (size_t i = 0; i < g_nmod; i++)
    for (size_t j = 0; j < g_mod[i]->nglob; j++)
      if (g_mod[i]->globals[j].host_var == host_var) return &g_mod[i]->globals[j];
  return NULL;
}
static hipError_t symbol_copy(const void *sym, void *host, size_t n, size_t off, int to_dev) {
  lock();
  struct global *g = var_of(sym);
  hipError_t r = !g ? E_INVALID_SYMBOL : (off + n > g->size || !host) ? E_INVALID_VALUE : E_SUCCESS;
  if (r == E_SUCCESS) {
    if (to_dev) memmove((char *)g->dev + off, host, n);
    else memmove(host, (char *)g->dev + off, n);
  }
  unlock();
  return r;
}
hipError_t hipMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off, int kind) {
  (void)kind;
  RET(symbol_copy(sym, (void *)src, n, off, 1));
}
hipError_t hipMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off, int kind, hipStream_t s) {
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  return hipMemcpyToSymbol(sym, src, n, off, kind);
}
hipError_t hipMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off, int kind) {
  (void)kind;
  RET(symbol_copy(sym, dst, n, off, 0));
}
hipError_t hipMemcpyFromSymbolAsync(void *dst, const void *sym, size_t n, size_t off, int kind, hipStream_t s) {
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  return hipMemcpyFromSymbol(dst, sym, n, off, kind);
}
hipError_t hipGetSymbolAddress(void **dp, const void *sym) {
  if (!dp) RET(E_INVALID_VALUE);
  lock(); struct global *g = var_of(sym); if (g) *dp = (void *)g->dev; unlock();
  RET(g ? E_SUCCESS : E_INVALID_SYMBOL);
}
hipError_t hipGetSymbolSize(size_t *size, const void *sym) {
  if (!size) RET(E_INVALID_VALUE);
  lock(); struct global *g = var_of(sym); if (g) *size = g->size; unlock();
  RET(g ? E_SUCCESS : E_INVALID_SYMBOL);
}

/* --- the module API --- */

static hipError_t load_image(hipModule_t *pm, const unsigned char *image) {
  if (!pm || !image) return E_INVALID_VALUE;
  size_t len = image_len(image);
  if (!len) return E_INVALID_IMAGE;
  lock(); *pm = mod_new(image, len, 1); unlock();
  return E_SUCCESS;
}
hipError_t hipModuleLoadData(hipModule_t *pm, const void *image) { RET(load_image(pm, image)); }
hipError_t hipModuleLoadDataEx(hipModule_t *pm, const void *image, unsigned n, int *o, void **v) {
  (void)n; (void)o; (void)v;
  RET(load_image(pm, image));
}
hipError_t hipModuleLoad(hipModule_t *pm, const char *path) {
  if (!pm || !path) RET(E_INVALID_VALUE);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) RET(E_FILE_NOT_FOUND);
  struct stat st;
  unsigned char *buf = NULL;
  hipError_t r = E_INVALID_IMAGE;
  if (fstat(fd, &st) == 0 && st.st_size >= 64 && (buf = malloc((size_t)st.st_size)) &&
      read(fd, buf, (size_t)st.st_size) == st.st_size && image_len(buf) &&
      image_len(buf) <= (size_t)st.st_size)
    r = load_image(pm, buf);
  close(fd);
  free(buf);
  RET(r);
}
hipError_t hipModuleUnload(hipModule_t m) {
  lock(); int ok = mod_known(m) && m->owned; if (ok) mod_free(m); unlock();
  RET(ok ? E_SUCCESS : E_INVALID_HANDLE);
}
hipError_t hipModuleGetFunction(hipFunction_t *pf, hipModule_t m, const char *name) {
  if (!pf || !name) RET(E_INVALID_VALUE);
  lock();
  hipError_t r = !mod_known(m) ? E_INVALID_HANDLE : !image_has(m, name) ? E_NOT_FOUND : E_SUCCESS;
  if (r == E_SUCCESS) *pf = func_new(m, name);
  unlock();
  RET(r);
}
hipError_t hipModuleGetGlobal(void **dp, size_t *bytes, hipModule_t m, const char *name) {
  if (!name) RET(E_INVALID_VALUE);
  lock();
  struct global *g = mod_known(m) ? global_find(m, name) : NULL;
  if (g) { if (dp) *dp = (void *)g->dev; if (bytes) *bytes = g->size; }
  unlock();
  RET(!mod_known(m) ? E_INVALID_HANDLE : g ? E_SUCCESS : E_NOT_FOUND);
}
const char *hipKernelNameRefByPtr(const void *host, hipStream_t s) {
  (void)s;
  const char *n = NULL;
  lock();
  for (size_t i = 0; i < g_nstub; i++)
    if (g_stub[i].host == host) n = g_stub[i].f->name;
  unlock();
  return n;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                 */
/* ------------------------------------------------------------------------ */

static hipError_t run(struct fh_func *f, dim3 grid, dim3 block, hipStream_t s, void **params, void **extra) {
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
  struct launch l = {grid, block, f->owner};
  return k->run(a, &l);
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
