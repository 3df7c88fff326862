/*
 * fake_cuda_exports.c - the exported entry points: every cu* symbol of libcuda.so.1 (each
 * takes the lock, checks cuInit, runs its implementation and traces), host functions, and the
 * cuGetProcAddress table.
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
#define DEF(name, params, call) DEF_(name, params, call, 1)
#define DEF0(name, params, call) DEF_(name, params, call, 0)
/* NAME and its per-thread default stream twin NAME_ptsz (or NAME_ptds): the same parameters
 * and implementation. */
#define DEF_PTSZ(name, params, call) DEF(name, params, call) DEF(name##_ptsz, params, call)
#define DEF_PTDS(name, params, call) DEF(name, params, call) DEF(name##_ptds, params, call)

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
/* Peer access: kernels of the current context may touch the peer's device's memory (kernel_ok).
   Peer copies are device-to-device copies (copies reach every device, as with unified
   addressing). */
DEF(cuCtxEnablePeerAccess, (CUcontext peer, unsigned flags), i_peer_access(peer, flags, 1))
DEF(cuCtxDisablePeerAccess, (CUcontext peer), i_peer_access(peer, 0, 0))
DEF(cuMemcpyPeer, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
    (!obj_is(dc, T_CTX) || !obj_is(sc, T_CTX)) ? E_INVALID_CONTEXT : D2D(d, s, n, NULL, 0))
DEF(cuMemcpyPeerAsync, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st),
    (!obj_is(dc, T_CTX) || !obj_is(sc, T_CTX)) ? E_INVALID_CONTEXT : D2D(d, s, n, st, 1))
DEF(cuCtxSynchronize_v2, (CUcontext c), i_ctx_sync(c))
DEF(cuCtxGetLimit, (size_t *v, int limit), i_ctx_get_limit(v, limit))
DEF(cuCtxSetLimit, (int limit, size_t v), i_ctx_set_limit(limit, v))
DEF(cuCtxSetCacheConfig, (int cfg), i_ctx_set_cache(cfg))
DEF(cuCtxGetStreamPriorityRange, (int *least, int *greatest), i_ctx_prio_range(least, greatest))
DEF0(cuModuleGetLoadingMode, (int *mode), i_loading_mode(mode))

/* memory */
DEF(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), i_mem_alloc(p, n, NULL, 0))
DEF(cuMemAllocPitch_v2, (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem),
    i_mem_alloc_pitch(p, pitch, w, h, elem))
