/*
 * fake_cuda_internal.h - what the files of the fake CUDA driver (libcuda.so.1) share: limits,
 * the handle and state structures, the shared macros, and the functions and globals one file
 * defines for the others (all hidden: the library exports only the cu* entry points).
 *
 * The fake is a CPU-only stand-in for the CUDA driver, built so that test programs (and the hrr
 * capture/replay tools) run on machines without a GPU.  "Device" memory is ordinary host memory
 * mapped at deterministic addresses, streams run synchronously, and a handful of named kernels
 * run on the CPU.  See README.md next to these files for the contract.  It mirrors the public
 * driver ABI (names, versioned suffixes, struct layouts, error codes) but nothing else.
 */
#ifndef FAKE_CUDA_INTERNAL_H
#define FAKE_CUDA_INTERNAL_H
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

#include "fake_cuda_abi.h"
#include "fake_common.h"

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

#pragma GCC visibility push(hidden)
#define FC_DRIVER_VERSION 13000
#define FC_GRAN ((size_t)2 << 20)       /* VMM granularity and big-allocation alignment */
#define FC_SMALL_MAX ((size_t)1 << 20)  /* allocations up to this are packed into 2 MiB chunks */
#define FC_SMALL_ALIGN 256
#define FC_VA_LIMIT 0x7ffffffff000ull
#define FC_PARAM_BUF 4096
#define FC_MAX_PARAMS 32
#define FC_NAME_MAX 255

#define FC_EXPORT __attribute__((visibility("default")))
#define GROW(a, n, cap) do { if ((n) >= (cap)) (a) = xgrow((a), &(cap), sizeof(*(a))); } while (0)

enum { T_CTX = 1, T_MOD, T_FUNC, T_LIB, T_KERN, T_STREAM, T_EVENT, T_VMEM, T_GRAPH, T_GEXEC, T_GNODE, T_COND, T_ARRAY,
       T_MIPMAP, T_POOL };

struct fc_ctx {
  int dev;
  int primary;
  int refcnt;
  int active;
  unsigned flags;
  /* devices whose memory kernels of this context may touch besides its own (peer access) */
  unsigned long long peers;
};

#define NEED_CTX(c)                               \
  do {                                            \
    CUresult e__ = cur_ctx(&(c));                 \
    if (e__) return e__;                          \
  } while (0)

/* A bump-pointer address space.  Allocations never reuse addresses, so a
 * program that allocates in the same order gets the same addresses. */
struct vspace {
  uintptr_t base, cursor;
  uintptr_t open_chunk; /* base of the chunk small allocations go into, or 0 */
};

/* A chunk is one host mapping that backs one big or several small allocations. */
struct chunk {
  uintptr_t base;
  size_t size, used;
  int live;
  int open;
  int dev; /* small allocations share a chunk only with those of the same device */
};

/* A region is one user-visible allocation. */
enum { R_DEV = 1, R_GLOBAL, R_HOST, R_HOSTREG, R_VMM, R_MANAGED, R_IPC };

struct fc_vmem;

struct region {
  uintptr_t base;
  size_t size;
  int kind;
  int access; /* bit 1 read, bit 2 write */
  struct fc_ctx *ctx;
  /* the device the memory is on (-1: host memory, any device), and for VMM mappings the
     devices cuMemSetAccess let touch it */
  int dev;
  unsigned long long reach;
  size_t charged; /* bytes charged to g_used (R_DEV/R_GLOBAL) or mapped (R_HOST) */
  unsigned long long id;
  struct fc_vmem *vm;
};

/* A VA range reserved with cuMemAddressReserve. */
struct resv { uintptr_t base; size_t size; };

/* Physical memory created with cuMemCreate: a memfd. */
struct fc_vmem {
  int dev; /* the device of its location */
  int fd;
  size_t size;
  int released;
  int maps;
};

