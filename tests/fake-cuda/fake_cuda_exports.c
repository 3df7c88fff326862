/*
 * fake_cuda_exports.c - the exported entry points: every cu* symbol of libcuda.so.1 (each
 * takes the lock, checks cuInit, runs its implementation and traces), host functions, and
 * cuGetProcAddress, which answers from the rows each export states beside its definition.
 */
#include "fake_cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Exported entry points                                                    */
/* ------------------------------------------------------------------------ */

/* Every export takes the global lock, optionally checks cuInit, runs its
 * implementation and traces.  Each export also gets a hidden alias
 * NAME__self so that cuGetProcAddress hands out this library's own function
 * even when an LD_PRELOAD interposer defines the same name.  Every export
 * (including _ptsz/_ptds/_vN variants) is a distinct function, so dladdr()
 * on a returned pointer names exactly the variant chosen. */
#define SELF_ALIAS(name) extern __typeof__(name) name##__self __attribute__((alias(#name), visibility("hidden")));
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
  SELF_ALIAS(name)

/* cuGetProcAddress's rows: base name, first CUDA version of this variant, default export,
 * per-thread default stream export (or NULL).  For a base with several rows the row with the
 * highest `since` not above the requested version wins.  Each export states its row beside its
 * definition (PROC, or the DEF macros below); the rows are gathered in the section fc_procs,
 * which the linker bounds with __start_fc_procs and __stop_fc_procs. */
struct pa_ent {
  const char *base;
  int since;
  void *fn;
  void *pt;
};
#define FC_CAT_(a, b) a##b
#define FC_CAT(a, b) FC_CAT_(a, b)
/* The row of BASE (an identifier, stored as its text) from CUDA version SINCE on: export FN
 * (the row holds its __self alias) and PT, its per-thread twin's alias or NULL. */
