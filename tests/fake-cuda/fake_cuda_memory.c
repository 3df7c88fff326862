/*
 * fake_cuda_memory.c - "device" memory: the bump-pointer address spaces, chunks, regions
 * and reservations behind every allocation; the cuMemAlloc and cuMemFree calls, stream-ordered pools,
 * managed and pinned host memory, pointer attributes; virtual memory management (cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess).
 */
#include <stdatomic.h>

#include "fake_cuda_internal.h"

#include <fcntl.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------ */
/* Memory: address spaces, chunks, regions, reservations                     */
/* ------------------------------------------------------------------------ */
struct vspace g_dev;  /* cuMemAlloc*, VMM reservations without a hint */
struct vspace g_glob; /* __device__ globals of loaded modules */
struct vspace g_fb;   /* reservations whose address hint could not be honoured */

static struct chunk *g_ch;
static size_t g_nch, g_capch;

struct region *g_reg;
static size_t g_nreg, g_capreg;

static struct resv *g_rv;
static size_t g_nrv, g_caprv;


int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen) {
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
  return fake_map_aligned(len, align, prot);
}

/* The device of the allocation being made (the current context's). */
static int g_alloc_dev;

static struct chunk *chunk_add(uintptr_t base, size_t size, size_t used, int live, int open) {
  GROW(g_ch, g_nch, g_capch);
  struct chunk *c = &g_ch[g_nch++];
  c->base = base; c->size = size; c->used = used; c->live = live; c->open = open;
  c->dev = g_alloc_dev;
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
uintptr_t dev_alloc(struct vspace *vs, size_t size, size_t *charged) {
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
  if (!c || c->used + r > c->size || c->dev != g_alloc_dev) {
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

void dev_release(uintptr_t p) {
  struct chunk *c = chunk_containing(p);
  if (!c) return;
  if (--c->live == 0 && !c->open) chunk_drop(c);
}

size_t region_add(uintptr_t base, size_t size, int kind, int access, struct fc_ctx *ctx,
                         size_t charged, struct fc_vmem *vm) {
  GROW(g_reg, g_nreg, g_capreg);
  struct region *r = &g_reg[g_nreg];
  r->base = base; r->size = size; r->kind = kind; r->access = access; r->ctx = ctx;
  r->dev = kind == R_HOST || kind == R_HOSTREG || kind == R_MANAGED || kind == R_GLOBAL ? -1
           : vm ? vm->dev : ctx ? ctx->dev : 0;
  r->reach = 0;
  r->charged = charged; r->id = g_next_id++; r->vm = vm;
  return g_nreg++;
}
long region_find(uintptr_t p) {
  /* kernels walk one region many times: try the last hit first */
  static _Atomic size_t last_hit;
  size_t l = atomic_load_explicit(&last_hit, memory_order_relaxed);
  if (l < g_nreg && p >= g_reg[l].base && p - g_reg[l].base < g_reg[l].size) return (long)l;
  for (size_t i = 0; i < g_nreg; i++)
    if (p >= g_reg[i].base && p - g_reg[i].base < g_reg[i].size) {
      atomic_store_explicit(&last_hit, i, memory_order_relaxed);
      return (long)i;
    }
  return -1;
}
long region_find_base(uintptr_t p, int kind) {
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].base == p && g_reg[i].kind == kind) return (long)i;
  return -1;
}
void region_del(size_t i) { g_reg[i] = g_reg[--g_nreg]; }

/* Is [p, p+len) entirely inside allocations that allow `want` (1 read, 2 write)? */
int range_ok(uintptr_t p, size_t len, int want) { return kernel_ok(p, len, want, -1); }

/* May a kernel on device `dev` (-1: any) touch [p, p+len) for `want`? The range must lie in
   allocations allowing it, each on that device, opened to it (VMM), on a peer it has access to,
   or on none (host memory). */
int kernel_ok(uintptr_t p, size_t len, int want, int dev) {
  if (len == 0) return 1;
  uintptr_t end = p + len;
  if (end < p) return 0;
  while (p < end) {
    long i = region_find(p);
    if (i < 0) return 0;
    struct region *r = &g_reg[i];
    if ((r->access & want) != want) return 0;
    int ok = dev < 0 || r->dev < 0 || (r->vm ? (r->reach >> dev & 1) : r->dev == dev);
    if (!ok && !r->vm) { /* another device's memory: reachable after peer access */
      struct fc_ctx *c = NULL;
      cur_ctx(&c);
      ok = c && (c->peers >> r->dev & 1);
    }
    if (!ok) return 0;
    p = r->base + r->size;
  }
  return 1;
}

/* Does p fall in address space the fake manages as device memory? */
int in_device_va(uintptr_t p) {
  if (chunk_containing(p)) return 1;
  for (size_t i = 0; i < g_nrv; i++)
    if (p >= g_rv[i].base && p - g_rv[i].base < g_rv[i].size) return 1;
  return 0;
}
int is_device_kind(int k) {
  return k == R_DEV || k == R_GLOBAL || k == R_VMM || k == R_MANAGED || k == R_IPC;
}

int chunk_range(uintptr_t p, uintptr_t *base, size_t *size) {
  struct chunk *c = chunk_containing(p);
  if (!c) return 0;
  *base = c->base;
  *size = c->size;
  return 1;
}

uintptr_t dev_map_file(int fd, size_t len) {
  uintptr_t a = va_map(&g_dev, len, FC_GRAN, PROT_NONE);
  if (!a) return 0;
  if (mmap((void *)a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    munmap((void *)a, len);
    return 0;
  }
  chunk_add(a, len, len, 1, 0);
  return a;
}

void dev_unmap_file(uintptr_t base) {
  struct chunk *c = chunk_containing(base);
  if (c && c->base == base) chunk_drop(c);
}

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

/* FAKE_CUDA_ALLOC_FILL=<byte>: fresh device memory (cuMemAlloc, cuMemCreate) holds that byte
   instead of zeros, as a real GPU's fresh memory holds whatever was there before; -1: unset. */
static int alloc_fill(void) {
  const char *v = getenv("FAKE_CUDA_ALLOC_FILL");
  return v && *v ? (int)(strtoul(v, NULL, 0) & 0xff) : -1;
}

CUresult i_mem_alloc(CUdeviceptr *dptr, size_t size, CUstream s, int async) {
  struct fc_ctx *c;
  if (!dptr) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (async) {
    CUresult e = chk_stream(s);
    if (e) return e;
  }
  if (size == 0) return E_INVALID_VALUE;
  if (!async) NO_STRICT_CAPTURE();
  g_alloc_dev = c->dev;
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
  int fill = alloc_fill();
  if (fill >= 0) memset_run(p, (unsigned)fill, size, 1);
  *dptr = p;
  return E_SUCCESS;
}
/* Rows are padded to 512 bytes (the texture pitch alignment of current GPUs). */
CUresult i_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem) {
  if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16)) return E_INVALID_VALUE;
  size_t p = round_up(width, 512);
  if (p < width || height > SIZE_MAX / p) return E_INVALID_VALUE;
  CUresult e = i_mem_alloc(dptr, p * height, NULL, 0);
  if (!e) *pitch = p;
  return e;
}
CUresult i_mem_free(CUdeviceptr p, CUstream s, int async) {
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
CUresult i_mem_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned flags) {
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

static struct fc_pool g_default_pool = {{1, 0, {1, 0}, NULL, 0, 0, {0}}, {0, 1, 1, 1, 0, 0, 0, 0, 0}, 3};
static struct fc_pool *g_cur_pool = &g_default_pool;
static int pool_ok(const void *p) { return p == &g_default_pool || obj_is(p, T_POOL); }

CUresult i_pool_create(struct fc_pool **pp, const CUmemPoolProps *props) {
  struct fc_ctx *c;
  if (!pp || !props) return E_INVALID_VALUE;
  NEED_CTX(c);
  if (props->allocType != 1 || props->location.type != 1) return E_INVALID_VALUE;
  if (chk_dev(props->location.id)) return E_INVALID_DEVICE;
  struct fc_pool *p = calloc(1, sizeof *p);
  if (!p) return E_OUT_OF_MEMORY;
  p->props = *props;
  p->attr[1] = p->attr[2] = p->attr[3] = 1;
  p->access = 3;
  obj_add(p, T_POOL);
  *pp = p;
  return E_SUCCESS;
}
CUresult i_pool_destroy(struct fc_pool *p) {
  if (!obj_is(p, T_POOL)) return E_INVALID_HANDLE;
  if (g_cur_pool == p) g_cur_pool = &g_default_pool;
  obj_del(p);
  free(p);
  return E_SUCCESS;
}
/* Attributes 1-3 (REUSE_*) are ints; 4 RELEASE_THRESHOLD; 5-8 reserved/used current/high
 * (read-only but for resetting the high marks to 0). */
CUresult i_pool_attr(struct fc_pool *p, int attr, void *v, int set) {
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
CUresult i_pool_trim(struct fc_pool *p, size_t keep) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  if (keep == 0) pool_trim();
  return E_SUCCESS;
}
CUresult i_pool_set_access(struct fc_pool *p, const CUmemAccessDesc *desc, size_t count) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  if (!desc || count == 0) return E_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != 1 || desc[i].flags < 0 || desc[i].flags > 3) return E_INVALID_VALUE;
    if (chk_dev(desc[i].location.id)) return E_INVALID_DEVICE;
    p->access = desc[i].flags;
  }
  return E_SUCCESS;
}
CUresult i_device_pool(struct fc_pool **pp, CUdevice d, int def) {
  if (!pp) return E_INVALID_VALUE;
  CUresult e = chk_dev(d);
  if (e) return e;
  *pp = def ? &g_default_pool : g_cur_pool;
  return E_SUCCESS;
}
CUresult i_device_set_pool(CUdevice d, struct fc_pool *p) {
  CUresult e = chk_dev(d);
  if (e) return e;
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  g_cur_pool = p;
  return E_SUCCESS;
}
CUresult i_alloc_from_pool(CUdeviceptr *dptr, size_t size, struct fc_pool *p, CUstream s) {
  if (!pool_ok(p)) return E_INVALID_HANDLE;
  return i_mem_alloc(dptr, size, s, 1);
}
CUresult i_mem_get_info(size_t *fr, size_t *total) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (fr) *fr = g_total - g_used;
  if (total) *total = g_total;
  return E_SUCCESS;
}
CUresult i_mem_addr_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  long i = region_find(p);
  if (i < 0 || !is_device_kind(g_reg[i].kind)) return E_NOT_FOUND;
  if (pbase) *pbase = g_reg[i].base;
  if (psize) *psize = g_reg[i].size;
  return E_SUCCESS;
}