DEF(cuMemFree_v2, (CUdeviceptr p), i_mem_free(p, NULL, 0))
DEF_PTSZ(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), i_mem_alloc(p, n, s, 1))
DEF_PTSZ(cuMemFreeAsync, (CUdeviceptr p, CUstream s), i_mem_free(p, s, 1))
DEF(cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned flags), i_mem_alloc_managed(p, n, flags))
DEF_PTSZ(cuMemAllocFromPoolAsync, (CUdeviceptr *p, size_t n, struct fc_pool *pool, CUstream s), i_alloc_from_pool(p, n, pool, s))
DEF(cuMemPoolCreate, (struct fc_pool **p, const CUmemPoolProps *props), i_pool_create(p, props))
DEF(cuMemPoolDestroy, (struct fc_pool *p), i_pool_destroy(p))
DEF(cuMemPoolSetAttribute, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 1))
DEF(cuMemPoolGetAttribute, (struct fc_pool *p, int attr, void *v), i_pool_attr(p, attr, v, 0))
DEF(cuMemPoolTrimTo, (struct fc_pool *p, size_t keep), i_pool_trim(p, keep))
DEF(cuMemPoolSetAccess, (struct fc_pool *p, const CUmemAccessDesc *d, size_t n), i_pool_set_access(p, d, n))
DEF(cuDeviceGetDefaultMemPool, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 1))
DEF(cuDeviceGetMemPool, (struct fc_pool **p, CUdevice d), i_device_pool(p, d, 0))
DEF(cuDeviceSetMemPool, (CUdevice d, struct fc_pool *p), i_device_set_pool(d, p))
DEF(cuMemGetInfo_v2, (size_t *fr, size_t *total), i_mem_get_info(fr, total))
DEF(cuMemGetAddressRange_v2, (CUdeviceptr *b, size_t *s, CUdeviceptr p), i_mem_addr_range(b, s, p))
DEF(cuIpcGetMemHandle, (CUipcMemHandle *h, CUdeviceptr p), i_ipc_get_mem_handle(h, p))
DEF(cuIpcOpenMemHandle_v2, (CUdeviceptr *p, CUipcMemHandle h, unsigned flags), i_ipc_open_mem_handle(p, &h, flags))
DEF(cuIpcOpenMemHandle, (CUdeviceptr *p, CUipcMemHandle h, unsigned flags), i_ipc_open_mem_handle(p, &h, flags))
DEF(cuIpcCloseMemHandle, (CUdeviceptr p), i_ipc_close_mem_handle(p))
DEF(cuIpcGetEventHandle, (CUipcMemHandle *h, CUevent e), i_ipc_get_event_handle(h, e))
DEF(cuIpcOpenEventHandle, (CUevent *e, CUipcMemHandle h), i_ipc_open_event_handle(e, &h))
DEF(cuMemHostAlloc, (void **pp, size_t n, unsigned flags), i_host_alloc(pp, n, flags))
DEF(cuMemAllocHost_v2, (void **pp, size_t n), i_host_alloc(pp, n, 0))
DEF(cuMemFreeHost, (void *p), i_host_free(p))
DEF(cuMemHostRegister_v2, (void *p, size_t n, unsigned flags), i_host_register(p, n, flags))
DEF(cuMemHostUnregister, (void *p), i_host_unregister(p))
DEF(cuMemHostGetDevicePointer_v2, (CUdeviceptr *pd, void *p, unsigned flags), i_host_get_dptr(pd, p, flags))
DEF(cuPointerGetAttribute, (void *data, int attr, CUdeviceptr p), i_ptr_get_attr(data, attr, p))
DEF(cuPointerGetAttributes, (unsigned n, int *attrs, void **data, CUdeviceptr p), i_ptr_get_attrs(n, attrs, data, p))

/* copies */
DEF_PTDS(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), UVA(d, s, n, NULL, 0))
DEF_PTSZ(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), UVA(d, s, n, st, 1))
DEF_PTDS(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), H2D(d, s, n, NULL, 0))
DEF_PTDS(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), gpu_wait() ?: D2H(d, s, n, NULL, 0))
DEF_PTDS(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), D2D(d, s, n, NULL, 0))
DEF_PTSZ(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream st), H2D(d, s, n, st, 1))
DEF_PTSZ(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st), D2H(d, s, n, st, 1))
DEF_PTSZ(cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), D2D(d, s, n, st, 1))

/* arrays, 2D/3D copies, texture and surface objects */
DEF(cuArrayCreate_v2, (void **pa, const CUDA_ARRAY_DESCRIPTOR *d), i_array_create(pa, d))
DEF(cuArray3DCreate_v2, (void **pa, const CUDA_ARRAY3D_DESCRIPTOR *d), i_array3d_create(pa, d))
DEF(cuArrayDestroy, (void *a), i_array_destroy(a))
DEF(cuMipmappedArrayCreate, (void **pm, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned n), i_mipmap_create(pm, d, n))
DEF(cuMipmappedArrayGetLevel, (void **pa, void *m, unsigned level), i_mipmap_level(pa, m, level))
DEF(cuMipmappedArrayDestroy, (void *m), i_mipmap_destroy(m))
DEF_PTDS(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF_PTDS(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), gpu_wait() ?: copy2d(p, NULL, 0))
DEF_PTSZ(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream s), copy2d(p, s, 1))
DEF_PTDS(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), gpu_wait() ?: copy3d(p, NULL, 0))
DEF_PTSZ(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream s), copy3d(p, s, 1))
DEF_PTDS(cuMemcpyHtoA_v2, (void *a, size_t off, const void *src, size_t n),
         copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, NULL, 0))
DEF_PTDS(cuMemcpyAtoH_v2, (void *dst, void *a, size_t off, size_t n),
         gpu_wait() ?: copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, NULL, 0))
DEF_PTSZ(cuMemcpyHtoAAsync_v2, (void *a, size_t off, const void *src, size_t n, CUstream s),
         copy_array_1d(a, off, 0, 0, NULL, 0, (uintptr_t)src, 0, n, s, 1))
