/*
 * fake_cuda_module.c - code: module images (fatbin wrappers, fatbins, text), the
 * `.entry`/`.global` module text, modules, libraries, functions, kernels and their attributes
 * and parameter layouts, the export table, occupancy.
 */
#include "fake_cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Code: images, modules, libraries, functions, kernels                     */
/* ------------------------------------------------------------------------ */

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
  /* tma_load(CUtensorMap m, float *out, int n): out[i] = float i at m's address (the map by
   * value, 64-byte aligned); tma_load_global(const CUtensorMap *m, float *out, int n): the same,
   * the map read from device memory */
  {"tma_load", K_TMA_LOAD, 3, {{0, 128}, {128, 8}, {136, 4}}},
  {"tma_load_global", K_TMA_LOAD_GLOBAL, 3, {{0, 8}, {8, 8}, {16, 4}}},
  {"idle", K_NOOP, 1, {{0, 8}}},      /* does nothing (the `launches` mode: replay's cost per launch) */
  /* hrr_digest(const u64 *src, u64 nwords, u64 *out): capture's GPU digests of a D2H result
   * (crates/hrr-capture/gpu/digest.cu), computed the same way here */
  {"hrr_digest", K_DIGEST, 3, {{0, 8}, {8, 8}, {16, 8}}},
  /* hrr_fingerprint(const u64 *src, u64 nchunks, u64 *out, Secret secret): capture's GPU
   * fingerprints of the 64 KiB chunks of a result that lands in host-visible memory (the same
   * file; XXH3's 192-byte secret by value, unused here: the reference has it) */
  {"hrr_fingerprint", K_FINGERPRINT, 4, {{0, 8}, {8, 8}, {16, 8}, {24, 192}}},
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
    const unsigned char *e = p + hs, *end = p + hs + fs;
    uint16_t kind, ever;
    memcpy(&kind, e, 2);
    memcpy(&ever, e + 2, 2);
    if ((kind == 1 || kind == 2) && ever == 0x0101) {
      /* entries {u16 kind, u16 0x0101, u32 header size, u64 payload size, ...} as nvcc writes
       * them: the text is the first PTX (kind 1) entry's payload; ELF entries (kind 2) are
       * skipped (they carry what capture reads of the code, `.nv.info.*`) */
      while (e + 16 <= end) {
        uint32_t eh;
        uint64_t ps;
        memcpy(&kind, e, 2);
        memcpy(&eh, e + 4, 4);
        memcpy(&ps, e + 8, 8);
        if (eh < 16 || ps > (uint64_t)(end - e) - eh) return E_INVALID_IMAGE;
        if (kind == 1) {
          *text = (const char *)e + eh;
          *len = (size_t)ps;
          return E_SUCCESS;
        }
        e += eh + ps;
      }
      return E_INVALID_IMAGE;
    }
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

/* Function blocks freed by unloads, the last freed first: the next function made takes one,
 * so a handle value comes back for another function, as a real driver's do. */
#define FREED_FUNCS 64
static struct fc_func *g_freed_funcs[FREED_FUNCS];
static int g_n_freed_funcs;

static struct fc_func *func_block(void) {
  if (g_n_freed_funcs == 0) return calloc(1, sizeof(struct fc_func));
  struct fc_func *f = g_freed_funcs[--g_n_freed_funcs];
  memset(f, 0, sizeof *f);
  return f;
}

static void func_block_free(struct fc_func *f) {
  if (g_n_freed_funcs < FREED_FUNCS)
    g_freed_funcs[g_n_freed_funcs++] = f;
  else
    free(f);
}