/* FAKE_CUDA_HOST_IN_DEVICE_SPACE=1: pinned memory comes from the addresses device memory comes
 * from, next to it, as the NVIDIA driver lays them out. */
CUresult i_host_alloc(void **pp, size_t size, unsigned flags) {
  struct fc_ctx *c;
  if (!pp || size == 0 || flags > 7) return E_INVALID_VALUE;
  NEED_CTX(c);
  size_t m = round_up(size, 4096);
  const char *near = getenv("FAKE_CUDA_HOST_IN_DEVICE_SPACE");
  void *p = near && *near == '1' ? (void *)va_map(&g_dev, m, 4096, PROT_READ | PROT_WRITE)
                                 : mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || !p) return E_OUT_OF_MEMORY;
  region_add((uintptr_t)p, size, R_HOST, 3, c, m, NULL);
  *pp = p;
  return E_SUCCESS;
}
/* The host region of `kind` based at p forgotten (R_HOST: its pages unmapped too), or `missing`. */
static CUresult host_region_drop(void *p, int kind, CUresult missing) {
  struct fc_ctx *c;
  NEED_CTX(c);
  long i = region_find_base((uintptr_t)p, kind);
  if (i < 0) return missing;
  if (kind == R_HOST) munmap(p, g_reg[i].charged);
  region_del((size_t)i);
  return E_SUCCESS;
}
CUresult i_host_free(void *p) { return host_region_drop(p, R_HOST, E_INVALID_VALUE); }
CUresult i_host_register(void *p, size_t size, unsigned flags) {
  struct fc_ctx *c;
  if (!p || size == 0 || flags > 15) return E_INVALID_VALUE;
  NEED_CTX(c);
  for (size_t i = 0; i < g_nreg; i++)
    if (overlaps((uintptr_t)p, size, g_reg[i].base, g_reg[i].size)) return E_HOST_MEMORY_ALREADY_REGISTERED;
  region_add((uintptr_t)p, size, R_HOSTREG, 3, c, 0, NULL);
  return E_SUCCESS;
}
CUresult i_host_unregister(void *p) { return host_region_drop(p, R_HOSTREG, E_HOST_MEMORY_NOT_REGISTERED); }
CUresult i_host_get_dptr(CUdeviceptr *pd, void *p, unsigned flags) {
  struct fc_ctx *c;
  if (!pd || flags != 0) return E_INVALID_VALUE;
  NEED_CTX(c);
  long i = region_find((uintptr_t)p);
  if (i < 0 || (g_reg[i].kind != R_HOST && g_reg[i].kind != R_HOSTREG)) return E_INVALID_VALUE;
  *pd = (uintptr_t)p; /* unified addressing: same value */
  return E_SUCCESS;
}