#define PROC(base, since, fn, pt)                                             \
  static const struct pa_ent FC_CAT(fc_proc_, __COUNTER__)                    \
      __attribute__((used, section("fc_procs"), aligned(sizeof(void *)))) = \
          {#base, since, (void *)fn##__self, pt};

/* Export NAME (needing cuInit; DEF0: not) with its row: base name BASE (DEFV, DEF0V) or NAME
 * itself (DEF, DEF0), from CUDA version SINCE. */
#define DEFV(name, base, since, params, call) DEF_(name, params, call, 1) PROC(base, since, name, NULL)
#define DEF0V(name, base, since, params, call) DEF_(name, params, call, 0) PROC(base, since, name, NULL)
#define DEF(name, since, params, call) DEFV(name, name, since, params, call)
#define DEF0(name, since, params, call) DEF0V(name, name, since, params, call)
/* NAME and its per-thread default stream twin NAME_ptsz (or NAME_ptds): the same parameters
 * and implementation, one row (base BASE, or NAME itself) handing out both. */
#define DEFV_PTSZ(name, base, since, params, call) \
  DEF_(name, params, call, 1) DEF_(name##_ptsz, params, call, 1) PROC(base, since, name, (void *)name##_ptsz__self)
#define DEFV_PTDS(name, base, since, params, call) \
  DEF_(name, params, call, 1) DEF_(name##_ptds, params, call, 1) PROC(base, since, name, (void *)name##_ptds__self)
#define DEF_PTSZ(name, since, params, call) DEFV_PTSZ(name, name, since, params, call)
#define DEF_PTDS(name, since, params, call) DEFV_PTDS(name, name, since, params, call)

/* init / version / errors */
DEF0(cuInit, 2000, (unsigned flags), i_init(flags))
DEF0(cuDriverGetVersion, 2020, (int *v), i_driver_version(v))
DEF0(cuGetErrorName, 6000, (CUresult err, const char **s), i_error_str(err, s, 1))
DEF0(cuGetErrorString, 6000, (CUresult err, const char **s), i_error_str(err, s, 0))

/* devices */
DEF(cuDeviceGet, 2000, (CUdevice *d, int ordinal), i_device_get(d, ordinal))
DEF(cuDeviceGetCount, 2000, (int *n), i_device_count(n))
DEF(cuDeviceGetName, 2000, (char *name, int len, CUdevice d), i_device_name(name, len, d))
DEF(cuDeviceGetAttribute, 2000, (int *pi, int attrib, CUdevice d), i_device_attr(pi, attrib, d))
DEF(cuDeviceGetUuid, 9020, (CUuuid *u, CUdevice d), i_device_uuid(u, d))
DEFV(cuDeviceGetUuid_v2, cuDeviceGetUuid, 11040, (CUuuid *u, CUdevice d), i_device_uuid(u, d))
DEFV(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, (size_t *bytes, CUdevice d), i_device_total_mem(bytes, d))
DEF(cuDeviceGetPCIBusId, 4010, (char *s, int len, CUdevice d), i_device_pci_bus_id(s, len, d))
DEF(cuDevicePrimaryCtxRetain, 7000, (CUcontext *pctx, CUdevice d), i_primary_retain(pctx, d))
DEF(cuDevicePrimaryCtxRelease, 7000, (CUdevice d), i_primary_release(d))
DEFV(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, (CUdevice d), i_primary_release(d))
DEF(cuDevicePrimaryCtxGetState, 7000, (CUdevice d, unsigned *flags, int *active), i_primary_state(d, flags, active))

/* contexts */
DEFV(cuCtxCreate_v2, cuCtxCreate, 3020, (CUcontext *pctx, unsigned flags, CUdevice d), i_ctx_create(pctx, flags, d))
DEFV(cuCtxCreate_v3, cuCtxCreate, 11040, (CUcontext *pctx, void *affinity, int n, unsigned flags, CUdevice d),
    ((void)affinity, (void)n, i_ctx_create(pctx, flags, d)))
DEFV(cuCtxCreate_v4, cuCtxCreate, 12050, (CUcontext *pctx, void *params, unsigned flags, CUdevice d),
    ((void)params, i_ctx_create(pctx, flags, d)))
DEFV(cuCtxDestroy_v2, cuCtxDestroy, 4000, (CUcontext c), i_ctx_destroy(c))
DEF(cuCtxSetCurrent, 4000, (CUcontext c), i_ctx_set_current(c))
DEF(cuCtxGetCurrent, 4000, (CUcontext *pc), i_ctx_get_current(pc))
DEFV(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, (CUcontext c), i_ctx_push(c))
DEFV(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, (CUcontext *pc), i_ctx_pop(pc))
DEF(cuCtxGetDevice, 2000, (CUdevice *d), i_ctx_get_device(d, NULL))
DEF(cuCtxGetId, 12000, (CUcontext c, unsigned long long *id), i_ctx_get_id(c, id))
DEF(cuCtxGetDevice_v2, 13000, (CUdevice *d, CUcontext c), i_ctx_get_device(d, c))
DEF(cuCtxSynchronize, 2000, (void), i_ctx_sync(NULL))
/* Peer access: kernels of the current context may touch the peer's device's memory (kernel_ok).
   Peer copies are device-to-device copies (copies reach every device, as with unified
   addressing). */
DEF(cuCtxEnablePeerAccess, 4000, (CUcontext peer, unsigned flags), i_peer_access(peer, flags, 1))
DEF(cuCtxDisablePeerAccess, 4000, (CUcontext peer), i_peer_access(peer, 0, 0))
DEF(cuMemcpyPeer, 4000, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
    (!obj_is(dc, T_CTX) || !obj_is(sc, T_CTX)) ? E_INVALID_CONTEXT : D2D(d, s, n, NULL, 0))
DEF(cuMemcpyPeerAsync, 4000, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st),
    (!obj_is(dc, T_CTX) || !obj_is(sc, T_CTX)) ? E_INVALID_CONTEXT : D2D(d, s, n, st, 1))
DEF(cuCtxSynchronize_v2, 13000, (CUcontext c), i_ctx_sync(c))
DEF(cuCtxGetLimit, 3010, (size_t *v, int limit), i_ctx_get_limit(v, limit))
DEF(cuCtxSetLimit, 3010, (int limit, size_t v), i_ctx_set_limit(limit, v))
DEF(cuCtxSetCacheConfig, 3020, (int cfg), i_ctx_set_cache(cfg))
DEF(cuCtxGetStreamPriorityRange, 5050, (int *least, int *greatest), i_ctx_prio_range(least, greatest))
DEF0(cuModuleGetLoadingMode, 11070, (int *mode), i_loading_mode(mode))

/* memory */
DEFV(cuMemAlloc_v2, cuMemAlloc, 3020, (CUdeviceptr *p, size_t n), i_mem_alloc(p, n, NULL, 0))
DEFV(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem),
    i_mem_alloc_pitch(p, pitch, w, h, elem))
DEFV(cuMemFree_v2, cuMemFree, 3020, (CUdeviceptr p), i_mem_free(p, NULL, 0))
DEF_PTSZ(cuMemAllocAsync, 11020, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF_PTSZ(cuMemFreeAsync, 11020, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
DEF(cuMemAllocManaged, 6000, (CUdeviceptr *p, size_t n, unsigned flags), i_mem_alloc_managed(p, n, flags))
DEF_PTSZ(cuMemAllocFromPoolAsync, 11020, (CUdeviceptr *p, size_t n, struct fc_pool *pool, CUstream s), i_alloc_from_pool(p, n, pool, s))
DEF(cuMemPoolCreate, 11020, (struct fc_pool **p, const CUmemPoolProps *props), i_pool_create(p, props))
DEF(cuMemPoolDestroy, 11020, (struct fc_pool *p), i_pool_destroy(p))
DEF(cuMemPoolSetAttribute, 11020, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 1))
DEF(cuMemPoolGetAttribute, 11020, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 0))
DEF(cuMemPoolTrimTo, 11020, (struct fc_pool *p, size_t keep), i_pool_trim(p, keep))
DEF(cuMemPoolSetAccess, 11020, (struct fc_pool *p, const CUmemAccessDesc *d, size_t n), i_pool_set_access(p, d, n))
DEF(cuDeviceGetDefaultMemPool, 11020, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 1))
DEF(cuDeviceGetMemPool, 11020, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 0))
DEF(cuDeviceSetMemPool, 11020, (CUdevice d, struct fc_pool *p), i_device_set_pool(d, p))
DEFV(cuMemGetInfo_v2, cuMemGetInfo, 3020, (size_t *fr, size_t *total), i_mem_get_info(fr, total))
DEFV(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, (CUdeviceptr *b, size_t *s, CUdeviceptr p), i_mem_addr_range(b, s, p))
DEF(cuIpcGetMemHandle, 4010, (CUipcMemHandle *h, CUdeviceptr p), i_ipc_get_mem_handle(h, p))
DEFV(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, (CUdeviceptr *p, CUipcMemHandle h, unsigned flags), i_ipc_open_mem_handle(p, &h, flags))
/* not handed out by cuGetProcAddress (its _v2 is) */
DEF_(cuIpcOpenMemHandle, (CUdeviceptr *p, CUipcMemHandle h, unsigned flags), i_ipc_open_mem_handle(p, &h, flags), 1)
DEF(cuIpcCloseMemHandle, 4010, (CUdeviceptr p), i_ipc_close_mem_handle(p))
DEF(cuIpcGetEventHandle, 4010, (CUipcMemHandle *h, CUevent e), i_ipc_get_event_handle(h, e))
DEF(cuIpcOpenEventHandle, 4010, (CUevent *e, CUipcMemHandle h), i_ipc_open_event_handle(e, &h))
DEF(cuMemHostAlloc, 2020, (void **pp, size_t n, unsigned flags), i_host_alloc(pp, n, flags))
DEFV(cuMemAllocHost_v2, cuMemAllocHost, 3020, (void **pp, size_t n), i_host_alloc(pp, n, 0))
DEF(cuMemFreeHost, 2000, (void *p), i_host_free(p))
DEFV(cuMemHostRegister_v2, cuMemHostRegister, 6050, (void *p, size_t n, unsigned flags), i_host_register(p, n, flags))
DEF(cuMemHostUnregister, 4000, (void *p), i_host_unregister(p))
DEFV(cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer, 3020, (CUdeviceptr *pd, void *p, unsigned flags), i_host_get_dptr(pd, p, flags))
DEF(cuPointerGetAttribute, 4000, (void *data, int attr, CUdeviceptr p), i_ptr_get_attr(data, attr, p))
DEF(cuPointerGetAttributes, 7000, (unsigned n, int *attrs, void **data, CUdeviceptr p), i_ptr_get_attrs(n, attrs, data, p))