DEF_PTSZ(cuMemcpyAtoHAsync_v2, (void *dst, void *a, size_t off, size_t n, CUstream s),
         copy_array_1d(NULL, 0, (uintptr_t)dst, 0, a, off, 0, 0, n, s, 1))
DEF_PTDS(cuMemcpyAtoD_v2, (CUdeviceptr d, void *a, size_t off, size_t n), copy_array_1d(NULL, 0, d, 1, a, off, 0, 0, n, NULL, 0))
DEF_PTDS(cuMemcpyDtoA_v2, (void *a, size_t off, CUdeviceptr s, size_t n), copy_array_1d(a, off, 0, 0, NULL, 0, s, 1, n, NULL, 0))
DEF_PTDS(cuMemcpyAtoA_v2, (void *d, size_t doff, void *s, size_t soff, size_t n),
         copy_array_1d(d, doff, 0, 0, s, soff, 0, 0, n, NULL, 0))
DEF(cuTexObjectCreate, (unsigned long long *po, const CUDA_RESOURCE_DESC *r, const void *t, const void *v),
    ((void)v, obj_create(po, r, t, 0)))
DEF(cuTexObjectDestroy, (unsigned long long o), obj_destroy(o, 0))
DEF(cuSurfObjectCreate, (unsigned long long *po, const CUDA_RESOURCE_DESC *r), obj_create(po, r, NULL, 1))
DEF(cuSurfObjectDestroy, (unsigned long long o), obj_destroy(o, 1))

/* tensor maps (host-only: no cuInit needed, as with the real driver) */
DEF0(cuTensorMapEncodeTiled,
     (void *m, int t, unsigned r, void *a, const unsigned long long *d, const unsigned long long *s, const unsigned *b,
      const unsigned *e, int il, int sw, int l2, int oob),
     ((void)il, (void)sw, (void)l2, (void)oob, i_tensor_map_encode_tiled(m, t, r, a, d, s, b, e)))
DEF0(cuTensorMapEncodeIm2col,
     (void *m, int t, unsigned r, void *a, const unsigned long long *d, const unsigned long long *s, const int *lo,
      const int *hi, unsigned ch, unsigned px, const unsigned *e, int il, int sw, int l2, int oob),
     ((void)il, (void)sw, (void)l2, (void)oob, i_tensor_map_encode_im2col(m, t, r, a, d, s, lo, hi, ch, px, e)))
DEF0(cuTensorMapReplaceAddress, (void *m, void *a), i_tensor_map_replace_address(m, a))

/* memsets */
DEF_PTDS(cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), memset_checked(d, v, n, 1, NULL, 0))
DEF_PTDS(cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n), memset_checked(d, v, n, 2, NULL, 0))
DEF_PTDS(cuMemsetD32_v2, (CUdeviceptr d, unsigned v, size_t n), memset_checked(d, v, n, 4, NULL, 0))
DEF_PTSZ(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream s), memset_checked(d, v, n, 1, s, 1))
DEF_PTSZ(cuMemsetD16Async, (CUdeviceptr d, unsigned short v, size_t n, CUstream s), memset_checked(d, v, n, 2, s, 1))
DEF_PTSZ(cuMemsetD32Async, (CUdeviceptr d, unsigned v, size_t n, CUstream s), memset_checked(d, v, n, 4, s, 1))
/* stream memory operations: NAME_v2, its _ptsz and the legacy NAME (the same calls here) */
#define STREAM_VALUE1(name, T, width, wait) \
  DEF(name, (CUstream s, CUdeviceptr a, T v, unsigned f), stream_value(s, a, v, f, width, wait))