/* bool-typed attributes are written as one byte; `c`: the current context (ACCESS_FLAGS is its
 * device's access to a VMM mapping) */
static CUresult ptr_attr(struct fc_ctx *c, void *data, int attr, CUdeviceptr p) {
  if (!data) return E_INVALID_VALUE;
  long i = region_find(p);
  struct region *r = i >= 0 ? &g_reg[i] : NULL;
  int dev = r ? is_device_kind(r->kind) : in_device_va(p);
  if (attr == 2) { /* MEMORY_TYPE: like the real driver, an error for pageable memory it does not know */
    if (!r && !dev) return E_INVALID_VALUE;
    *(unsigned *)data = dev ? 2u : 1u;
    return E_SUCCESS;
  }
  if (!r) return E_INVALID_VALUE; /* every other attribute: only of memory the fake knows */
  switch (attr) {
  case 1: *(CUcontext *)data = r->ctx; break; /* CONTEXT */
  case 3: *(CUdeviceptr *)data = p; break;    /* DEVICE_POINTER */
  case 4:                                     /* HOST_POINTER */
    if (dev) return E_INVALID_VALUE;
    *(void **)data = (void *)(uintptr_t)p;
    break;
  case 8: *(unsigned char *)data = r->kind == R_MANAGED; break; /* IS_MANAGED */
  case 6:                                                       /* SYNC_MEMOPS */
  case 10: *(unsigned char *)data = 0; break;                   /* IS_LEGACY_CUDA_IPC_CAPABLE */
  case 13: *(unsigned char *)data = 1; break;                   /* MAPPED */
  case 7: *(unsigned long long *)data = r->id; break;           /* BUFFER_ID */
  case 9: *(int *)data = 0; break;                              /* DEVICE_ORDINAL */
  case 11: *(CUdeviceptr *)data = r->base; break;               /* RANGE_START_ADDR */
  case 12: *(size_t *)data = r->size; break;                    /* RANGE_SIZE */
  case 16:                                                      /* ACCESS_FLAGS (VMM mappings) */
    if (r->kind != R_VMM) return E_INVALID_VALUE;
    *(int *)data = (r->reach >> c->dev & 1) ? r->access : 0;
    break;
  case 18:                                                      /* MAPPING_SIZE */
  case 19:                                                      /* MAPPING_BASE_ADDR */
    if (r->kind != R_VMM) return E_INVALID_VALUE;
    if (attr == 18) *(size_t *)data = r->size;
    else *(CUdeviceptr *)data = r->base;
    break;
  default: return E_INVALID_VALUE;
  }
  return E_SUCCESS;
}
CUresult i_ptr_get_attr(void *data, int attr, CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  return ptr_attr(c, data, attr, p);
}
static size_t ptr_attr_size(int attr) {
  switch (attr) {
  case 2: case 9: return 4;
  case 6: case 8: case 10: case 13: return 1;
  default: return 8;
  }
}
CUresult i_ptr_get_attrs(unsigned n, int *attrs, void **data, CUdeviceptr p) {
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
    CUresult e = ptr_attr(c, data[k], a, p);
    if (e) memset(data[k], 0, ptr_attr_size(a));
  }
  return E_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                */
