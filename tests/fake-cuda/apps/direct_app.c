/*
 * direct_app - the same workload as driver_app, reaching the driver the way
 * PyTorch and older programs do: by the exported, versioned symbol names.
 * cuInit and cuDriverGetVersion are called through the link-time binding
 * (the binary is linked with -lcuda); everything else is dlsym()ed from
 * dlopen("libcuda.so.1") by its versioned export name (cuMemAlloc_v2, ...).
 * The `extra`-form launch goes through cuLaunchKernel_ptsz.
 *
 * usage: direct_app [crash|abort|fork|nocuda|threads|graph|loop N]
 */
#include "workload.h"

/* link-time imports from libcuda.so.1 */
CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *version);

static void *g_h;

static void sym(void **slot, const char *name) {
  *slot = dlsym(g_h, name);
  if (!*slot) {
    fprintf(stderr, "%s: dlsym(%s) failed\n", g_prog, name);
    exit(1);
  }
}
#define SYM(field, name) sym((void **)&g_cu.field, name)

static void resolve(void) {
  g_h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_h) {
    fprintf(stderr, "%s: dlopen(libcuda.so.1) failed: %s\n", g_prog, dlerror());
    exit(1);
  }
  g_cu.Init = cuInit;
  g_cu.DriverGetVersion = cuDriverGetVersion;
  SYM(DeviceGetCount, "cuDeviceGetCount");
  SYM(DeviceGet, "cuDeviceGet");
  SYM(DeviceGetName, "cuDeviceGetName");
  SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(DeviceTotalMem, "cuDeviceTotalMem_v2");
  SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  SYM(CtxSetCurrent, "cuCtxSetCurrent");
  SYM(CtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  SYM(MemcpyPeer, "cuMemcpyPeer");
  SYM(MemcpyPeerAsync, "cuMemcpyPeerAsync");
  SYM(CtxGetCurrent, "cuCtxGetCurrent");
  SYM(CtxSynchronize, "cuCtxSynchronize");
  SYM(CtxSetLimit, "cuCtxSetLimit");
  SYM(CtxGetLimit, "cuCtxGetLimit");
  SYM(CtxSetCacheConfig, "cuCtxSetCacheConfig");
  SYM(ModuleGetLoadingMode, "cuModuleGetLoadingMode");
  SYM(LibraryLoadData, "cuLibraryLoadData");
  SYM(LibraryGetKernel, "cuLibraryGetKernel");
  SYM(LibraryGetModule, "cuLibraryGetModule");
  SYM(LibraryGetGlobal, "cuLibraryGetGlobal");
  SYM(LibraryUnload, "cuLibraryUnload");
  SYM(KernelGetFunction, "cuKernelGetFunction");
  SYM(GetExportTable, "cuGetExportTable");
  SYM(FuncSetAttribute, "cuFuncSetAttribute");
  SYM(ModuleEnumerateFunctions, "cuModuleEnumerateFunctions");
  SYM(LibraryEnumerateKernels, "cuLibraryEnumerateKernels");
  SYM(ModuleLoadData, "cuModuleLoadData");
  SYM(ModuleGetFunction, "cuModuleGetFunction");
  SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2");
  SYM(ModuleUnload, "cuModuleUnload");
  SYM(MemAlloc, "cuMemAlloc_v2");
  SYM(MemFree, "cuMemFree_v2");
  SYM(MemAllocHost, "cuMemAllocHost_v2");
  SYM(MemFreeHost, "cuMemFreeHost");
  SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  SYM(MemsetD8, "cuMemsetD8_v2");
  SYM(MemsetD32Async, "cuMemsetD32Async");
  SYM(PointerGetAttribute, "cuPointerGetAttribute");
  SYM(LaunchKernel, "cuLaunchKernel");
  SYM(LaunchKernelAlt, "cuLaunchKernel_ptsz");
  SYM(LaunchKernelEx, "cuLaunchKernelEx");
  SYM(LaunchHostFunc, "cuLaunchHostFunc");
  SYM(StreamCreate, "cuStreamCreate");
  SYM(StreamDestroy, "cuStreamDestroy_v2");
  SYM(StreamSynchronize, "cuStreamSynchronize");
  SYM(StreamWaitEvent, "cuStreamWaitEvent");
  SYM(EventCreate, "cuEventCreate");
  SYM(EventRecord, "cuEventRecord");
  SYM(EventSynchronize, "cuEventSynchronize");
  SYM(EventElapsedTime, "cuEventElapsedTime_v2");
  SYM(EventDestroy, "cuEventDestroy_v2");
  SYM(MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  SYM(MemAddressReserve, "cuMemAddressReserve");
  SYM(MemAddressFree, "cuMemAddressFree");
  SYM(MemCreate, "cuMemCreate");
  SYM(MemRelease, "cuMemRelease");
  SYM(MemMap, "cuMemMap");
  SYM(MemUnmap, "cuMemUnmap");
  SYM(MemSetAccess, "cuMemSetAccess");
  SYM(StreamBeginCapture, "cuStreamBeginCapture_v2");
  SYM(StreamEndCapture, "cuStreamEndCapture");
  SYM(GraphCreate, "cuGraphCreate");
  SYM(GraphAddKernelNode, "cuGraphAddKernelNode_v2");
  SYM(GraphAddMemcpyNode, "cuGraphAddMemcpyNode");
  SYM(GraphAddHostNode, "cuGraphAddHostNode");
  SYM(GraphAddEmptyNode, "cuGraphAddEmptyNode");
  SYM(GraphAddEventRecordNode, "cuGraphAddEventRecordNode");
  SYM(GraphAddChildGraphNode, "cuGraphAddChildGraphNode");
  SYM(GraphAddNode, "cuGraphAddNode_v2");
  SYM(GraphAddDependencies, "cuGraphAddDependencies");
  SYM(GraphKernelNodeSetParams, "cuGraphKernelNodeSetParams_v2");
  SYM(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
  SYM(GraphExecUpdate, "cuGraphExecUpdate_v2");
  SYM(GraphUpload, "cuGraphUpload");
  SYM(GraphClone, "cuGraphClone");
  SYM(GraphConditionalHandleCreate, "cuGraphConditionalHandleCreate");
  SYM(StreamGetCaptureInfo, "cuStreamGetCaptureInfo_v3");
  SYM(StreamUpdateCaptureDependencies, "cuStreamUpdateCaptureDependencies_v2");
  SYM(StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph");
  SYM(GraphInstantiateV2, "cuGraphInstantiate_v2");
  SYM(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  SYM(GraphInstantiateWithParams, "cuGraphInstantiateWithParams");
  SYM(MemAllocAsync, "cuMemAllocAsync");
  SYM(MemFreeAsync, "cuMemFreeAsync");
  SYM(GraphAddMemAllocNode, "cuGraphAddMemAllocNode");
  SYM(GraphAddMemFreeNode, "cuGraphAddMemFreeNode");
  SYM(GraphLaunch, "cuGraphLaunch");
  SYM(GraphDestroy, "cuGraphDestroy");
  SYM(GraphExecDestroy, "cuGraphExecDestroy");
}

int main(int argc, char **argv) { return app_main(argc, argv, "direct_app", resolve); }
