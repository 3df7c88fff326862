/*
 * fake_cuda_abi.h - the CUDA driver ABI as the fake sees it: its own minimal definitions of the
 * handle, parameter and descriptor types (layouts follow the public headers; written from
 * scratch for hrr).  The test programs of apps/ use them too (they have no cuda.h; to them the
 * handles are opaque pointers).
 */
#ifndef FAKE_CUDA_ABI_H
#define FAKE_CUDA_ABI_H
#include <stddef.h>

/* ------------------------------------------------------------------------ */
/* ABI types (own minimal definitions; layouts follow the public headers)   */
/* ------------------------------------------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle; /* also CUipcEventHandle */
typedef unsigned long long cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct fc_ctx *CUcontext;
typedef struct fc_module *CUmodule;
typedef struct fc_func *CUfunction;
typedef struct fc_library *CUlibrary;
typedef struct fc_kernel *CUkernel;
typedef struct fc_stream *CUstream;
typedef struct fc_event *CUevent;
typedef void (*CUhostFn)(void *userData);
typedef struct fc_graph *CUgraph;
typedef struct fc_gexec *CUgraphExec;
typedef struct fc_nodeh *CUgraphNode;
typedef unsigned long long CUgraphConditionalHandle; /* a struct fc_cond * */

typedef struct {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out; /* CUgraphInstantiateResult */
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* Explicit graph construction. */
typedef struct {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType; /* CUmemorytype: 1 HOST, 2 DEVICE, 3 ARRAY, 4 UNIFIED */
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v1 */
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams;
  void **extra;
} CUDA_KERNEL_NODE_PARAMS_v1;
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v2 (= _v3) */
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
typedef struct {
  CUdeviceptr dst;
  size_t pitch;
  unsigned value, elementSize;
  size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct {
  CUhostFn fn;
  void *userData;
} CUDA_HOST_NODE_PARAMS;
typedef struct {
  int type; /* CUgraphNodeType */
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_KERNEL_NODE_PARAMS kernel;
    struct { int flags, reserved; CUcontext copyCtx; CUDA_MEMCPY3D copyParams; } memcpy;
    struct { CUDA_MEMSET_NODE_PARAMS p; CUcontext ctx; } memset;
    CUDA_HOST_NODE_PARAMS host;
    struct { CUgraph graph; } graph;
    struct { CUevent event; } event;
    struct {
      unsigned long long handle; /* CUgraphConditionalHandle */
      int type;                  /* CU_GRAPH_COND_TYPE_IF 0, WHILE 1, SWITCH 2 */
      unsigned size;
      CUgraph *phGraph_out;
      CUcontext ctx;
    } conditional;
  } u;
  long long reserved2;
} CUgraphNodeParams;
typedef struct {
  int result; /* CUgraphExecUpdateResult: 0 SUCCESS, 1 ERROR, 3 ERROR_NODE_TYPE_CHANGED */
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

typedef struct { char bytes[16]; } CUuuid;

typedef struct {
  int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
  int id;
} CUmemLocation;

typedef struct {
  int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
  int requestedHandleTypes; /* CUmemAllocationHandleType */
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct {
  CUmemLocation location;
  int flags; /* 0 none, 1 read, 3 read-write */
} CUmemAccessDesc;

typedef union {
  char pad[64];
  unsigned long long align_;
  int priority;
  int cooperative;
  struct { unsigned x, y, z; } clusterDim;
} CUlaunchAttributeValue;

typedef struct {
  int id;
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* ---- stream-ordered memory pools ---- */
typedef struct {
  int allocType, handleTypes;
  struct { int type, id; } location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;
typedef struct { size_t Width, Height; int Format; unsigned NumChannels; } CUDA_ARRAY_DESCRIPTOR;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } CUDA_ARRAY3D_DESCRIPTOR;
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
/* CUDA_MEMCPY3D: defined with the graph types above */
typedef struct {
  int resType; /* 0 ARRAY, 1 MIPMAPPED_ARRAY, 2 LINEAR, 3 PITCH2D */
  union {
    struct { void *hArray; } array;
    struct { void *hMipmappedArray; } mipmap;
    struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t sizeInBytes; } linear;
    struct { CUdeviceptr devPtr; int format; unsigned numChannels; size_t width, height, pitchInBytes; } pitch2D;
    int reserved[32];
  } res;
  unsigned flags;
} CUDA_RESOURCE_DESC;
/* Layout checks: each size is the real driver ABI's on x86-64. */
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp layout");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc layout");
_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout");
_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR) == 24, "CUDA_ARRAY_DESCRIPTOR layout");
_Static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR) == 40, "CUDA_ARRAY3D_DESCRIPTOR layout");
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D layout");
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D layout");
_Static_assert(sizeof(CUDA_RESOURCE_DESC) == 144, "CUDA_RESOURCE_DESC layout");

#endif