#define STREAM_VALUE(name, T, width, wait) \
  STREAM_VALUE1(name##_v2, T, width, wait)   \
  STREAM_VALUE1(name##_v2_ptsz, T, width, wait) STREAM_VALUE1(name, T, width, wait)
STREAM_VALUE(cuStreamWriteValue32, uint32_t, 4, 0)
STREAM_VALUE(cuStreamWriteValue64, uint64_t, 8, 0)
STREAM_VALUE(cuStreamWaitValue32, uint32_t, 4, 1)
STREAM_VALUE(cuStreamWaitValue64, uint64_t, 8, 1)

/* virtual memory management (no context needed) */
DEF(cuMemGetAllocationGranularity, (size_t *g, const CUmemAllocationProp *prop, int option),
    i_mem_granularity(g, prop, option))
DEF(cuMemAddressReserve, (CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags),
    i_mem_reserve(p, size, align, addr, flags))
DEF(cuMemAddressFree, (CUdeviceptr p, size_t size), i_mem_addr_free(p, size))
DEF(cuMemCreate, (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                  unsigned long long flags), i_mem_create(h, size, prop, flags))
DEF(cuMemRelease, (CUmemGenericAllocationHandle h), i_mem_release(h))
DEF(cuMemExportToShareableHandle, (void *out, CUmemGenericAllocationHandle h, int type, unsigned long long flags),
    i_mem_export_shareable(out, h, type, flags))
DEF(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle *h, void *os, int type),
    i_mem_import_shareable(h, os, type))
DEF(cuMemMap, (CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags),
    i_mem_map(p, size, offset, h, flags))
DEF(cuMemUnmap, (CUdeviceptr p, size_t size), i_mem_unmap(p, size))
DEF(cuMemSetAccess, (CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count),
    i_mem_set_access(p, size, desc, count))

/* streams and events */
DEF(cuStreamCreate, (CUstream *ps, unsigned flags), i_stream_create(ps, flags, 0))
DEF(cuStreamCreateWithPriority, (CUstream *ps, unsigned flags, int prio), i_stream_create(ps, flags, prio))
DEF(cuStreamDestroy_v2, (CUstream s), i_stream_destroy(s))
DEF_PTSZ(cuStreamSynchronize, (CUstream s), i_stream_sync(s))
DEF_PTSZ(cuStreamQuery, (CUstream s), i_stream_query(s))
DEF_PTSZ(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned flags), i_stream_wait_event(s, e, flags))
DEF_PTSZ(cuStreamIsCapturing, (CUstream s, int *st), i_stream_is_capturing(s, st))
DEF_PTSZ(cuStreamGetCaptureInfo_v2, (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, size_t *nd),
         i_capture_info(s, st, id, g, d, nd))
DEF_PTSZ(cuStreamGetCaptureInfo_v3,
         (CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **d, const void **ed, size_t *nd),
         i_capture_info(s, st, id, g, d, (ed ? (*ed = NULL, nd) : nd)))
DEF(cuEventCreate, (CUevent *pe, unsigned flags), i_event_create(pe, flags))
DEF_PTSZ(cuEventRecord, (CUevent e, CUstream s), i_event_record(e, s, 0))
DEF_PTSZ(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned flags), i_event_record(e, s, flags))
DEF(cuEventSynchronize, (CUevent e), i_event_sync(e))
DEF(cuEventQuery, (CUevent e), i_event_query(e) ?: gpu_query())
DEF(cuEventElapsedTime, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEF(cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b), i_event_elapsed(ms, a, b))
DEF(cuEventDestroy_v2, (CUevent e), i_event_destroy(e))

/* stream capture and graphs */
DEF_PTSZ(cuStreamBeginCapture_v2, (CUstream s, int mode), i_begin_capture(s, mode))
DEF_PTSZ(cuStreamEndCapture, (CUstream s, CUgraph *g), i_end_capture(s, g))
DEF_PTSZ(cuStreamBeginCaptureToGraph, (CUstream s, CUgraph g, const CUgraphNode *d, const void *ed, size_t n, int mode),
         ((void)ed, i_begin_capture_to_graph(s, g, d, n, mode)))
DEF_PTSZ(cuStreamUpdateCaptureDependencies, (CUstream s, CUgraphNode *d, size_t n, unsigned flags),
         i_update_capture_deps(s, d, n, flags))
DEF_PTSZ(cuStreamUpdateCaptureDependencies_v2, (CUstream s, CUgraphNode *d, const void *ed, size_t n, unsigned flags),
         ((void)ed, i_update_capture_deps(s, d, n, flags)))
DEF(cuGraphCreate, (CUgraph *g, unsigned flags), i_graph_create(g, flags))
DEF(cuGraphInstantiate_v2, (CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t logsz),
    ((void)log, (void)logsz, (err ? (void)(*err = NULL) : (void)0), i_graph_instantiate(x, g, 0)))