/* copies */
DEF_PTDS(cuMemcpy, 4000, (CUdeviceptr d, CUdeviceptr s, size_t n), UVA(d, s, n, NULL, 0))
DEF_PTSZ(cuMemcpyAsync, 4000, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), UVA(d, s, n, st, 1))
DEFV_PTDS(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, (CUdeviceptr d, const void *s, size_t n), H2D(d, s, n, NULL, 0))
DEFV_PTDS(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, (void *d, CUdeviceptr s, size_t n), gpu_wait() ?: D2H(d, s, n, NULL, 0))
DEFV_PTDS(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, (CUdeviceptr d, CUdeviceptr s, size_t n), D2D(d, s, n, NULL, 0))
DEFV_PTSZ(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, (CUdeviceptr d, const void *s, size_t n, CUstream st), H2D(d, s, n, st, 1))
DEFV_PTSZ(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, (void *d, CUdeviceptr s, size_t n, CUstream st), D2H(d, s, n, st, 1))
DEFV_PTSZ(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), D2D(d, s, n, st, 1))

/* arrays, 2D/3D copies, texture and surface objects */
DEFV(cuArrayCreate_v2, cuArrayCreate, 3020, (void **pa, const CUDA_ARRAY_DESCRIPTOR *d), i_array_create(pa, d))
DEFV(cuArray3DCreate_v2, cuArray3DCreate, 3020, (void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d), i_array3d_create(pa, d))
DEF(cuArrayDestroy, 2000, (void *a), i_array_destroy(a))
DEF(cuMipmappedArrayCreate, 5000, (void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned n), i_mipmap_create(pm, d, n))
DEF(cuMipmappedArrayGetLevel, 5000, (void **pa, void *m, unsigned level), i_mipmap_level(pa, m, level))
DEF(cuMipmappedArrayDestroy, 5000, (void *m), i_mipmap_destroy(m))
DEFV_PTDS(cuMemcpy2D_v2, cuMemcpy2D, 3020, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEFV_PTDS(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEFV_PTSZ(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, (const CUDA_MEMCPY2D *p, CUstream s), copy2d(p, s, 1))
DEFV_PTDS(cuMemcpy3D_v2, cuMemcpy3D, 3020, (const CUDA_MEMCPY3D *p), gpu_wait() ?: copy3d(p, NULL, 0))
DEFV_PTSZ(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, (const CUDA_MEMCPY3D *p, CUstream s), copy3d(p, s, 1))
DEFV_PTDS(cuMemcpyHtoA_v2, cuMemcpyHtoA, 3020, (void *a, size_t off, const void *src, size_t n),
         copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, NULL, 0))
DEFV_PTDS(cuMemcpyAtoH_v2, cuMemcpyAtoH, 3020, (void *dst, void *a, size_t off, size_t n),
         gpu_wait() ?: copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, NULL, 0))