static CUresult mod_add_func(struct fc_module *m, const char *name, char **ptok, int npt) {
  if (strlen(name) > FC_NAME_MAX) return E_INVALID_IMAGE;
  for (int i = 0; i < m->nf; i++)
    if (!strcmp(m->f[i]->name, name)) return E_SUCCESS;
  struct fc_func *f = func_block();
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
  for (int i = m->nf - 1; i >= 0; i--) { /* the first function's block is reused first */
    struct fc_func *f = m->f[i];
    if (f->kern) {
      obj_del(f->kern);
      free(f->kern);
    }
    obj_del(f);
    free(f->name);
    func_block_free(f);
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

CUresult i_module_load_data(CUmodule *pm, const void *image) {
  struct fc_ctx *c;
  if (!pm || !image) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = mod_from_image(image, NULL, pm);
  if (!e) (*pm)->ctx = c;
  return e;
}
CUresult i_module_load(CUmodule *pm, const char *path) {
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
CUresult i_module_unload(CUmodule m) {
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
struct fc_global *mod_find_global(struct fc_module *m, const char *name) {
  for (int i = 0; i < m->ng; i++)
    if (!strcmp(m->g[i].name, name)) return &m->g[i];
  return NULL;
}
/* What the look-ups below check after their arguments: a current context, then h a live object
 * of `type`. */
static CUresult ctx_and_handle(const void *h, int type) {
  struct fc_ctx *c;
  NEED_CTX(c);
  return obj_is(h, type) ? E_SUCCESS : E_INVALID_HANDLE;
}
CUresult i_module_get_function(CUfunction *pf, CUmodule m, const char *name) {
  if (!pf || !name) return E_INVALID_VALUE;
  CUresult e = ctx_and_handle(m, T_MOD);
  if (e) return e;
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
CUresult i_module_get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  if (!name) return E_INVALID_VALUE;
  CUresult e = ctx_and_handle(m, T_MOD);
  return e ? e : global_out(m, name, dptr, bytes);
}

CUresult i_library_load_data(CUlibrary *pl, const void *code) {
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
CUresult i_library_unload(CUlibrary l) {
  if (!obj_is(l, T_LIB)) return E_INVALID_HANDLE;
  mod_free(l->mod);
  obj_del(l);
  free(l);
  return E_SUCCESS;
}
CUresult i_library_get_kernel(CUkernel *pk, CUlibrary l, const char *name) {
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
CUresult i_library_get_module(CUmodule *pm, CUlibrary l) {
  if (!pm) return E_INVALID_VALUE;
  CUresult e = ctx_and_handle(l, T_LIB);
  if (!e) *pm = l->mod;
  return e;
}
CUresult i_library_get_global(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name) {
  if (!name) return E_INVALID_VALUE;
  CUresult e = ctx_and_handle(l, T_LIB);
  return e ? e : global_out(l->mod, name, dptr, bytes);
}
CUresult i_kernel_get_function(CUfunction *pf, CUkernel k) {
  if (!pf) return E_INVALID_VALUE;
  CUresult e = ctx_and_handle(k, T_KERN);
  if (!e) *pf = k->fn;
  return e;
}

/* CUfunction or CUkernel (both accepted where CUDA 12 accepts both) */
struct fc_func *func_or_kernel(const void *h) {
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
CUresult i_func_get_attr(int *pi, int a, CUfunction h) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  return fattr_get(f, pi, a);
}
CUresult i_func_set_attr(CUfunction h, int a, int v) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  return fattr_set(f, a, v);
}
CUresult i_func_set_cache(CUfunction h, int cfg) {
  struct fc_func *f = func_or_kernel(h);
  if (!f) return E_INVALID_HANDLE;
  if (cfg < 0 || cfg > 3) return E_INVALID_VALUE;
  f->cache = cfg;
  return E_SUCCESS;
}
CUresult i_kernel_get_attr(int *pi, int a, CUkernel k, CUdevice d) {
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  if (chk_dev(d)) return E_INVALID_DEVICE;
  return fattr_get(k->fn, pi, a);
}
CUresult i_kernel_set_attr(int a, int v, CUkernel k, CUdevice d) {
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
CUresult i_func_param_info(CUfunction h, size_t idx, size_t *off, size_t *size) {
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  return param_info(h, idx, off, size);
}
CUresult i_kernel_param_info(CUkernel k, size_t idx, size_t *off, size_t *size) {
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  return param_info(k->fn, idx, off, size);
}
CUresult i_func_get_name(const char **name, CUfunction h) {
  if (!name) return E_INVALID_VALUE;
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  *name = h->name;
  return E_SUCCESS;
}
CUresult i_func_get_module(CUmodule *pm, CUfunction h) {
  if (!pm) return E_INVALID_VALUE;
  if (!obj_is(h, T_FUNC)) return E_INVALID_HANDLE;
  *pm = h->mod;
  return E_SUCCESS;
}
CUresult i_module_enumerate(CUfunction *fns, unsigned n, CUmodule m) {
  if (!fns) return E_INVALID_VALUE;
  if (!obj_is(m, T_MOD)) return E_INVALID_HANDLE;
  if (n > (unsigned)m->nf) return E_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) fns[i] = m->f[i];
  return E_SUCCESS;
}
CUresult i_library_enumerate(CUkernel *ks, unsigned n, CUlibrary l) {
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
static CUresult hidden_get_function(CUfunction *pf, CUmodule m, const char *name) {
  return i_module_get_function(pf, m, name);
}
static const void *k_export_table[] = {(const void *)(2 * sizeof(void *)), (const void *)hidden_get_function};
CUresult i_get_export_table(const void **table, const CUuuid *id) {
  if (!table || !id) return E_INVALID_VALUE;
  *table = k_export_table;
  return E_SUCCESS;
}
CUresult i_kernel_get_name(const char **name, CUkernel k) {
  if (!name) return E_INVALID_VALUE;
  if (!obj_is(k, T_KERN)) return E_INVALID_HANDLE;
  *name = k->fn->name;
  return E_SUCCESS;
}
CUresult i_occupancy(int *nb, CUfunction h, int block, size_t smem, unsigned flags) {
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
