/*
 * fake_hip_module.c - code: bundles and ELF images, modules and their __device__ variables,
 * the registration calls of hipcc's start-up code, symbol copies, the module API.
 */
#include "fake_hip_internal.h"

/* ------------------------------------------------------------------------ */
/* Code: fat binaries, modules, functions, globals                          */
/* ------------------------------------------------------------------------ */


struct fh_func **g_fn;
size_t g_nfn, g_capfn;
struct stub *g_stub;
size_t g_nstub, g_capstub;

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
struct global *global_find(struct fh_module *m, const char *name) {
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
