/*
 * fake_hip_memory.c - "device" memory: the address window and its regions, hipMalloc and
 * hipFree variants, pinned and registered host memory, virtual memory management (reservations,
 * memfd-backed physical memory, mapping, access), copies and memsets.
 */
#include "fake_hip_internal.h"

/* ------------------------------------------------------------------------ */
/* Address space and regions                                                */
/* ------------------------------------------------------------------------ */

static struct region *g_reg;
static size_t g_nreg, g_capreg;

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
int range_ok(uintptr_t p, size_t len, int device) {
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
  return fake_map_aligned(len, align, prot);
}

hipError_t dev_alloc(void **out, size_t size, int kind) {
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

hipError_t dev_free(void *p, int kind) {
  if (!p) return E_SUCCESS;
  long i = region_base((uintptr_t)p, kind);
  if (i < 0) return E_INVALID_VALUE;
  munmap(p, g_reg[i].mapped);
  g_used -= g_reg[i].mapped;
  region_del((size_t)i);
  return E_SUCCESS;
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
/* Stream-ordered pools: a pool is a handle whose allocations are plain allocations here. */
struct fh_pool {
  int magic;
};
static struct fh_pool g_default_pool = {0x706f6f6c};
static hipMemPool_t g_current_pool = &g_default_pool;
static int pool_ok(hipMemPool_t p) { return p && p->magic == 0x706f6f6c; }
hipError_t hipMemPoolCreate(hipMemPool_t *p, const void *props) {
  if (!p || !props) RET(E_INVALID_VALUE);
  struct fh_pool *np = malloc(sizeof *np);
  if (!np) RET(E_OUT_OF_MEMORY);
  np->magic = 0x706f6f6c;
  *p = np;
  RET(E_SUCCESS);
}
hipError_t hipMemPoolDestroy(hipMemPool_t p) {
  if (!pool_ok(p) || p == &g_default_pool) RET(E_INVALID_VALUE);
  p->magic = 0;
  free(p);
  RET(E_SUCCESS);
}
hipError_t hipMemPoolTrimTo(hipMemPool_t p, size_t keep) { (void)keep; RET(pool_ok(p) ? E_SUCCESS : E_INVALID_VALUE); }
hipError_t hipMemPoolSetAttribute(hipMemPool_t p, int attr, void *v) {
  (void)attr;
  RET(pool_ok(p) && v ? E_SUCCESS : E_INVALID_VALUE);
}
hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *p, int dev) {
  if (!p || dev != 0) RET(E_INVALID_VALUE);
  *p = &g_default_pool;
  RET(E_SUCCESS);
}
hipError_t hipDeviceGetMemPool(hipMemPool_t *p, int dev) {
  if (!p || dev != 0) RET(E_INVALID_VALUE);
  *p = g_current_pool;
  RET(E_SUCCESS);
}
hipError_t hipDeviceSetMemPool(int dev, hipMemPool_t p) {
  if (dev != 0 || !pool_ok(p)) RET(E_INVALID_VALUE);
  g_current_pool = p;
  RET(E_SUCCESS);
}
hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t p, hipStream_t s) {
  if (!pool_ok(p)) RET(E_INVALID_VALUE);
  return hipMallocAsync(ptr, size, s);
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


static int kind_of(const void *dst, const void *src, int kind) {
  if (kind != K_DEFAULT) return kind;
  return is_device_ptr(src) ? (is_device_ptr(dst) ? K_D2D : K_D2H) : (is_device_ptr(dst) ? K_H2D : K_H2H);
}
/* The copy (the lock held). */
hipError_t copy_now(void *dst, const void *src, size_t n, int kind) {
  int ok = kind >= K_H2H && kind <= K_D2D;
  if (ok && (kind == K_H2D || kind == K_D2D)) ok = range_ok((uintptr_t)dst, n, 1);
  if (ok && (kind == K_D2H || kind == K_D2D)) ok = range_ok((uintptr_t)src, n, 1);
  if (ok) memmove(dst, src, n);
  return ok ? E_SUCCESS : E_INVALID_VALUE;
}
hipError_t copy(void *dst, const void *src, size_t n, int kind) {
  if (n == 0) return E_SUCCESS;
  if (!dst || !src) return E_INVALID_VALUE;
  lock();
  hipError_t r = copy_now(dst, src, n, kind_of(dst, src, kind));
  unlock();
  return r;
}
hipError_t hipMemcpy(void *d, const void *s, size_t n, int kind) { RET(copy(d, s, n, kind)); }
hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, int kind, hipStream_t st) {
  if (!stream_ok(st)) RET(E_INVALID_HANDLE);
  lock();
  struct fh_graph *g = capturing(st);
  hipError_t r = !g ? E_SUCCESS
                 : kind_of(d, s, kind) == K_D2D && d && s ? graph_add_copy(g, d, s, n)
                                                          : E_STREAM_CAPTURE_UNSUPPORTED;
  unlock();
  if (g) RET(r);
  RET(copy(d, s, n, kind));
}
hipError_t hipMemcpyWithStream(void *d, const void *s, size_t n, int kind, hipStream_t st) { return hipMemcpyAsync(d, s, n, kind, st); }
hipError_t hipMemcpyHtoD(void *d, void *s, size_t n) { RET(copy(d, s, n, K_H2D)); }
hipError_t hipMemcpyDtoH(void *d, void *s, size_t n) { RET(copy(d, s, n, K_D2H)); }
hipError_t hipMemcpyDtoD(void *d, void *s, size_t n) { RET(copy(d, s, n, K_D2D)); }
hipError_t hipMemcpyHtoDAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_H2D, st); }
hipError_t hipMemcpyDtoHAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_D2H, st); }
hipError_t hipMemcpyDtoDAsync(void *d, void *s, size_t n, hipStream_t st) { return hipMemcpyAsync(d, s, n, K_D2D, st); }