DEFV_PTSZ(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync, 3020, (void *a, size_t off, const void *src, size_t n, CUstream s),
         copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, s, 1))
DEFV_PTSZ(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync, 3020, (void *dst, void *a, size_t off, size_t n, CUstream s),
         copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, s, 1))
DEFV_PTDS(cuMemcpyAtoD_v2, cuMemcpyAtoD, 3020, (CUdeviceptr d, void *a, size_t off, size_t n), copy_array_1d(NULL, 0, d, 1, a, off, 0, 0, n, NULL, 0))
DEFV_PTDS(cuMemcpyDtoA_v2, cuMemcpyDtoA, 3020, (void *a, size_t off, CUdeviceptr s, size_t n), copy_array_1d(a, off, 0, 0, NULL, 0, s, 1, n, NULL, 0))
DEFV_PTDS(cuMemcpyAtoA_v2, cuMemcpyAtoA, 3020, (void *d, size_t doff, void *s, size_t soff, size_t n),
         copy_array_1d(d, doff, 0, 0, s, soff, 0, 0, n, NULL, 0))
DEF(cuTexObjectCreate, 5000, (unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *t, const void *v),
    ((void)v, obj_create(po, r, t, 0)))
DEF(cuTexObjectDestroy, 5000, (unsigned long long o), obj_destroy(o, 0))
DEF(cuSurfObjectCreate, 5000, (unsigned long long *po, const CUDA_RESOURCE_DESC *r), obj_create(po, r, NULL, 1))
DEF(cuSurfObjectDestroy, 5000, (unsigned long long o), obj_destroy(o, 1))

/* tensor maps (host-only: no cuInit needed, as with the real driver) */
DEF0(cuTensorMapEncodeTiled, 12000,
     (void *m, int t, unsigned r, void *a, const unsigned long long *d, const unsigned long long *s, const unsigned *b,
      const unsigned *e, int il, int sw, int l2, int oob),
     ((void)il, (void)sw, (void)l2, (void)oob, i_tensor_map_encode_tiled(m, t, r, a, d, s, b, e)))
DEF0(cuTensorMapEncodeIm2col, 12000,
     (void *m, int t, unsigned r, void *a, const unsigned long long *d, const unsigned long long *s, const int *lo,
      const int *hi, unsigned ch, unsigned px, const unsigned *e, int il, int sw, int l2, int oob),
     ((void)il, (void)sw, (void)l2, (void)oob, i_tensor_map_encode_im2col(m, t, r, a, d, s, lo, hi, ch, px, e)))
DEF0(cuTensorMapReplaceAddress, 12000, (void *m, void *a), i_tensor_map_replace_address(m, a))

/* memsets */
DEFV_PTDS(cuMemsetD8_v2, cuMemsetD8, 3020, (CUdeviceptr d, unsigned char v, size_t n), memset_checked(d, v, n, 1, NULL, 0))
DEFV_PTDS(cuMemsetD16_v2, cuMemsetD16, 3020, (CUdeviceptr d, unsigned short v, size_t n), memset_checked(d, v, n, 2, NULL, 0))
DEFV_PTDS(cuMemsetD32_v2, cuMemsetD32, 3020, (CUdeviceptr d, unsigned v, size_t n), memset_checked(d, v, n, 4, NULL, 0))
DEF_PTSZ(cuMemsetD8Async, 3020, (CUdeviceptr d, unsigned char v, size_t n, CUstream s), memset_checked(d, v, n, 1, s, 1))
DEF_PTSZ(cuMemsetD16Async, 3020, (CUdeviceptr d, unsigned short v, size_t n, CUstream s), memset_checked(d, v, n, 2, s, 1))
DEF_PTSZ(cuMemsetD32Async, 3020, (CUdeviceptr d, unsigned v, size_t n, CUstream s), memset_checked(d, v, n, 4, s, 1))
DEFV_PTDS(cuMemsetD2D8_v2, cuMemsetD2D8, 3020, (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h),
          memset_2d_checked(d, p, v, w, h, 1, NULL, 0))
DEFV_PTDS(cuMemsetD2D16_v2, cuMemsetD2D16, 3020, (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h),
          memset_2d_checked(d, p, v, w, h, 2, NULL, 0))
DEFV_PTDS(cuMemsetD2D32_v2, cuMemsetD2D32, 3020, (CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h),
          memset_2d_checked(d, p, v, w, h, 4, NULL, 0))
DEF_PTSZ(cuMemsetD2D8Async, 3020, (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s),
         memset_2d_checked(d, p, v, w, h, 1, s, 1))
DEF_PTSZ(cuMemsetD2D16Async, 3020, (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s),
         memset_2d_checked(d, p, v, w, h, 2, s, 1))
DEF_PTSZ(cuMemsetD2D32Async, 3020, (CUdeviceptr d, size_t p, unsigned v, size_t w, size_t h, CUstream s),
         memset_2d_checked(d, p, v, w, h, 4, s, 1))
/* stream memory operations: NAME_v2, its _ptsz and the legacy NAME (the same calls here) */
#define STREAM_VALUE1(name, T, width, wait) \
  DEF_(name, (CUstream s, CUdeviceptr a, T v, unsigned f), stream_value(s, a, v, f, width, wait), 1)