struct fc_stream {
  struct fc_ctx *ctx;
  unsigned flags;
  int prio;
  struct fc_graph *cap; /* the graph being captured into, or NULL */
  int cap_mode;         /* CUstreamCaptureMode: 0 GLOBAL, 1 THREAD_LOCAL, 2 RELAXED */
  int cap_into;         /* cap is a graph of the program's (cuStreamBeginCaptureToGraph) */
  /* The nodes the next captured work follows, as set by cuStreamBeginCaptureToGraph or
   * cuStreamUpdateCaptureDependencies while cap->n == cap_mark; once more nodes were
   * captured, the last of them. */
  struct fc_nodeh *cap_deps[8];
  size_t ncap_deps, cap_mark;
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

#define NO_STRICT_CAPTURE() do { if (g_strict_captures) return E_STREAM_CAPTURE_UNSUPPORTED; } while (0)

struct fc_event {
  unsigned flags;
  int recorded;
  const void *stream;         /* where it was recorded */
  unsigned long long seq;     /* work queued before it (see busy_done) */
};

struct fc_pool { CUmemPoolProps props; unsigned long long attr[9]; int access; };

#define H2D(d, s, n, st, chk) copy_checked((uintptr_t)(d), 1, (uintptr_t)(s), 0, (n), (st), (chk))
#define D2H(d, s, n, st, chk) copy_checked((uintptr_t)(d), 0, (uintptr_t)(s), 1, (n), (st), (chk))
#define D2D(d, s, n, st, chk) copy_checked((uintptr_t)(d), 1, (uintptr_t)(s), 1, (n), (st), (chk))
#define UVA(d, s, n, st, chk) copy_checked((uintptr_t)(d), -1, (uintptr_t)(s), -1, (n), (st), (chk))

enum { K_NONE = 0, K_AXPY, K_FILL_U32, K_GATHER, K_ADD_GLOBAL, K_SPIN, K_FAULT, K_TEX_FETCH, K_SURF_WRITE, K_NOISY, K_AXMY, K_AXPY_PARAMS, K_NOOP, K_TMA_LOAD, K_TMA_LOAD_GLOBAL, K_DIGEST, K_FINGERPRINT };

struct fc_param { unsigned off, size; };

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
  struct fc_ctx *ctx;     /* the context a cuModuleLoad* module was loaded in */
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

struct plan {
  uintptr_t dst, src;
  size_t dpitch, dsh, spitch, ssh;
  size_t w, h, d;
};

struct fc_texobj {
  unsigned long long id;
  int surf;
  CUDA_RESOURCE_DESC res;
};

#define NODE_SET(target, fill) \
  do { struct fc_node *t__ = (target); if (!t__) return E_INVALID_VALUE; \
       struct fc_node nd; memset(&nd, 0, sizeof nd); CUresult e = (fill); return node_set(t__, &nd, e); } while (0)

/* fake_cuda_core.c */
extern int g_trace;
extern int g_inited;
extern size_t g_total;
extern size_t g_used;
extern unsigned long long g_next_id;
extern const char *g_fail;
extern int g_ndev;
void fc_lock(void);
void fc_unlock(void);
void fc_trace(const char *name, CUresult r);
uintptr_t round_up(uintptr_t x, uintptr_t a);
void *xgrow(void *arr, size_t *cap, size_t elt);
void obj_add(const void *p, int type);
void obj_del(const void *p);
int obj_type(const void *p);
int obj_is(const void *p, int type);
CUresult cur_ctx(struct fc_ctx **out);
CUresult i_init(unsigned flags);
CUresult i_driver_version(int *v);
CUresult i_error_str(CUresult code, const char **out, int want_name);
CUresult chk_dev(CUdevice d);
CUresult i_device_get(CUdevice *d, int ordinal);
CUresult i_device_count(int *n);
CUresult i_device_name(char *name, int len, CUdevice d);
CUresult i_device_attr(int *pi, int attrib, CUdevice d);
CUresult i_device_uuid(CUuuid *u, CUdevice d);
CUresult i_device_total_mem(size_t *bytes, CUdevice d);
CUresult i_device_pci_bus_id(char *s, int len, CUdevice d);
CUresult i_primary_retain(CUcontext *pctx, CUdevice d);
CUresult i_primary_release(CUdevice d);
CUresult i_primary_state(CUdevice d, unsigned *flags, int *active);
CUresult i_ctx_create(CUcontext *pctx, unsigned flags, CUdevice d);
CUresult i_ctx_destroy(CUcontext c);
CUresult i_ctx_set_current(CUcontext c);
CUresult i_ctx_get_current(CUcontext *pc);
CUresult i_ctx_push(CUcontext c);
CUresult i_ctx_pop(CUcontext *pc);
CUresult i_ctx_get_device(CUdevice *d, CUcontext c);
CUresult i_ctx_get_id(CUcontext c, unsigned long long *id);
CUresult i_ctx_sync(CUcontext c);
CUresult i_ctx_get_limit(size_t *v, int limit);
CUresult i_ctx_set_cache(int cfg);
CUresult i_ctx_set_limit(int limit, size_t v);
CUresult i_ctx_prio_range(int *least, int *greatest);
CUresult i_loading_mode(int *mode);

/* fake_cuda_memory.c */
extern struct vspace g_dev;
extern struct vspace g_glob;
extern struct vspace g_fb;
extern struct region *g_reg;
int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen);
uintptr_t dev_alloc(struct vspace *vs, size_t size, size_t *charged);
void dev_release(uintptr_t p);
size_t region_add(uintptr_t base, size_t size, int kind, int access, struct fc_ctx *ctx, size_t charged,
                  struct fc_vmem *vm);