DEF(cuGraphInstantiateWithFlags, (CUgraphExec *x, CUgraph g, unsigned long long flags), i_graph_instantiate(x, g, flags))
DEF_PTSZ(cuGraphInstantiateWithParams, (CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p),
         i_graph_instantiate_params(x, g, p))
DEF_PTSZ(cuGraphLaunch, (CUgraphExec x, CUstream s), i_graph_launch(x, s))
DEF(cuGraphDestroy, (CUgraph g), i_graph_destroy(g))
DEF(cuGraphExecDestroy, (CUgraphExec x), i_graph_exec_destroy(x))
/* explicit graph construction */
DEF(cuGraphAddKernelNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_add_kernel_v1(o, g, d, n, p))
DEF(cuGraphAddKernelNode_v2, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_KERNEL_NODE_PARAMS *p), i_add_kernel(o, g, d, n, p))
DEF(cuGraphAddMemcpyNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMCPY3D *p, CUcontext c), i_add_memcpy(o, g, d, n, p, c))
DEF(cuGraphAddMemsetNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c), i_add_memset(o, g, d, n, p, c))
DEF(cuGraphAddHostNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, const CUDA_HOST_NODE_PARAMS *p), i_add_host(o, g, d, n, p))
DEF(cuGraphAddEmptyNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n), i_add_empty(o, g, d, n))
DEF(cuGraphAddMemAllocNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, unsigned char *p),
    i_add_mem_alloc(o, g, d, n, p))
DEF(cuGraphAddMemFreeNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUdeviceptr p),
    i_add_mem_free(o, g, d, n, p))
DEF(cuGraphAddEventRecordNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVREC))
DEF(cuGraphAddEventWaitNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUevent e), i_add_event(o, g, d, n, e, N_EVWAIT))
DEF(cuGraphAddChildGraphNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraph child), i_add_child(o, g, d, n, child))
DEF(cuGraphAddNode, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n, CUgraphNodeParams *p), node_add_generic(o, g, d, n, p))
DEF(cuGraphAddNode_v2, (CUgraphNode *o, CUgraph g, const CUgraphNode *d, const void *edges, size_t n,
                        CUgraphNodeParams *p), ((void)edges, node_add_generic(o, g, d, n, p)))
DEF(cuGraphAddDependencies, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, size_t n), i_add_deps(g, f, t, n))
DEF(cuGraphAddDependencies_v2, (CUgraph g, const CUgraphNode *f, const CUgraphNode *t, const void *edges, size_t n),
    ((void)edges, i_add_deps(g, f, t, n)))
static CUresult i_set_kernel_v1(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS_v1 *p) { NODE_SET(t, kernel_fill_v1(&nd, p)); }
static CUresult i_set_kernel(struct fc_node *t, const CUDA_KERNEL_NODE_PARAMS *p) { NODE_SET(t, kernel_fill_v2(&nd, p)); }
static CUresult i_set_memcpy(struct fc_node *t, const CUDA_MEMCPY3D *p) { NODE_SET(t, memcpy_fill(&nd, p)); }
static CUresult i_set_memset(struct fc_node *t, const CUDA_MEMSET_NODE_PARAMS *p) { NODE_SET(t, memset_fill(&nd, p)); }
static CUresult i_set_host(struct fc_node *t, const CUDA_HOST_NODE_PARAMS *p) { NODE_SET(t, host_fill(&nd, p)); }
static CUresult i_set_child(struct fc_node *t, CUgraph c) { NODE_SET(t, child_fill(&nd, c)); }
DEF(cuGraphKernelNodeSetParams, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p), i_set_kernel_v1(graph_node(h), p))
DEF(cuGraphKernelNodeSetParams_v2, (CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p), i_set_kernel(graph_node(h), p))
DEF(cuGraphMemcpyNodeSetParams, (CUgraphNode h, const CUDA_MEMCPY3D *p), i_set_memcpy(graph_node(h), p))
DEF(cuGraphMemsetNodeSetParams, (CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p), i_set_memset(graph_node(h), p))
DEF(cuGraphHostNodeSetParams, (CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p), i_set_host(graph_node(h), p))
DEF(cuGraphExecKernelNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
    i_set_kernel_v1(exec_node(x, h), p))