/* (cuGetProcAddress hands out NAME_v2 and its _ptsz from 12000; the legacy NAME, not at all) */
#define STREAM_VALUE(name, T, width, wait)                                          \
  STREAM_VALUE1(name##_v2, T, width, wait)                                          \
  STREAM_VALUE1(name##_v2_ptsz, T, width, wait) STREAM_VALUE1(name, T, width, wait) \
  PROC(name, 12000, name##_v2, (void *)name##_v2_ptsz__self)
STREAM_VALUE(cuStreamWriteValue32, uint32_t, 4, 0)
STREAM_VALUE(cuStreamWriteValue64, uint64_t, 8, 0)
STREAM_VALUE(cuStreamWaitValue32, uint32_t, 4, 1)
STREAM_VALUE(cuStreamWaitValue64, uint64_t, 8, 1)

/* virtual memory management (no context needed) */
DEF(cuMemGetAllocationGranularity, 10020, (size_t *g, const CUmemAllocationProp *prop, int option),
    i_mem_granularity(g, prop, option))
DEF(cuMemAddressReserve, 10020, (CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags),
    i_mem_reserve(p, size, align, addr, flags))
DEF(cuMemAddressFree, 10020, (CUdeviceptr p, size_t size), i_mem_addr_free(p, size))
DEF(cuMemCreate, 10020, (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                  unsigned long long flags), i_mem_create(h, size, prop, flags))
DEF(cuMemRelease, 10020, (CUmemGenericAllocationHandle h), i_mem_release(h))
DEF(cuMemExportToShareableHandle, 10020, (void *out, CUmemGenericAllocationHandle h, int type, unsigned long long flags),
    i_mem_export_shareable(out, h, type, flags))
DEF(cuMemImportFromShareableHandle, 10020, (CUmemGenericAllocationHandle *h, void *os, int type),
    i_mem_import_shareable(h, os, type))
DEF(cuMemMap, 10020, (CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags),
    i_mem_map(p, size, offset, h, flags))
DEF(cuMemUnmap, 10020, (CUdeviceptr p, size_t size), i_mem_unmap(p, size))
DEF(cuMemSetAccess, 10020, (CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count),
    i_mem_set_access(p, size, desc, count))
DEF(cuMemGetAccess, 10020, (unsigned long long *f, const CUmemLocation *loc, CUdeviceptr p), i_mem_get_access(f, loc, p))

/* streams and events */
DEF(cuStreamCreate, 2000, (CUstream *ps, unsigned flags), i_stream_create(ps, flags, 0))
DEF(cuStreamCreateWithPriority, 5050, (CUstream *ps, unsigned flags, int prio), i_stream_create(ps, flags, prio))
DEFV(cuStreamDestroy_v2, cuStreamDestroy, 4000, (CUstream s), i_stream_destroy(s))
DEF_PTSZ(cuStreamSynchronize, 2000, (CUstream s), i_stream_sync(s))
DEF_PTSZ(cuStreamQuery, 2000, (CUstream s), i_stream_query(s))
DEF_PTSZ(cuStreamWaitEvent, 3020, (CUstream s, CUevent e, unsigned flags), i_stream_wait_event(s, e, flags))
DEF_PTSZ(cuStreamIsCapturing, 10000, (CUstream s, int *st), i_stream_is_capturing(s, st))
DEFV_PTSZ(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 11030, (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, size_t *nd),
         i_capture_info(s, st, id, g, d, nd))
DEFV_PTSZ(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo, 12030,
         (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, const void **ed, size_t *nd),
         i_capture_info(s, st, id, g, d, (ed ? (*ed = NULL, nd) : nd)))
DEF(cuEventCreate, 2000, (CUevent *pe, unsigned flags), i_event_create(pe, flags))
DEF_PTSZ(cuEventRecord, 2000, (CUevent e, CUstream s), i_event_record(e, s, 0))
DEF_PTSZ(cuEventRecordWithFlags, 11010, (CUevent e, CUstream s, unsigned flags), i_event_record(e, s, flags))
DEF(cuEventSynchronize, 2000, (CUevent e), i_event_sync(e))
DEF(cuEventQuery, 2000, (CUevent e), i_event_query(e) ?: gpu_query())
DEF(cuEventElapsedTime, 2000, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEFV(cuEventElapsedTime_v2, cuEventElapsedTime, 12080, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEFV(cuEventDestroy_v2, cuEventDestroy, 4000, (CUevent e), i_event_destroy(e))

/* stream capture and graphs */
DEFV_PTSZ(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, (CUstream s, int mode), i_begin_capture(s, mode))
DEF_PTSZ(cuStreamEndCapture, 10000, (CUstream s, CUgraph *g), i_end_capture(s, g))
DEF_PTSZ(cuStreamBeginCaptureToGraph, 12030, (CUstream s, CUgraph g, const CUgraphNode *d, const void *ed, size_t n, int mode),
         ((void)ed, i_begin_capture_to_graph(s, g, d, n, mode)))
DEF_PTSZ(cuStreamUpdateCaptureDependencies, 11030, (CUstream s, CUgraphNode *d, size_t n, unsigned flags),
         i_update_capture_deps(s, d, n, flags))
DEFV_PTSZ(cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies, 12030, (CUstream s, CUgraphNode *d, const void *ed, size_t n, unsigned flags),
         ((void)ed, i_update_capture_deps(s, d, n, flags)))
DEF(cuGraphCreate, 10000, (CUgraph *g, unsigned flags), i_graph_create(g, flags))
DEFV(cuGraphInstantiate_v2, cuGraphInstantiate, 11000, (CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t logsz),
    ((void)log, (void)logsz, (err ? (void)(*err = NULL) : (void)0), i_graph_instantiate(x, g, 0)))
DEF(cuGraphInstantiateWithFlags, 11040, (CUgraphExec *x, CUgraph g, unsigned long long flags), i_graph_instantiate(x, g, flags))
PROC(cuGraphInstantiate, 12000, cuGraphInstantiateWithFlags, NULL)
DEF_PTSZ(cuGraphInstantiateWithParams, 12000, (CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p),
         i_graph_instantiate_params(x, g, p))
DEF_PTSZ(cuGraphLaunch, 10000, (CUgraphExec x, CUstream s), i_graph_launch(x, s))
DEF(cuGraphDestroy, 10000, (CUgraph g), i_graph_destroy(g))
DEF(cuGraphExecDestroy, 10000, (CUgraphExec x), i_graph_exec_destroy(x))
/* explicit graph construction */
DEF(cuGraphAddKernelNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_add_kernel_v1(o, g, d, n, p))
DEFV(cuGraphAddKernelNode_v2, cuGraphAddKernelNode, 12000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS *p), i_add_kernel(o, g, d, n, p))
DEF(cuGraphAddMemcpyNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMCPY3D *p, CUcontext c), i_add_memcpy(o, g, d, n, p, c))
DEF(cuGraphAddMemsetNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c), i_add_memset(o, g, d, n, p, c))
DEF(cuGraphAddHostNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_HOST_NODE_PARAMS *p), i_add_host(o, g, d, n, p))
DEF(cuGraphAddEmptyNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n), i_add_empty(o, g, d, n))
DEF(cuGraphAddMemAllocNode, 11040, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, unsigned char *p),
    i_add_mem_alloc(o, g, d, n, p))