long region_find(uintptr_t p);
long region_find_base(uintptr_t p, int kind);
void region_del(size_t i);
CUresult i_peer_access(CUcontext peer, unsigned flags, int enable);
int range_ok(uintptr_t p, size_t len, int want);
/* range_ok, and may a kernel on device `dev` touch it (its own device's memory, a peer's it
   enabled access to, a VMM mapping cuMemSetAccess let it touch, host memory)? dev -1: any. */
int kernel_ok(uintptr_t p, size_t len, int want, int dev);
/* tensor maps (fake_cuda_tensormap.c) */
CUresult i_tensor_map_encode_tiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                   const unsigned long long *strides, const unsigned *box, const unsigned *elem);
CUresult i_tensor_map_encode_im2col(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                    const unsigned long long *strides, const int *lower, const int *upper,
                                    unsigned channels, unsigned pixels, const unsigned *elem);
CUresult i_tensor_map_replace_address(void *map, void *addr);
/* The global address a map encodes (0: not a map). */
int tensor_map_source(const unsigned char *map, uint64_t *addr);
int in_device_va(uintptr_t p);
int is_device_kind(int k);
/* The chunk holding p (its base and size; 0 when none). */
int chunk_range(uintptr_t p, uintptr_t *base, size_t *size);
/* Map len bytes of file fd shared at a fresh device address, a chunk of its own (0: failed). */
uintptr_t dev_map_file(int fd, size_t len);
/* Unmap a chunk dev_map_file made. */
void dev_unmap_file(uintptr_t base);

/* fake_cuda_ipc.c */
CUresult i_ipc_get_mem_handle(void *handle, CUdeviceptr p);
CUresult i_ipc_open_mem_handle(CUdeviceptr *p, const void *handle, unsigned flags);
CUresult i_ipc_close_mem_handle(CUdeviceptr p);
CUresult i_ipc_get_event_handle(void *handle, CUevent e);
CUresult i_mem_export_shareable(void *out, CUmemGenericAllocationHandle h, int type, unsigned long long flags);
CUresult i_mem_import_shareable(CUmemGenericAllocationHandle *h, void *os, int type);
CUresult i_ipc_open_event_handle(CUevent *pe, const void *handle);
CUresult i_mem_alloc(CUdeviceptr *dptr, size_t size, CUstream s, int async);
CUresult i_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem);
CUresult i_mem_free(CUdeviceptr p, CUstream s, int async);
CUresult i_mem_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned flags);
CUresult i_pool_create(struct fc_pool **pp, const CUmemPoolProps *props);
CUresult i_pool_destroy(struct fc_pool *p);
CUresult i_pool_attr(struct fc_pool *p, int attr, void *v, int set);
CUresult i_pool_trim(struct fc_pool *p, size_t keep);
CUresult i_pool_set_access(struct fc_pool *p, const CUmemAccessDesc *desc, size_t count);
CUresult i_device_pool(struct fc_pool **pp, CUdevice d, int def);
CUresult i_device_set_pool(CUdevice d, struct fc_pool *p);
CUresult i_alloc_from_pool(CUdeviceptr *dptr, size_t size, struct fc_pool *p, CUstream s);
CUresult i_mem_get_info(size_t *fr, size_t *total);
CUresult i_mem_addr_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p);
CUresult i_host_alloc(void **pp, size_t size, unsigned flags);
CUresult i_host_free(void *p);
CUresult i_host_register(void *p, size_t size, unsigned flags);
CUresult i_host_unregister(void *p);
CUresult i_host_get_dptr(CUdeviceptr *pd, void *p, unsigned flags);
CUresult i_ptr_get_attr(void *data, int attr, CUdeviceptr p);
CUresult i_ptr_get_attrs(unsigned n, int *attrs, void **data, CUdeviceptr p);
CUresult i_mem_granularity(size_t *g, const CUmemAllocationProp *prop, int option);
CUresult i_mem_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                       unsigned long long flags);
CUresult i_mem_addr_free(CUdeviceptr ptr, size_t size);
CUresult i_mem_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                      unsigned long long flags);
CUresult i_mem_release(CUmemGenericAllocationHandle h);
CUresult i_mem_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                   unsigned long long flags);
CUresult i_mem_unmap(CUdeviceptr ptr, size_t size);
CUresult i_mem_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult i_mem_get_access(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr ptr);