/* hipMemcpy2D: `height` rows of `width` bytes, each row checked as a copy of its own. */
static hipError_t copy_2d(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind) {
  if (h > 1 && (w > dp || w > sp)) return E_INVALID_VALUE;
  for (size_t r = 0; r < h; r++) {
    hipError_t e = copy((char *)d + r * dp, (const char *)s + r * sp, w, kind);
    if (e) return e;
  }
  return E_SUCCESS;
}
hipError_t hipMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind) {
  RET(copy_2d(d, dp, s, sp, w, h, kind));
}
hipError_t hipMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind,
                            hipStream_t st) {
  if (!stream_ok(st)) RET(E_INVALID_HANDLE);
  RET(copy_2d(d, dp, s, sp, w, h, kind));
}

/* hipMemcpy3DParms of ROCm 5.2 (linear memory only here: arrays are refused). */
typedef struct { size_t x, y, z; } hipPos;
typedef struct { void *ptr; size_t pitch, xsize, ysize; } hipPitchedPtr;
typedef struct {
  void *srcArray;
  hipPos srcPos;
  hipPitchedPtr srcPtr;
  void *dstArray;
  hipPos dstPos;
  hipPitchedPtr dstPtr;
  size_t extent[3]; /* width in bytes, height, depth */
  int kind;
} hipMemcpy3DParms;
_Static_assert(sizeof(hipMemcpy3DParms) == 160, "hipMemcpy3DParms layout");

