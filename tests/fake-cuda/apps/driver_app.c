/*
 * driver_app - reaches the CUDA driver the way cudart does since CUDA 11.3:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2") once, ask that for
 * "cuGetProcAddress", then fetch every other entry point through it by base
 * name with cudaVersion 12000 and flags 0.
 *
 * usage: driver_app [crash|abort|noisy|fork|nocuda|threads|graph|loop N]
 */
#include "workload.h"

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, int *);
static gpa_v2_fn g_gpa;

static void get(void **slot, const char *base) {
  int status = -1;
  CUresult r = g_gpa(base, slot, 12000, 0, &status);
  if (r != 0) die_call(base, r);
  if (*slot == NULL || status != 0) {
    fprintf(stderr, "%s: cuGetProcAddress(%s) failed: status %d\n", g_prog, base, status);
    exit(1);
  }
}
#define GET(field, base) get((void **)&g_cu.field, base)

static void resolve(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s: dlopen(libcuda.so.1) failed: %s\n", g_prog, dlerror());
    exit(1);
  }
  gpa_v2_fn first = (gpa_v2_fn)dlsym(h, "cuGetProcAddress_v2");
  if (!first) {
    fprintf(stderr, "%s: dlsym(cuGetProcAddress_v2) failed\n", g_prog);
    exit(1);
  }
  int status = -1;
  void *p = NULL;
  CUresult r = first("cuGetProcAddress", &p, 12000, 0, &status);
  if (r != 0 || !p) die_call("cuGetProcAddress(cuGetProcAddress)", r ? r : -1);
  g_gpa = (gpa_v2_fn)p;
  g_cu.PrimaryContextPrivately = (CUcontext(*)(CUdevice))dlsym(h, "fakeCudaPrimaryContext");

  GET(Init, "cuInit");
  GET(DriverGetVersion, "cuDriverGetVersion");
  GET(DeviceGetCount, "cuDeviceGetCount");
  GET(DeviceGet, "cuDeviceGet");
  GET(DeviceGetName, "cuDeviceGetName");
  GET(DeviceGetAttribute, "cuDeviceGetAttribute");
  GET(DeviceTotalMem, "cuDeviceTotalMem");
  GET(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  GET(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
  GET(CtxSetCurrent, "cuCtxSetCurrent");
  GET(CtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  GET(MemcpyPeer, "cuMemcpyPeer");
  GET(MemcpyPeerAsync, "cuMemcpyPeerAsync");
  GET(CtxGetCurrent, "cuCtxGetCurrent");
  GET(CtxSynchronize, "cuCtxSynchronize");
  GET(CtxSetLimit, "cuCtxSetLimit");
  GET(CtxGetLimit, "cuCtxGetLimit");
  GET(CtxSetCacheConfig, "cuCtxSetCacheConfig");
  GET(ModuleGetLoadingMode, "cuModuleGetLoadingMode");
  GET(LibraryLoadData, "cuLibraryLoadData");
  GET(LibraryGetKernel, "cuLibraryGetKernel");
  GET(LibraryGetModule, "cuLibraryGetModule");
  GET(LibraryGetGlobal, "cuLibraryGetGlobal");
  GET(LibraryUnload, "cuLibraryUnload");
  GET(KernelGetFunction, "cuKernelGetFunction");
  GET(GetExportTable, "cuGetExportTable");
  GET(FuncSetAttribute, "cuFuncSetAttribute");
  GET(ModuleEnumerateFunctions, "cuModuleEnumerateFunctions");
  GET(LibraryEnumerateKernels, "cuLibraryEnumerateKernels");
  GET(ModuleLoadData, "cuModuleLoadData");
  GET(ModuleGetFunction, "cuModuleGetFunction");
  GET(ModuleGetGlobal, "cuModuleGetGlobal");
  GET(ModuleUnload, "cuModuleUnload");
  GET(MemAlloc, "cuMemAlloc");
  GET(MemFree, "cuMemFree");
  GET(MemAllocHost, "cuMemAllocHost");
  GET(MemHostAlloc, "cuMemHostAlloc");
  GET(MemFreeHost, "cuMemFreeHost");
  GET(MemcpyHtoD, "cuMemcpyHtoD");
  GET(MemcpyDtoH, "cuMemcpyDtoH");
  GET(MemcpyHtoDAsync, "cuMemcpyHtoDAsync");
  GET(MemcpyDtoHAsync, "cuMemcpyDtoHAsync");
  GET(MemsetD8, "cuMemsetD8");
  GET(MemsetD32Async, "cuMemsetD32Async");
  GET(PointerGetAttribute, "cuPointerGetAttribute");
  GET(LaunchKernel, "cuLaunchKernel");
  GET(LaunchKernelAlt, "cuLaunchKernel");
  GET(LaunchKernelEx, "cuLaunchKernelEx");
  GET(LaunchHostFunc, "cuLaunchHostFunc");
  GET(StreamCreate, "cuStreamCreate");
  GET(StreamDestroy, "cuStreamDestroy");
  GET(StreamSynchronize, "cuStreamSynchronize");
  GET(StreamWaitEvent, "cuStreamWaitEvent");
  GET(EventCreate, "cuEventCreate");
  GET(EventRecord, "cuEventRecord");
  GET(EventSynchronize, "cuEventSynchronize");
  GET(EventElapsedTime, "cuEventElapsedTime");
  GET(EventDestroy, "cuEventDestroy");
  GET(MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  GET(MemAddressReserve, "cuMemAddressReserve");
  GET(MemAddressFree, "cuMemAddressFree");
  GET(MemCreate, "cuMemCreate");
  GET(MemRelease, "cuMemRelease");
  GET(MemMap, "cuMemMap");
  GET(MemUnmap, "cuMemUnmap");
  GET(MemSetAccess, "cuMemSetAccess");
  GET(StreamBeginCapture, "cuStreamBeginCapture");
  GET(StreamEndCapture, "cuStreamEndCapture");
  GET(GraphCreate, "cuGraphCreate");
  GET(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  GET(GraphInstantiateWithParams, "cuGraphInstantiateWithParams");
  GET(MemAllocAsync, "cuMemAllocAsync");
  GET(MemFreeAsync, "cuMemFreeAsync");
  GET(GraphAddMemAllocNode, "cuGraphAddMemAllocNode");
  GET(GraphAddMemFreeNode, "cuGraphAddMemFreeNode");
  GET(GraphLaunch, "cuGraphLaunch");
  GET(GraphDestroy, "cuGraphDestroy");
  GET(GraphExecDestroy, "cuGraphExecDestroy");
  GET(GraphAddKernelNode, "cuGraphAddKernelNode"); /* _v2 at 12000 */
  GET(GraphAddMemcpyNode, "cuGraphAddMemcpyNode");
  GET(GraphAddHostNode, "cuGraphAddHostNode");
  GET(GraphAddEmptyNode, "cuGraphAddEmptyNode");
  GET(GraphAddEventRecordNode, "cuGraphAddEventRecordNode");
  GET(GraphAddChildGraphNode, "cuGraphAddChildGraphNode");
  GET(GraphAddDependencies, "cuGraphAddDependencies");
  GET(GraphKernelNodeSetParams, "cuGraphKernelNodeSetParams");
  GET(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams");
  GET(GraphExecUpdate, "cuGraphExecUpdate");
  GET(GraphUpload, "cuGraphUpload");
  GET(GraphClone, "cuGraphClone");
  status = -1;
  r = g_gpa("cuGraphConditionalHandleCreate", (void **)&g_cu.GraphConditionalHandleCreate, 12030, 0, &status);
  if (r != 0 || !g_cu.GraphConditionalHandleCreate || status != 0)
    die_call("cuGetProcAddress(cuGraphConditionalHandleCreate, 12030)", r ? r : -1);
  /* cuGraphAddNode with edge data (cuGraphAddNode_v2) needs version 12030 */
  status = -1;
  r = g_gpa("cuGraphAddNode", (void **)&g_cu.GraphAddNode, 12030, 0, &status);
  if (r != 0 || !g_cu.GraphAddNode || status != 0) die_call("cuGetProcAddress(cuGraphAddNode, 12030)", r ? r : -1);
  /* the capture calls with edge data (CUDA 12.3) */
  static const struct { void **slot; const char *base; } v12030[] = {
      {(void **)&g_cu.StreamGetCaptureInfo, "cuStreamGetCaptureInfo"},
      {(void **)&g_cu.StreamUpdateCaptureDependencies, "cuStreamUpdateCaptureDependencies"},
      {(void **)&g_cu.StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph"},
  };
  for (size_t i = 0; i < sizeof v12030 / sizeof v12030[0]; i++) {
    status = -1;
    r = g_gpa(v12030[i].base, v12030[i].slot, 12030, 0, &status);
    if (r != 0 || !*v12030[i].slot || status != 0) die_call(v12030[i].base, r ? r : -1);
  }
  /* CUDA 11's cuGraphInstantiate (cuGraphInstantiate_v2); version 12000 would give WithFlags */
  status = -1;
  r = g_gpa("cuGraphInstantiate", (void **)&g_cu.GraphInstantiateV2, 11000, 0, &status);
  if (r != 0 || !g_cu.GraphInstantiateV2 || status != 0) die_call("cuGetProcAddress(cuGraphInstantiate, 11000)", r ? r : -1);
}

int main(int argc, char **argv) { return app_main(argc, argv, "driver_app", resolve); }