/* ------------------------------------------------------------------------ */

/* Pinned memory on a device, or on the host's one NUMA node (type 3, node 0: a NUMA node is
 * no device, and node 1 does not exist). */
static CUresult chk_prop(const CUmemAllocationProp *prop) {
  if (!prop || prop->type != 1) return E_INVALID_VALUE;
  if (prop->location.type == 3) return prop->location.id == 0 ? E_SUCCESS : E_INVALID_VALUE;
  if (prop->location.type != 1) return E_INVALID_VALUE;
  if (chk_dev(prop->location.id)) return E_INVALID_DEVICE;
  return E_SUCCESS;
}
CUresult i_mem_granularity(size_t *g, const CUmemAllocationProp *prop, int option) {
  if (!g || option < 0 || option > 1) return E_INVALID_VALUE;
  CUresult e = chk_prop(prop);
  if (e) return e;
  *g = FC_GRAN;
  return E_SUCCESS;
}
CUresult i_mem_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
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
CUresult i_mem_addr_free(CUdeviceptr ptr, size_t size) {
  long k = resv_find_exact(ptr, size);
  if (k < 0) return E_INVALID_VALUE;
  for (size_t i = g_nreg; i-- > 0;)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) vmm_drop_region(i, 0);
  munmap((void *)(uintptr_t)ptr, size);
  g_rv[k] = g_rv[--g_nrv];
  return E_SUCCESS;
}
CUresult i_mem_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
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
  int fill = alloc_fill();
  if (fill >= 0) {
    static unsigned char bytes[1 << 16];
    memset(bytes, fill, sizeof bytes);
    for (size_t at = 0; at < size; at += sizeof bytes) {
      size_t n = size - at < sizeof bytes ? size - at : sizeof bytes;
      if (pwrite(fd, bytes, n, (off_t)at) != (ssize_t)n) { close(fd); return E_OUT_OF_MEMORY; }
    }
  }
  struct fc_vmem *vm = calloc(1, sizeof *vm);
  if (!vm) { close(fd); return E_OUT_OF_MEMORY; }
  vm->fd = fd;
  vm->size = size;
  vm->dev = prop->location.type == 3 ? 0 : prop->location.id;
  if (g_trace && prop->location.type == 3) fprintf(stderr, "[fake-cuda] cuMemCreate on the host\n");
  else if (g_trace) fprintf(stderr, "[fake-cuda] cuMemCreate on device %d\n", vm->dev);
  obj_add(vm, T_VMEM);
  g_used += size;
  *h = (CUmemGenericAllocationHandle)(uintptr_t)vm;
  return E_SUCCESS;
}
static struct fc_vmem *vmem_get(CUmemGenericAllocationHandle h) {
  struct fc_vmem *vm = (struct fc_vmem *)(uintptr_t)h;
  return obj_is(vm, T_VMEM) ? vm : NULL;
}
/* FAKE_CUDA_EXPORT_ONE_FILE=PATH: every export is a descriptor of the one file PATH, as the
 * NVIDIA driver's are (one device and inode for all), its own open file description telling the
 * allocation apart: its offset holds the exporting process and its memfd's descriptor number,
 * reopened through /proc by the importer. */