DEF(cuGraphAddMemFreeNode, 11040, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUdeviceptr p),
    i_add_mem_free(o, g, d, n, p))
DEF(cuGraphAddEventRecordNode, 11010, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVREC))
DEF(cuGraphAddEventWaitNode, 11010, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVWAIT))
DEF(cuGraphAddChildGraphNode, 10000, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraph child), i_add_child(o, g, d, n, child))
DEF(cuGraphAddNode, 12020, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraphNodeParams *p), node_add_generic(o, g, d, n, p))
DEFV(cuGraphAddNode_v2, cuGraphAddNode, 12030, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, const void *edges, size_t n,
                        CUgraphNodeParams *p), ((void)edges, node_add_generic(o, g, d, n, p)))
DEF(cuGraphAddDependencies, 10000, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, size_t n), i_add_deps(g, f, t, n))
DEFV(cuGraphAddDependencies_v2, cuGraphAddDependencies, 12030, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, const void *edges, size_t n),
    ((void)edges, i_add_deps(g, f, t, n)))
static CUresult i_set_kernel_v1(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS_v1 *p) { NODE_SET(t, kernel_fill_v1(&nd, p)); }
static CUresult i_set_kernel(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS *p) { NODE_SET(t, kernel_fill_v2(&nd, p)); }
static CUresult i_set_memcpy(struct fc_node *t, const CUDA_MEMCPY3D *p) { NODE_SET(t, memcpy_fill(&nd, p)); }
static CUresult i_set_memset(struct fc_node *t, const CUDA_MEMSET_NODE_PARAMS *p) { NODE_SET(t, memset_fill(&nd, p)); }
static CUresult i_set_host(struct fc_node *t, const CUDA_HOST_NODE_PARAMS *p) { NODE_SET(t, host_fill(&nd, p)); }
static CUresult i_set_child(struct fc_node *t, CUgraph c) { NODE_SET(t, child_fill(&nd, c)); }
DEF(cuGraphKernelNodeSetParams, 10000, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_set_kernel_v1(graph_node(h), p))
DEFV(cuGraphKernelNodeSetParams_v2, cuGraphKernelNodeSetParams, 12000, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p), i_set_kernel(graph_node(h), p))
DEF(cuGraphMemcpyNodeSetParams, 10000, (CUgraphNode h, const CUDA_MEMCPY3D *p), i_set_memcpy(graph_node(h), p))
DEF(cuGraphMemsetNodeSetParams, 10000, (CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p), i_set_memset(graph_node(h), p))
DEF(cuGraphHostNodeSetParams, 10000, (CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p), i_set_host(graph_node(h), p))
DEF(cuGraphExecKernelNodeSetParams, 10010, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
    i_set_kernel_v1(exec_node(x, h), p))
DEFV(cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams, 12000, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p),
    i_set_kernel(exec_node(x, h), p))