/* Slice by slice, each as a 2D copy; a slice is `ysize` rows of its side. */
static hipError_t copy_3d(const hipMemcpy3DParms *p) {
  if (!p || p->srcArray || p->dstArray) return E_INVALID_VALUE;
  const hipPitchedPtr *S = &p->srcPtr, *D = &p->dstPtr;
  size_t w = p->extent[0], h = p->extent[1], depth = p->extent[2];
  if (depth > 1 && (p->srcPos.y + h > S->ysize || p->dstPos.y + h > D->ysize)) return E_INVALID_VALUE;
  for (size_t z = 0; z < depth; z++) {
    const char *s = (const char *)S->ptr + ((p->srcPos.z + z) * S->ysize + p->srcPos.y) * S->pitch + p->srcPos.x;
    char *d = (char *)D->ptr + ((p->dstPos.z + z) * D->ysize + p->dstPos.y) * D->pitch + p->dstPos.x;
    hipError_t e = copy_2d(d, D->pitch, s, S->pitch, w, h, p->kind);
    if (e) return e;
  }
  return E_SUCCESS;
}
hipError_t hipMemcpy3D(const hipMemcpy3DParms *p) { RET(copy_3d(p)); }
hipError_t hipMemcpy3DAsync(const hipMemcpy3DParms *p, hipStream_t st) {
  if (!stream_ok(st)) RET(E_INVALID_HANDLE);
  RET(copy_3d(p));
}

/* Set `count` elements of `width` bytes at `dst` to `v` (the lock held). */
hipError_t set_elements(void *dst, unsigned v, size_t count, int width) {
  int ok = range_ok((uintptr_t)dst, count * (size_t)width, 1);
  if (ok) {
    unsigned char *p = dst;
    for (size_t i = 0; i < count; i++) {
      if (width == 1) p[i] = (unsigned char)v;
      else if (width == 2) { unsigned short x = (unsigned short)v; memcpy(p + 2 * i, &x, 2); }
      else memcpy(p + 4 * i, &v, 4);
    }
  }
  return ok ? E_SUCCESS : E_INVALID_VALUE;
}
static hipError_t fill(void *dst, unsigned v, size_t count, int width, hipStream_t st) {
  if (!stream_ok(st)) return E_INVALID_HANDLE;
  lock();
  struct fh_graph *g = capturing(st);
  hipError_t r = g ? graph_add_memset(g, dst, v, count, width) : set_elements(dst, v, count, width);
  unlock();
  return r;
}
hipError_t hipMemset(void *d, int v, size_t n) { RET(fill(d, (unsigned char)v, n, 1, NULL)); }
/* hipMemset2D: `h` rows of `w` bytes, `pitch` apart, each row a memset of its own. */
static hipError_t fill_2d(void *d, size_t pitch, int v, size_t w, size_t h, hipStream_t st) {
  if (h > 1 && w > pitch) return E_INVALID_VALUE;
  for (size_t r = 0; r < h; r++) {
    hipError_t e = fill((char *)d + r * pitch, (unsigned char)v, w, 1, st);
    if (e) return e;
  }
  return E_SUCCESS;
}
hipError_t hipMemset2D(void *d, size_t pitch, int v, size_t w, size_t h) { RET(fill_2d(d, pitch, v, w, h, NULL)); }
hipError_t hipMemset2DAsync(void *d, size_t pitch, int v, size_t w, size_t h, hipStream_t s) {
  RET(fill_2d(d, pitch, v, w, h, s));
}
hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t s) { RET(fill(d, (unsigned char)v, n, 1, s)); }
hipError_t hipMemsetD8(void *d, unsigned char v, size_t n) { RET(fill(d, v, n, 1, NULL)); }
hipError_t hipMemsetD8Async(void *d, unsigned char v, size_t n, hipStream_t s) { RET(fill(d, v, n, 1, s)); }
hipError_t hipMemsetD16(void *d, unsigned short v, size_t n) { RET(fill(d, v, n, 2, NULL)); }
hipError_t hipMemsetD16Async(void *d, unsigned short v, size_t n, hipStream_t s) { RET(fill(d, v, n, 2, s)); }
hipError_t hipMemsetD32(void *d, int v, size_t n) { RET(fill(d, (unsigned)v, n, 4, NULL)); }
hipError_t hipMemsetD32Async(void *d, int v, size_t n, hipStream_t s) { RET(fill(d, (unsigned)v, n, 4, s)); }