/* fake_cuda_streams.c */
extern int g_hung;
/* Kernels run since the last cuCtxSynchronize/cuStreamSynchronize (0: the device was idle). */
extern unsigned long g_launches_since_sync;
extern CUresult g_sticky;
extern int g_strict_captures;
void async_copy(size_t n);
int async_hostfn(CUhostFn fn, void *ud);
CUresult gpu_wait(void);
CUresult gpu_query(void);
void busy_add(uintptr_t base, size_t size, const void *s);
void busy_done(const void *s, unsigned long long before);
void busy_unmapped(uintptr_t base, size_t size);
struct fc_graph *stream_graph(CUstream s);
CUresult chk_stream(CUstream s);
CUresult i_stream_create(CUstream *ps, unsigned flags, int prio);
CUresult i_stream_destroy(CUstream s);
CUresult i_stream_sync(CUstream s);
CUresult i_stream_query(CUstream s);
CUresult i_stream_wait_event(CUstream s, CUevent ev, unsigned flags);
CUresult i_stream_is_capturing(CUstream s, int *status);
CUresult i_capture_info(CUstream s, int *status, unsigned long long *id, CUgraph *g, const void **deps,
                        size_t *ndeps);
CUresult i_begin_capture(CUstream s, int mode);
CUresult i_end_capture(CUstream s, CUgraph *pg);
CUresult i_begin_capture_to_graph(CUstream s, CUgraph g, const CUgraphNode *deps, size_t n, int mode);
CUresult i_update_capture_deps(CUstream s, const CUgraphNode *deps, size_t n, unsigned flags);
CUresult i_event_create(CUevent *pe, unsigned flags);
CUresult i_event_record(CUevent ev, CUstream s, unsigned flags);
CUresult i_event_query(CUevent ev);
CUresult i_event_sync(CUevent ev);
CUresult i_event_elapsed(float *ms, CUevent a, CUevent b);
CUresult i_event_destroy(CUevent ev);
CUresult hostfn_check(CUstream s, CUhostFn fn);

/* fake_cuda_graph.c */
struct fc_node *graph_add(struct fc_graph *g);
/* On a stream under capture: a new node of `kind` in the capture's graph, for the caller to fill
 * (the work then runs when the graph does); NULL when s is not capturing. */
struct fc_node *captured_node(CUstream s, int kind);
void nodes_free(struct fc_node *nodes, size_t n);
CUresult i_graph_create(CUgraph *pg, unsigned flags);
CUresult i_graph_instantiate(CUgraphExec *pe, CUgraph g, cuuint64_t flags);
CUresult i_graph_instantiate_params(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p);
CUresult i_graph_launch(CUgraphExec x, CUstream s);
CUresult i_graph_upload(CUgraphExec x, CUstream s);
CUresult i_graph_destroy(CUgraph g);
CUresult i_graph_exec_destroy(CUgraphExec x);
CUresult kernel_fill_v2(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS *p);
CUresult kernel_fill_v1(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult memcpy_fill(struct fc_node *nd, const CUDA_MEMCPY3D *p);
CUresult memset_fill(struct fc_node *nd, const CUDA_MEMSET_NODE_PARAMS *p);
CUresult host_fill(struct fc_node *nd, const CUDA_HOST_NODE_PARAMS *p);
CUresult child_fill(struct fc_node *nd, CUgraph child);
CUresult i_cond_handle_create(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx, unsigned dflt,
                              unsigned flags);
CUresult node_add_generic(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                          CUgraphNodeParams *p);
CUresult i_add_kernel_v1(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                         const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult i_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                      const CUDA_KERNEL_NODE_PARAMS *p);
CUresult i_add_memcpy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                      const CUDA_MEMCPY3D *p, CUcontext ctx);
CUresult i_add_memset(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                      const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx);
CUresult i_add_host(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                    const CUDA_HOST_NODE_PARAMS *p);
CUresult i_add_empty(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n);
CUresult i_add_mem_alloc(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, unsigned char *p);
CUresult i_add_mem_free(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d);
CUresult i_add_event(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUevent ev, int kind);
CUresult i_add_child(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child);
CUresult i_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n);
CUresult node_set(struct fc_node *dst, struct fc_node *nd, CUresult e);
struct fc_node *graph_node(CUgraphNode h);
struct fc_nodeh *node_handle(struct fc_graph *g, size_t idx);
struct fc_node *exec_node(CUgraphExec x, CUgraphNode h);
CUresult i_graph_destroy_node(CUgraphNode h);
CUresult i_graph_clone(CUgraph *out, CUgraph g);
CUresult i_graph_exec_update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info);

