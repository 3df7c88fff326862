/*
 * tma_app - Hopper TMA descriptors (tensor maps) through the driver API (linked with -lcuda):
 * a map encoded with cuTensorMapEncodeTiled and passed by value to a kernel (`tma_load`), the
 * same map after cuTensorMapReplaceAddress, that map copied to device memory and read through
 * a pointer (`tma_load_global`), an im2col map (cuTensorMapEncodeIm2col) by value, and the
 * replaced map in the parameters of a graph's kernel node (cuGraphAddKernelNode). Each kernel
 * copies the map's first n floats out. Prints one line per result, a function of the
 * data only, and "tma_app: OK" when every result matched what the host computed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_cuda_abi.h"

typedef struct { _Alignas(64) unsigned long long opaque[16]; } CUtensorMap;

CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);
CUresult cuCtxSynchronize(void);
CUresult cuTensorMapEncodeTiled(CUtensorMap *, int, unsigned, void *, const unsigned long long *,
                                const unsigned long long *, const unsigned *, const unsigned *, int, int, int, int);
CUresult cuTensorMapEncodeIm2col(CUtensorMap *, int, unsigned, void *, const unsigned long long *,
                                 const unsigned long long *, const int *, const int *, unsigned, unsigned,
                                 const unsigned *, int, int, int, int);
CUresult cuTensorMapReplaceAddress(CUtensorMap *, void *);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t);
CUresult cuStreamSynchronize(CUstream);
CUresult cuGraphCreate(CUgraph *, unsigned);
CUresult cuGraphAddKernelNode_v2(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuGraphDestroy(CUgraph);

#define CK(x)                                                              \
  do {                                                                     \
    CUresult r__ = (x);                                                    \
    if (r__) {                                                             \
      fprintf(stderr, "tma_app: %s failed: %d (line %d)\n", #x, r__, __LINE__); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

enum { N = 64, FLOAT32 = 7 };

static int failures;

/* Launch `f` with the map by value (or, with `dmap`, a pointer to it in device memory), read
   the n floats it wrote back and compare them with `want`. */
static void load_and_check(const char *what, CUfunction f, CUtensorMap *map, CUdeviceptr dmap,
                           CUdeviceptr out, const float *want) {
  int n = N;
  void *args[] = {dmap ? (void *)&dmap : (void *)map, &out, &n};
  CK(cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, NULL, args, NULL));
  float got[N];
  CK(cuMemcpyDtoH_v2(got, out, sizeof got));
  double sum = 0;
  for (int i = 0; i < N; i++) sum += got[i];
  int ok = !memcmp(got, want, sizeof got);
  failures += !ok;
  printf("%s: sum %.1f %s\n", what, sum, ok ? "ok" : "WRONG");
}

int main(void) {
  CUcontext ctx;
  CK(cuInit(0));
  int dev;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));

  float a[N], b[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = 1000.0f + (float)i;
  }
  CUdeviceptr da, db, out, dmap;
  CK(cuMemAlloc_v2(&da, sizeof a));
  CK(cuMemAlloc_v2(&db, sizeof b));
  CK(cuMemAlloc_v2(&out, sizeof a));
  CK(cuMemAlloc_v2(&dmap, sizeof(CUtensorMap)));
  CK(cuMemcpyHtoD_v2(da, a, sizeof a));
  CK(cuMemcpyHtoD_v2(db, b, sizeof b));

  CUmodule mod;
  CUfunction load, load_global;
  CK(cuModuleLoadData(&mod, ".entry tma_load\n.entry tma_load_global\n"));
  CK(cuModuleGetFunction(&load, mod, "tma_load"));
  CK(cuModuleGetFunction(&load_global, mod, "tma_load_global"));

  /* a 16 x 4 tile of floats, rows 64 bytes apart */
  CUtensorMap map;
  unsigned long long dims[2] = {16, 4}, strides[1] = {64};
  unsigned box[2] = {16, 4}, elem[2] = {1, 1};
  CK(cuTensorMapEncodeTiled(&map, FLOAT32, 2, (void *)(uintptr_t)da, dims, strides, box, elem, 0, 0, 0, 0));
  load_and_check("tiled", load, &map, 0, out, a);

  CK(cuTensorMapReplaceAddress(&map, (void *)(uintptr_t)db));
  load_and_check("replaced", load, &map, 0, out, b);

  CK(cuMemcpyHtoD_v2(dmap, &map, sizeof map));
  load_and_check("in device memory", load_global, NULL, dmap, out, b);

  /* an 8 x 2 x 4 (channels x width x images) im2col map over `a` */
  CUtensorMap cols;
  unsigned long long dims3[3] = {8, 2, 4}, strides3[2] = {32, 64};
  int lower[1] = {0}, upper[1] = {0};
  unsigned elem3[3] = {1, 1, 1};
  CK(cuTensorMapEncodeIm2col(&cols, FLOAT32, 3, (void *)(uintptr_t)da, dims3, strides3, lower, upper, 8, 8,
                             elem3, 0, 0, 0, 0));
  load_and_check("im2col", load, &cols, 0, out, a);

  /* the replaced map in a graph's kernel node, launched twice */
  CUstream s;
  CK(cuStreamCreate(&s, 0));
  CUgraph g;
  CK(cuGraphCreate(&g, 0));
  CK(cuMemsetD8_v2(out, 0, sizeof a));
  int n = N;
  void *node_args[] = {&map, &out, &n};
  CUDA_KERNEL_NODE_PARAMS kp = {0};
  kp.func = load;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = N;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = node_args;
  CUgraphNode node;
  CK(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &kp));
  CUgraphExec e;
  CK(cuGraphInstantiateWithFlags(&e, g, 0));
  CK(cuGraphLaunch(e, s));
  CK(cuGraphLaunch(e, s));
  CK(cuStreamSynchronize(s));
  {
    float got[N];
    CK(cuMemcpyDtoH_v2(got, out, sizeof got));
    int ok = !memcmp(got, b, sizeof got);
    failures += !ok;
    printf("graph node: %s\n", ok ? "ok" : "WRONG");
  }
  CK(cuGraphExecDestroy(e));
  CK(cuGraphDestroy(g));

  CK(cuCtxSynchronize());
  CK(cuMemFree_v2(dmap));
  CK(cuMemFree_v2(out));
  CK(cuMemFree_v2(db));
  CK(cuMemFree_v2(da));
  if (failures) return 1;
  printf("tma_app: OK\n");
  return 0;
}