DEF(cuGraphExecMemcpyNodeSetParams, 10020, (CUgraphExec x, CUgraphNode h, const CUDA_MEMCPY3D *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memcpy(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecMemsetNodeSetParams, 10020, (CUgraphExec x, CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memset(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecHostNodeSetParams, 10020, (CUgraphExec x, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p),
    i_set_host(exec_node(x, h), p))
DEF(cuGraphExecChildGraphNodeSetParams, 11010, (CUgraphExec x, CUgraphNode h, CUgraph c), i_set_child(exec_node(x, h), c))
DEFV(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000, (CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info), i_graph_exec_update(x, g, info))
DEF_PTSZ(cuGraphUpload, 11010, (CUgraphExec x, CUstream s), i_graph_upload(x, s))
DEF(cuGraphClone, 10000, (CUgraph *c, CUgraph g), i_graph_clone(c, g))
DEF(cuGraphDestroyNode, 10000, (CUgraphNode h), i_graph_destroy_node(h))
DEF(cuGraphConditionalHandleCreate, 12030, (CUgraphConditionalHandle *h, CUgraph g, CUcontext c, unsigned dflt, unsigned flags),
    i_cond_handle_create(h, g, c, dflt, flags))

/* modules and libraries */
DEF(cuModuleLoad, 2000, (CUmodule *pm, const char *path), i_module_load(pm, path))
DEF(cuModuleLoadData, 2000, (CUmodule *pm, const void *image), i_module_load_data(pm, image))
DEF(cuModuleLoadDataEx, 2010, (CUmodule *pm, const void *image, unsigned n, void *opts, void **vals),
    ((void)n, (void)opts, (void)vals, i_module_load_data(pm, image)))
DEF(cuModuleLoadFatBinary, 2000, (CUmodule *pm, const void *image), i_module_load_data(pm, image))
DEF(cuModuleUnload, 2000, (CUmodule m), i_module_unload(m))
DEF(cuModuleGetFunction, 2000, (CUfunction *pf, CUmodule m, const char *name), i_module_get_function(pf, m, name))
DEFV(cuModuleGetGlobal_v2, cuModuleGetGlobal, 3020, (CUdeviceptr *d, size_t *n, CUmodule m, const char *name), i_module_get_global(d, n, m, name))
DEF(cuLibraryLoadData, 12000, (CUlibrary *pl, const void *code, void *jo, void **jv, unsigned njo, void *lo, void **lv,
                        unsigned nlo),
    ((void)jo, (void)jv, (void)njo, (void)lo, (void)lv, (void)nlo, i_library_load_data(pl, code)))
DEF(cuLibraryUnload, 12000, (CUlibrary l), i_library_unload(l))
DEF(cuLibraryGetKernel, 12000, (CUkernel *pk, CUlibrary l, const char *name), i_library_get_kernel(pk, l, name))
DEF(cuLibraryGetModule, 12000, (CUmodule *pm, CUlibrary l), i_library_get_module(pm, l))
DEF(cuLibraryGetGlobal, 12000, (CUdeviceptr *d, size_t *n, CUlibrary l, const char *name), i_library_get_global(d, n, l, name))
DEF(cuKernelGetFunction, 12000, (CUfunction *pf, CUkernel k), i_kernel_get_function(pf, k))
DEF(cuKernelGetAttribute, 12000, (int *pi, int a, CUkernel k, CUdevice d), i_kernel_get_attr(pi, a, k, d))
DEF(cuKernelSetAttribute, 12000, (int a, int v, CUkernel k, CUdevice d), i_kernel_set_attr(a, v, k, d))
DEF(cuKernelGetParamInfo, 12040, (CUkernel k, size_t i, size_t *off, size_t *size), i_kernel_param_info(k, i, off, size))
DEF(cuKernelGetName, 12030, (const char **name, CUkernel k), i_kernel_get_name(name, k))
DEF(cuFuncGetAttribute, 2020, (int *pi, int a, CUfunction f), i_func_get_attr(pi, a, f))
DEF(cuFuncSetAttribute, 9000, (CUfunction f, int a, int v), i_func_set_attr(f, a, v))
DEF(cuFuncSetCacheConfig, 3000, (CUfunction f, int cfg), i_func_set_cache(f, cfg))
DEF(cuFuncGetParamInfo, 12040, (CUfunction f, size_t i, size_t *off, size_t *size), i_func_param_info(f, i, off, size))
DEF(cuFuncGetName, 12030, (const char **name, CUfunction f), i_func_get_name(name, f))
DEF(cuFuncGetModule, 11000, (CUmodule *pm, CUfunction f), i_func_get_module(pm, f))
DEF(cuModuleEnumerateFunctions, 12000, (CUfunction *fns, unsigned n, CUmodule m), i_module_enumerate(fns, n, m))
DEF(cuLibraryEnumerateKernels, 12000, (CUkernel *ks, unsigned n, CUlibrary l), i_library_enumerate(ks, n, l))
DEF(cuGetExportTable, 3000, (const void **table, const CUuuid *id), i_get_export_table(table, id))
DEF(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, (int *nb, CUfunction f, int block, size_t smem),
    i_occupancy(nb, f, block, smem, 0))
DEF(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000,
    (int *nb, CUfunction f, int block, size_t smem, unsigned flags), i_occupancy(nb, f, block, smem, flags))

/* launches */
DEF_PTSZ(cuLaunchKernel, 4000, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shmem, CUstream s, void **params, void **extra),
         launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
DEF_PTSZ(cuLaunchCooperativeKernel, 9000, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shmem, CUstream s, void **params),
         launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL))
DEF_PTSZ(cuLaunchKernelEx, 11060, (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra),
         launch_ex(cfg, f, params, extra))

/* Host functions run inline, outside the lock (they may call back into CUDA). */
static CUresult hostfn(const char *name, CUstream s, CUhostFn fn, void *ud) {
  CUresult r;
  fc_lock();
  r = g_inited ? hostfn_check(s, fn) : E_NOT_INITIALIZED;
  struct fc_node *nd = r == E_SUCCESS ? captured_node(s, N_HOST) : NULL;
  if (nd) { /* inside a stream capture: a host node, run at each launch */
    nd->hfn = fn;
    nd->hdata = ud;
  }
  int queued = r == E_SUCCESS && (nd || async_hostfn(fn, ud));
  fc_unlock();
  if (r == E_SUCCESS && !queued) fn(ud);
  if (g_trace) fc_trace(name, r);
  return r;
}
#define DEF_HOSTFN(name)                                                                  \
  FC_EXPORT CUresult name(CUstream s, CUhostFn fn, void *ud);                             \
  CUresult name(CUstream s, CUhostFn fn, void *ud) { return hostfn(#name, s, fn, ud); }   \
  SELF_ALIAS(name)
DEF_HOSTFN(cuLaunchHostFunc)
DEF_HOSTFN(cuLaunchHostFunc_ptsz)
PROC(cuLaunchHostFunc, 10000, cuLaunchHostFunc, (void *)cuLaunchHostFunc_ptsz__self)

/* cuStreamAddCallback: a host function whose callback also takes the stream and a status. */
typedef void (*fc_stream_cb)(CUstream, CUresult, void *);
struct fc_callback {
  fc_stream_cb cb;
  CUstream s;
  void *ud;
};
static void callback_trampoline(void *p) {
  struct fc_callback *c = p;
  c->cb(c->s, E_SUCCESS, c->ud);
  free(c);
}
static CUresult stream_add_callback(const char *name, CUstream s, fc_stream_cb cb, void *ud, unsigned flags) {
  if (flags || !cb) return E_INVALID_VALUE;
  struct fc_callback *c = malloc(sizeof *c);
  if (!c) return E_OUT_OF_MEMORY;
  *c = (struct fc_callback){cb, s, ud};
  CUresult r = hostfn(name, s, callback_trampoline, c);
  if (r) free(c);
  return r;
}
#define DEF_STREAM_CALLBACK(name)                                                                           \
  FC_EXPORT CUresult name(CUstream s, fc_stream_cb cb, void *ud, unsigned flags);                           \
  CUresult name(CUstream s, fc_stream_cb cb, void *ud, unsigned flags) {                                    \
    return stream_add_callback(#name, s, cb, ud, flags);                                                    \
  }                                                                                                         \
  SELF_ALIAS(name)
DEF_STREAM_CALLBACK(cuStreamAddCallback)
DEF_STREAM_CALLBACK(cuStreamAddCallback_ptsz)
PROC(cuStreamAddCallback, 5000, cuStreamAddCallback, (void *)cuStreamAddCallback_ptsz__self)

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                         */
/* ------------------------------------------------------------------------ */

/* status: 0 SUCCESS, 1 SYMBOL_NOT_FOUND, 2 VERSION_NOT_SUFFICIENT */
static CUresult i_get_proc_address(const char *sym, void **pfn, int ver, cuuint64_t flags, int *status);
DEF0(cuGetProcAddress, 11030, (const char *sym, void **pfn, int ver, cuuint64_t flags),
     i_get_proc_address(sym, pfn, ver, flags, NULL))
DEF0V(cuGetProcAddress_v2, cuGetProcAddress, 12000, (const char *sym, void **pfn, int ver, cuuint64_t flags, int *status),
     i_get_proc_address(sym, pfn, ver, flags, status))

/* The rows the exports state (PROC), bounded by the linker. */
extern const struct pa_ent __start_fc_procs[] __attribute__((visibility("hidden")));
extern const struct pa_ent __stop_fc_procs[] __attribute__((visibility("hidden")));

static CUresult i_get_proc_address(const char *sym, void **pfn, int ver, cuuint64_t flags, int *status) {
  if (!sym || !pfn) return E_INVALID_VALUE;
  *pfn = NULL;
  if (ver > FC_DRIVER_VERSION || flags > 2) return E_INVALID_VALUE;
  const struct pa_ent *best = NULL;
  int seen = 0;
  for (const struct pa_ent *e = __start_fc_procs; e < __stop_fc_procs; e++) {
    if (strcmp(e->base, sym)) continue;
    seen = 1;
    if (e->since <= ver && (!best || e->since > best->since)) best = e;
  }
  if (!best) {
    if (status) *status = seen ? 2 : 1;
    return E_SUCCESS;
  }
  *pfn = (flags == 2 && best->pt && ver >= 7000) ? best->pt : best->fn;
  if (status) *status = 0;
  return E_SUCCESS;
}