/* fake_cuda_copies.c */
CUresult copy_run(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n);
CUresult copy_checked(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n, CUstream s,
                      int check_stream);
CUresult memset_run(CUdeviceptr d, unsigned v, size_t n, int width);
CUresult memset_checked(CUdeviceptr d, unsigned v, size_t n, int width, CUstream s, int check_stream);
CUresult memset_2d_checked(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, int width, CUstream s,
                           int check_stream);
CUresult stream_value(CUstream s, CUdeviceptr addr, uint64_t v, unsigned flags, int width, int wait);
void plan_run(const struct plan *p);
CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream s, int async);
CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int async);
CUresult copy_array_1d(void *dst_arr, size_t doff, uintptr_t dst, int dst_dev, void *src_arr, size_t soff,
                       uintptr_t src, int src_dev, size_t n, CUstream s, int async);
int copy3d_side(int type, const void *host, CUdeviceptr dev, uintptr_t *base, int *is_dev);
CUresult copy3d_run(const CUDA_MEMCPY3D *p);

/* fake_cuda_module.c */
CUresult i_module_load_data(CUmodule *pm, const void *image);
CUresult i_module_load(CUmodule *pm, const char *path);
CUresult i_module_unload(CUmodule m);
struct fc_global *mod_find_global(struct fc_module *m, const char *name);
CUresult i_module_get_function(CUfunction *pf, CUmodule m, const char *name);
CUresult i_module_get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name);
CUresult i_library_load_data(CUlibrary *pl, const void *code);
CUresult i_library_unload(CUlibrary l);
CUresult i_library_get_kernel(CUkernel *pk, CUlibrary l, const char *name);
CUresult i_library_get_module(CUmodule *pm, CUlibrary l);
CUresult i_library_get_global(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name);
CUresult i_kernel_get_function(CUfunction *pf, CUkernel k);
struct fc_func *func_or_kernel(const void *h);
CUresult i_func_get_attr(int *pi, int a, CUfunction h);
CUresult i_func_set_attr(CUfunction h, int a, int v);
CUresult i_func_set_cache(CUfunction h, int cfg);
CUresult i_kernel_get_attr(int *pi, int a, CUkernel k, CUdevice d);
CUresult i_kernel_set_attr(int a, int v, CUkernel k, CUdevice d);
CUresult i_func_param_info(CUfunction h, size_t idx, size_t *off, size_t *size);
CUresult i_kernel_param_info(CUkernel k, size_t idx, size_t *off, size_t *size);
CUresult i_func_get_name(const char **name, CUfunction h);
CUresult i_func_get_module(CUmodule *pm, CUfunction h);
CUresult i_module_enumerate(CUfunction *fns, unsigned n, CUmodule m);
CUresult i_library_enumerate(CUkernel *ks, unsigned n, CUlibrary l);
CUresult i_get_export_table(const void **table, const CUuuid *id);
CUresult i_kernel_get_name(const char **name, CUkernel k);
CUresult i_occupancy(int *nb, CUfunction h, int block, size_t smem, unsigned flags);

/* fake_cuda_arrays.c */
size_t dim1(size_t v);
CUresult i_array3d_create(void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d);
CUresult i_array_create(void **pa, const CUDA_ARRAY_DESCRIPTOR *d);
CUresult i_array_destroy(void *h);
CUresult i_mipmap_create(void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);
CUresult i_mipmap_level(void **pa, void *h, unsigned level);
CUresult i_mipmap_destroy(void *h);
struct fc_texobj *tex_find(unsigned long long id, int surf);
CUresult obj_create(unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *texdesc, int surf);
CUresult obj_destroy(unsigned long long id, int surf);
int obj_elems(const struct fc_texobj *t, uintptr_t *base, size_t *elem, size_t *row, size_t *pitch,
              size_t *count);

/* fake_cuda_launch.c */
CUresult run_kernel(struct fc_func *f, const unsigned char *pb, unsigned long long threads);
CUresult launch_dims(const struct fc_func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                     unsigned by, unsigned bz, unsigned shmem);
CUresult launch_args(const struct fc_func *f, void **params, void **extra, unsigned char *pb);
CUresult launch(const void *h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
CUresult launch_ex(const CUlaunchConfig *cfg, const void *h, void **params, void **extra);

#pragma GCC visibility pop
#endif