static int export_one_file(const struct fc_vmem *vm) {
  const char *path = getenv("FAKE_CUDA_EXPORT_ONE_FILE");
  if (!path || !*path) return fcntl(vm->fd, F_DUPFD_CLOEXEC, 0);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (lseek(fd, ((off_t)getpid() << 20) | vm->fd, SEEK_SET) < 0) { close(fd); return -1; }
  return fd;
}
static int import_one_file(int fd) {
  if (!getenv("FAKE_CUDA_EXPORT_ONE_FILE")) return fcntl(fd, F_DUPFD_CLOEXEC, 0);
  off_t at = lseek(fd, 0, SEEK_CUR);
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/%ld/fd/%ld", (long)(at >> 20), (long)(at & 0xfffff));
  return open(proc, O_RDWR | O_CLOEXEC);
}
/* cuMemExportToShareableHandle: a POSIX file descriptor of the memfd (type 1 only). */
CUresult i_mem_export_shareable(void *out, CUmemGenericAllocationHandle h, int type,
                                unsigned long long flags) {
  struct fc_vmem *vm = vmem_get(h);
  if (!out || !vm || vm->released || flags != 0) return E_INVALID_VALUE;
  if (type != 1) return E_NOT_SUPPORTED;
  int fd = export_one_file(vm);
  if (fd < 0) return E_OUT_OF_MEMORY;
  *(int *)out = fd;
  return E_SUCCESS;
}
/* cuMemImportFromShareableHandle: physical memory of the file the descriptor refers to. */
CUresult i_mem_import_shareable(CUmemGenericAllocationHandle *h, void *os, int type) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!h) return E_INVALID_VALUE;
  if (type != 1) return E_NOT_SUPPORTED;
  struct stat st;
  int fd = import_one_file((int)(intptr_t)os);
  if (fd < 0) return E_INVALID_VALUE;
  if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % FC_GRAN) { close(fd); return E_INVALID_VALUE; }
  struct fc_vmem *vm = calloc(1, sizeof *vm);
  if (!vm) { close(fd); return E_OUT_OF_MEMORY; }
  vm->fd = fd;
  vm->size = (size_t)st.st_size;
  vm->dev = c->dev;
  obj_add(vm, T_VMEM);
  *h = (CUmemGenericAllocationHandle)(uintptr_t)vm;
  return E_SUCCESS;
}
CUresult i_mem_release(CUmemGenericAllocationHandle h) {
  struct fc_vmem *vm = vmem_get(h);
  if (!vm || vm->released) return E_INVALID_VALUE;
  vm->released = 1;
  vmem_maybe_free(vm);
  return E_SUCCESS;
}
CUresult i_mem_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
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
CUresult i_mem_unmap(CUdeviceptr ptr, size_t size) {
  if (!vmm_tiles(ptr, size)) return E_INVALID_VALUE;
  busy_unmapped(ptr, size);
  for (size_t i = g_nreg; i-- > 0;)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) vmm_drop_region(i, 1);
  return E_SUCCESS;
}
/* cuMemGetAccess: what cuMemSetAccess let device `loc` do with the mapping holding `ptr`. */
CUresult i_mem_get_access(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr ptr) {
  if (!flags || !loc || loc->type != 1) return E_INVALID_VALUE;
  if (chk_dev(loc->id)) return E_INVALID_DEVICE;
  long i = region_find((uintptr_t)ptr);
  if (i < 0 || g_reg[i].kind != R_VMM) return E_INVALID_VALUE;
  *flags = (g_reg[i].reach >> loc->id & 1) ? (unsigned long long)g_reg[i].access : 0;
  return E_SUCCESS;
}
CUresult i_mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  if (!desc || count == 0) return E_INVALID_VALUE;
  int flags = 0;
  unsigned long long reach = 0;
  for (size_t k = 0; k < count; k++) {
    if (desc[k].location.type != 1) return E_INVALID_VALUE;
    if (chk_dev(desc[k].location.id)) return E_INVALID_DEVICE;
    if (desc[k].flags != 0 && desc[k].flags != 1 && desc[k].flags != 3) return E_INVALID_VALUE;
    flags = desc[k].flags;
    if (flags) reach |= 1ull << desc[k].location.id;
  }
  if (!vmm_tiles(ptr, size)) return E_INVALID_VALUE;
  int prot = flags == 3 ? PROT_READ | PROT_WRITE : flags == 1 ? PROT_READ : PROT_NONE;
  if (mprotect((void *)(uintptr_t)ptr, size, prot) != 0) return E_INVALID_VALUE;
  for (size_t i = 0; i < g_nreg; i++)
    if (g_reg[i].kind == R_VMM && overlaps(g_reg[i].base, g_reg[i].size, ptr, size)) {
      g_reg[i].access = flags;
      g_reg[i].reach = reach;
    }
  return E_SUCCESS;
}