DEF(cuGraphExecKernelNodeSetParams_v2, (CUgraphExec x, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p),
    i_set_kernel(exec_node(x, h), p))
DEF(cuGraphExecMemcpyNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_MEMCPY3D *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memcpy(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecMemsetNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c),
    obj_is(c, T_CTX) ? i_set_memset(exec_node(x, h), p) : E_INVALID_CONTEXT)
DEF(cuGraphExecHostNodeSetParams, (CUgraphExec x, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p),
    i_set_host(exec_node(x, h), p))
DEF(cuGraphExecChildGraphNodeSetParams, (CUgraphExec x, CUgraphNode h, CUgraph c), i_set_child(exec_node(x, h), c))
DEF(cuGraphExecUpdate_v2, (CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info), i_graph_exec_update(x, g, info))
DEF_PTSZ(cuGraphUpload, (CUgraphExec x, CUstream s), i_graph_upload(x, s))
DEF(cuGraphClone, (CUgraph *c, CUgraph g), i_graph_clone(c, g))
DEF(cuGraphDestroyNode, (CUgraphNode h), i_graph_destroy_node(h))
DEF(cuGraphConditionalHandleCreate, (CUgraphConditionalHandle *h, CUgraph g, CUcontext c, unsigned dflt, unsigned flags),
    i_cond_handle_create(h, g, c, dflt, flags))

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
DEF_PTSZ(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shmem, CUstream s, void **params, void **extra),
         launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
DEF_PTSZ(cuLaunchCooperativeKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shmem, CUstream s, void **params),
         launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL))
