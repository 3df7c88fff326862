/*
 * fake_hip_spt.c - the per-thread default stream forms (`*_spt`) a program built with
 * `-fgpu-default-stream=per-thread` calls: each is the plain call (this runtime runs work in
 * call order, so the thread's own stream and the null stream order alike). ROCm exports them
 * in version node hip_5.2 (fake_hip.map).
 */
#include "fake_hip_internal.h"

hipError_t hipMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off, int kind);
hipError_t hipMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off, int kind);
hipError_t hipMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off, int kind, hipStream_t s);
hipError_t hipMemcpyFromSymbolAsync(void *dst, const void *sym, size_t n, size_t off, int kind, hipStream_t s);
hipError_t hipMemcpy(void *d, const void *s, size_t n, int kind);
hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, int kind, hipStream_t st);
hipError_t hipMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind);
hipError_t hipMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind,
                            hipStream_t st);
hipError_t hipMemset(void *d, int v, size_t n);
hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t s);
hipError_t hipStreamQuery(hipStream_t s);
hipError_t hipStreamSynchronize(hipStream_t s);
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags);
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s);
hipError_t hipLaunchKernel(const void *host, dim3 grid, dim3 block, void **args, size_t shmem, hipStream_t s);
hipError_t hipLaunchCooperativeKernel(const void *host, dim3 grid, dim3 block, void **args, unsigned shmem,
                                      hipStream_t s);
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *data);

hipError_t hipMemcpy_spt(void *d, const void *s, size_t n, int kind) { return hipMemcpy(d, s, n, kind); }
hipError_t hipMemcpyAsync_spt(void *d, const void *s, size_t n, int kind, hipStream_t st) {
  return hipMemcpyAsync(d, s, n, kind, st);
}
hipError_t hipMemcpyToSymbol_spt(const void *sym, const void *src, size_t n, size_t off, int kind) {
  return hipMemcpyToSymbol(sym, src, n, off, kind);
}
hipError_t hipMemcpyFromSymbol_spt(void *dst, const void *sym, size_t n, size_t off, int kind) {
  return hipMemcpyFromSymbol(dst, sym, n, off, kind);
}
hipError_t hipMemcpyToSymbolAsync_spt(const void *sym, const void *src, size_t n, size_t off, int kind,
                                      hipStream_t s) {
  return hipMemcpyToSymbolAsync(sym, src, n, off, kind, s);
}
hipError_t hipMemcpyFromSymbolAsync_spt(void *dst, const void *sym, size_t n, size_t off, int kind,
                                        hipStream_t s) {
  return hipMemcpyFromSymbolAsync(dst, sym, n, off, kind, s);
}
hipError_t hipMemcpy2D_spt(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind) {
  return hipMemcpy2D(d, dp, s, sp, w, h, kind);
}
hipError_t hipMemcpy2DAsync_spt(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind,
                                hipStream_t st) {
  return hipMemcpy2DAsync(d, dp, s, sp, w, h, kind, st);
}
hipError_t hipMemset_spt(void *d, int v, size_t n) { return hipMemset(d, v, n); }
hipError_t hipMemsetAsync_spt(void *d, int v, size_t n, hipStream_t s) { return hipMemsetAsync(d, v, n, s); }
hipError_t hipStreamQuery_spt(hipStream_t s) { return hipStreamQuery(s); }
hipError_t hipStreamSynchronize_spt(hipStream_t s) { return hipStreamSynchronize(s); }
hipError_t hipStreamWaitEvent_spt(hipStream_t s, hipEvent_t e, unsigned flags) {
  return hipStreamWaitEvent(s, e, flags);
}
hipError_t hipEventRecord_spt(hipEvent_t e, hipStream_t s) { return hipEventRecord(e, s); }
hipError_t hipLaunchKernel_spt(const void *host, dim3 grid, dim3 block, void **args, size_t shmem, hipStream_t s) {
  return hipLaunchKernel(host, grid, block, args, shmem, s);
}
hipError_t hipLaunchCooperativeKernel_spt(const void *host, dim3 grid, dim3 block, void **args, unsigned shmem,
                                          hipStream_t s) {
  return hipLaunchCooperativeKernel(host, grid, block, args, shmem, s);
}
hipError_t hipLaunchHostFunc_spt(hipStream_t s, hipHostFn_t fn, void *data) { return hipLaunchHostFunc(s, fn, data); }
