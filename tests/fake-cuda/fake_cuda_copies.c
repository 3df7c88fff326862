/*
 * fake_cuda_copies.c - copies and memsets: linear copies checked against the allocations
 * (captured into a graph on a capturing stream), memsets, pitched 2D/3D copies resolved side by
 * side into a row plan, 1D copies to and from arrays, the CUDA_MEMCPY3D of graph memcpy nodes.
 */
#include "fake_cuda_internal.h"

/* ---- copies and memsets ---- */

/* dst_dev/src_dev: 1 = must be device-accessible, 0 = host, -1 = either (UVA) */
CUresult copy_run(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n) {
  if (dst_dev == 1 || (dst_dev < 0 && (region_find(dst) >= 0 || in_device_va(dst))))
    if (!range_ok(dst, n, 2)) return E_INVALID_VALUE;
  if (src_dev == 1 || (src_dev < 0 && (region_find(src) >= 0 || in_device_va(src))))
    if (!range_ok(src, n, 1)) return E_INVALID_VALUE;
  memmove((void *)dst, (const void *)src, n);
  return E_SUCCESS;
}
/* What every copy and memset checks first: a current context, then its stream (the async
   forms, `check_stream`) or that no strict stream capture is under way (the blocking forms). */
static CUresult stream_op_checks(CUstream s, int check_stream) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (check_stream) return chk_stream(s);
  NO_STRICT_CAPTURE();
  return E_SUCCESS;
}

CUresult copy_checked(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n,
                             CUstream s, int check_stream) {
  CUresult e = stream_op_checks(s, check_stream);
  if (e) return e;
  if (!check_stream) busy_done(NULL, ~0ull); /* a blocking copy waits for the legacy stream */
  if (n == 0) return E_SUCCESS;
  if (!dst || !src) return E_INVALID_VALUE;
  struct fc_node *nd = check_stream ? captured_node(s, N_COPY) : NULL;
  if (nd) { /* captured: the source is read when the graph runs, as with the real driver */
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

CUresult memset_run(CUdeviceptr d, unsigned v, size_t n, int width) {
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
CUresult memset_checked(CUdeviceptr d, unsigned v, size_t n, int width, CUstream s, int check_stream) {
  CUresult e = stream_op_checks(s, check_stream);
  if (e) return e;
  if (n == 0) return E_SUCCESS;
  if (d % (unsigned)width) return E_INVALID_VALUE;
  if (n > SIZE_MAX / (size_t)width) return E_INVALID_VALUE;
  struct fc_node *nd = check_stream ? captured_node(s, N_MEMSET) : NULL;
  if (nd) {
    nd->dst = d;
    nd->v = v;
    nd->n = n;
    nd->width = width;
    return E_SUCCESS;
  }
  return memset_run(d, v, n, width);
}

/* A 2D memset: `h` rows of `w` elements, `pitch` bytes apart, each row a memset (a stream
   capture gets one node a row). */
CUresult memset_2d_checked(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, int width, CUstream s,
                           int check_stream) {
  if (h > 1 && (w > pitch / (size_t)width || pitch % (size_t)width)) return E_INVALID_VALUE;
  for (size_t y = 0; y < h; y++) {
    CUresult e = memset_checked(d + y * pitch, v, w, width, s, check_stream);
    if (e) return e;
  }
  return E_SUCCESS;
}

/* Stream memory operations: a 32- or 64-bit value written to device memory in stream order
   (`wait` 0), or a wait until the word there compares to `v` as `flags` say (GEQ, EQ, AND, NOR).
   Work runs at once here, so a wait whose condition does not hold now would wait forever: it
   fails with CUDA_ERROR_ILLEGAL_STATE instead, which a replay that missed a write shows. */
CUresult stream_value(CUstream s, CUdeviceptr addr, uint64_t v, unsigned flags, int width, int wait) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (stream_graph(s)) return E_NOT_SUPPORTED;
  if (addr % (unsigned)width || !range_ok(addr, (size_t)width, wait ? 1 : 2)) return E_INVALID_VALUE;
  if (!wait) {
    if (width == 4)
      *(uint32_t *)(uintptr_t)addr = (uint32_t)v;
    else
      *(uint64_t *)(uintptr_t)addr = v;
    return E_SUCCESS;
  }
  uint64_t cur = width == 4 ? *(const uint32_t *)(uintptr_t)addr : *(const uint64_t *)(uintptr_t)addr;
  if (width == 4) v = (uint32_t)v;
  int ok;
  switch (flags & 0xf) {
  case 0: ok = width == 4 ? (int32_t)(uint32_t)(cur - v) >= 0 : (int64_t)(cur - v) >= 0; break;
  case 1: ok = cur == v; break;
  case 2: ok = (cur & v) != 0; break;
  case 3: ok = (width == 4 ? (uint32_t)~(cur | v) : ~(cur | v)) != 0; break;
  default: return E_INVALID_VALUE;
  }
  return ok ? E_SUCCESS : E_ILLEGAL_STATE;
}

/* ---- 2D/3D copies: each side resolved to a base address, a pitch and a slice height ---- */

void plan_run(const struct plan *p) {
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
CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream s, int async) {
  if (!c) return E_INVALID_VALUE;
  CUresult e = stream_op_checks(s, async);
  if (e) return e;
  struct plan p = {0, 0, 0, 0, 0, 0, c->WidthInBytes, c->Height, c->Depth};
  if (!p.w || !p.h || !p.d) return E_SUCCESS;
  e = side_resolve(c->srcMemoryType, (uintptr_t)c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY,
                   c->srcZ, c->srcLOD, c->srcPitch, c->srcHeight, &p, 1, &p.src, &p.spitch, &p.ssh);
  if (!e)
    e = side_resolve(c->dstMemoryType, (uintptr_t)c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY,
                     c->dstZ, c->dstLOD, c->dstPitch, c->dstHeight, &p, 2, &p.dst, &p.dpitch, &p.dsh);
  if (e) return e;
  struct fc_node *nd = async ? captured_node(s, N_PLAN) : NULL;
  if (nd) { /* captured: rows are copied when the graph runs */
    nd->pb = calloc(1, FC_PARAM_BUF);
    if (!nd->pb) abort();
    memcpy(nd->pb, &p, sizeof p);
    return E_SUCCESS;
  }
  plan_run(&p);
  return E_SUCCESS;
}
CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int async) {
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
CUresult copy_array_1d(void *dst_arr, size_t doff, uintptr_t dst, int dst_dev, void *src_arr, size_t soff,
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

int copy3d_side(int type, const void *host, CUdeviceptr dev, uintptr_t *base, int *is_dev) {
  switch (type) {
  case 1: *base = (uintptr_t)host; *is_dev = 0; return 0;
  case 2: *base = (uintptr_t)dev; *is_dev = 1; return 0;
  case 4: *base = (uintptr_t)dev; *is_dev = -1; return 0;
  default: return -1; /* CUDA arrays are not implemented */
  }
}
CUresult copy3d_run(const CUDA_MEMCPY3D *p) {
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