DEF_PTSZ(cuLaunchKernelEx, (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra),
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
  P("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess)
  P("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess)
  P("cuMemcpyPeer", 4000, cuMemcpyPeer)
  P("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync)
  P("cuCtxGetDevice_v2", 13000, cuCtxGetDevice_v2)
  P("cuCtxSynchronize", 2000, cuCtxSynchronize)
  P("cuCtxSynchronize_v2", 13000, cuCtxSynchronize_v2)
  P("cuCtxGetLimit", 3010, cuCtxGetLimit)
  P("cuCtxSetLimit", 3010, cuCtxSetLimit)
  P("cuCtxSetCacheConfig", 3020, cuCtxSetCacheConfig)
  P("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange)
  P("cuModuleGetLoadingMode", 11070, cuModuleGetLoadingMode)
  P("cuMemAlloc", 3020, cuMemAlloc_v2)
  P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2)
  P("cuMemFree", 3020, cuMemFree_v2)
  PT("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz)
  PT("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)
  P("cuMemAllocManaged", 6000, cuMemAllocManaged)
  PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz)
  P("cuMemPoolCreate", 11020, cuMemPoolCreate)
  P("cuMemPoolDestroy", 11020, cuMemPoolDestroy)
  P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute)
  P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute)
  P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo)
  P("cuMemPoolSetAccess", 11020, cuMemPoolSetAccess)
  P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool)
  P("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool)
  P("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool)
  P("cuMemGetInfo", 3020, cuMemGetInfo_v2)
  P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2)
  P("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle)
  P("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2)
  P("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle)
  P("cuIpcGetEventHandle", 4010, cuIpcGetEventHandle)
  P("cuIpcOpenEventHandle", 4010, cuIpcOpenEventHandle)
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
  PT("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds)
  PT("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds)
  PT("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz)
  PT("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds)
  PT("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz)
  PT("cuMemcpyHtoA", 3020, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds)
  PT("cuMemcpyAtoH", 3020, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds)
  PT("cuMemcpyHtoAAsync", 3020, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz)
  PT("cuMemcpyAtoHAsync", 3020, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz)
  PT("cuMemcpyAtoD", 3020, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds)
  PT("cuMemcpyDtoA", 3020, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds)
  PT("cuMemcpyAtoA", 3020, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds)
  P("cuArrayCreate", 3020, cuArrayCreate_v2)
  P("cuArray3DCreate", 3020, cuArray3DCreate_v2)
  P("cuArrayDestroy", 2000, cuArrayDestroy)
  P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate)
  P("cuMipmappedArrayGetLevel", 5000, cuMipmappedArrayGetLevel)
  P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy)
  P("cuTexObjectCreate", 5000, cuTexObjectCreate)
  P("cuTexObjectDestroy", 5000, cuTexObjectDestroy)
  P("cuSurfObjectCreate", 5000, cuSurfObjectCreate)
  P("cuSurfObjectDestroy", 5000, cuSurfObjectDestroy)
  P("cuTensorMapEncodeTiled", 12000, cuTensorMapEncodeTiled)
  P("cuTensorMapEncodeIm2col", 12000, cuTensorMapEncodeIm2col)
  P("cuTensorMapReplaceAddress", 12000, cuTensorMapReplaceAddress)
  PT("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds)
  PT("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds)
  PT("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds)
  PT("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz)
  PT("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz)
  PT("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz)
  PT("cuStreamWriteValue32", 12000, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz)
  PT("cuStreamWriteValue64", 12000, cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz)
  PT("cuStreamWaitValue32", 12000, cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz)
  PT("cuStreamWaitValue64", 12000, cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz)
  P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity)
  P("cuMemAddressReserve", 10020, cuMemAddressReserve)
  P("cuMemAddressFree", 10020, cuMemAddressFree)
  P("cuMemCreate", 10020, cuMemCreate)
  P("cuMemRelease", 10020, cuMemRelease)
  P("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle)
  P("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle)
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
  PT("cuStreamBeginCaptureToGraph", 12030, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz)
  PT("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz)
  PT("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz)
  PT("cuStreamUpdateCaptureDependencies", 11030, cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz)
  PT("cuStreamUpdateCaptureDependencies", 12030, cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz)
  PT("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz)
  P("cuGraphCreate", 10000, cuGraphCreate)
  P("cuGraphInstantiate", 11000, cuGraphInstantiate_v2)
  P("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags)
  P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags)
  PT("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz)
  PT("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz)
  P("cuGraphDestroy", 10000, cuGraphDestroy)
  P("cuGraphExecDestroy", 10000, cuGraphExecDestroy)
  P("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode)
  P("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2)
  P("cuGraphAddMemcpyNode", 10000, cuGraphAddMemcpyNode)
  P("cuGraphAddMemsetNode", 10000, cuGraphAddMemsetNode)
  P("cuGraphAddHostNode", 10000, cuGraphAddHostNode)
  P("cuGraphAddEmptyNode", 10000, cuGraphAddEmptyNode)
  P("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode)
  P("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode)
  P("cuGraphAddEventRecordNode", 11010, cuGraphAddEventRecordNode)
  P("cuGraphAddEventWaitNode", 11010, cuGraphAddEventWaitNode)
  P("cuGraphAddChildGraphNode", 10000, cuGraphAddChildGraphNode)
  P("cuGraphAddNode", 12020, cuGraphAddNode)
  P("cuGraphAddNode", 12030, cuGraphAddNode_v2)
  P("cuGraphAddDependencies", 10000, cuGraphAddDependencies)
  P("cuGraphAddDependencies", 12030, cuGraphAddDependencies_v2)
  P("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams)
  P("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2)
  P("cuGraphMemcpyNodeSetParams", 10000, cuGraphMemcpyNodeSetParams)
  P("cuGraphMemsetNodeSetParams", 10000, cuGraphMemsetNodeSetParams)
  P("cuGraphHostNodeSetParams", 10000, cuGraphHostNodeSetParams)
  P("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams)
  P("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2)
  P("cuGraphExecMemcpyNodeSetParams", 10020, cuGraphExecMemcpyNodeSetParams)
  P("cuGraphExecMemsetNodeSetParams", 10020, cuGraphExecMemsetNodeSetParams)
  P("cuGraphExecHostNodeSetParams", 10020, cuGraphExecHostNodeSetParams)
  P("cuGraphExecChildGraphNodeSetParams", 11010, cuGraphExecChildGraphNodeSetParams)
  P("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2)
  PT("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz)
  P("cuGraphClone", 10000, cuGraphClone)
  P("cuGraphDestroyNode", 10000, cuGraphDestroyNode)
  P("cuGraphConditionalHandleCreate", 12030, cuGraphConditionalHandleCreate)
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
