/*
 * fake_cuda_arrays.c - CUDA arrays and mipmapped arrays (packed host storage), texture and
 * surface objects and the elements of their resources.
 */
#include "fake_cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Arrays, texture and surface objects                                      */
/* ------------------------------------------------------------------------ */

/* An array holds its elements packed (rows of Width elements, Height rows per
 * slice, Depth slices; 0 counts as 1).  Mipmapped arrays own one array per
 * level.  Texture and surface object values start at a base derived from the
 * process id, so a replay gets different values than the recorded run (as a
 * real driver may) and the tools' substitution of values in kernel arguments
 * is exercised ($FAKE_CUDA_OBJECT_BASE fixes the first value instead).  Resource
 * view descriptors are accepted and not applied. */


static size_t format_bytes(int f) {
  switch (f) {
  case 0x01: case 0x08: return 1;         /* UNSIGNED_INT8, SIGNED_INT8 */
  case 0x02: case 0x09: case 0x10: return 2; /* UNSIGNED_INT16, SIGNED_INT16, HALF */
  case 0x03: case 0x0a: case 0x20: return 4; /* UNSIGNED_INT32, SIGNED_INT32, FLOAT */
  default: return 0;
  }
}
size_t dim1(size_t v) { return v ? v : 1; }

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
CUresult i_array3d_create(void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  struct fc_ctx *c;
  if (!pa || !d) return E_INVALID_VALUE;
  NEED_CTX(c);
  return array_new(d, NULL, (struct fc_array **)pa);
}
CUresult i_array_create(void **pa, const CUDA_ARRAY_DESCRIPTOR *d) {
  if (!d) return E_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
  return i_array3d_create(pa, &d3);
}
CUresult i_array_destroy(void *h) {
  if (!obj_is(h, T_ARRAY) || ((struct fc_array *)h)->owner) return E_INVALID_HANDLE;
  array_free(h);
  return E_SUCCESS;
}
CUresult i_mipmap_create(void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels) {
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
CUresult i_mipmap_level(void **pa, void *h, unsigned level) {
  if (!pa || !obj_is(h, T_MIPMAP)) return E_INVALID_HANDLE;
  struct fc_mipmap *m = h;
  if (level >= m->n) return E_INVALID_VALUE;
  *pa = m->lv[level];
  return E_SUCCESS;
}
CUresult i_mipmap_destroy(void *h) {
  if (!obj_is(h, T_MIPMAP)) return E_INVALID_HANDLE;
  struct fc_mipmap *m = h;
  for (unsigned i = 0; i < m->n; i++) array_free(m->lv[i]);
  obj_del(m);
  free(m->lv);
  free(m);
  return E_SUCCESS;
}

/* ---- texture and surface objects ---- */

static struct fc_texobj *g_tex;
static size_t g_ntex, g_captex;
static unsigned long long g_next_tex;

struct fc_texobj *tex_find(unsigned long long id, int surf) {
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
CUresult obj_create(unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *texdesc, int surf) {
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
CUresult obj_destroy(unsigned long long id, int surf) {
  struct fc_texobj *t = tex_find(id, surf);
  if (!t) return E_INVALID_VALUE;
  *t = g_tex[--g_ntex];
  return E_SUCCESS;
}
/* The elements of an object's resource: element i at *base + (i / *row) * *pitch + (i % *row) * *elem. */
int obj_elems(const struct fc_texobj *t, uintptr_t *base, size_t *elem, size_t *row, size_t *pitch,
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
