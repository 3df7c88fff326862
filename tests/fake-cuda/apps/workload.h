/*
 * workload.h - the CUDA driver workload shared by driver_app and direct_app.
 *
 * Each app fills a `struct cu_api` its own way (cuGetProcAddress, or dlsym of
 * the versioned export names) and then calls app_main().  Everything that is
 * printed on stdout is a function of the computed data only (never of
 * addresses or timings), so captured, replayed and plain runs can be
 * compared line by line.
 */
#ifndef HRR_FAKE_CUDA_WORKLOAD_H
#define HRR_FAKE_CUDA_WORKLOAD_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { char bytes[16]; } CUuuid;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef void (*CUhostFn)(void *);
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* explicit graph construction (the `graph_nodes` mode) */
typedef struct {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType; /* 1 HOST, 2 DEVICE */
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
typedef struct { /* CUDA_KERNEL_NODE_PARAMS_v2 */
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
typedef struct { /* CUgraphNodeParams (CUDA 12.2+) */
  int type;
  int reserved0[3];
  union {
    long long reserved1[29];
    struct { CUDA_MEMSET_NODE_PARAMS p; CUcontext ctx; } memset;
    struct {
      unsigned long long handle;
      int type; /* CU_GRAPH_COND_TYPE_IF */
      unsigned size;
      CUgraph *phGraph_out;
      CUcontext ctx;
    } conditional;
  } u;
  long long reserved2;
} CUgraphNodeParams;

typedef struct { int type; int id; } CUmemLocation;
typedef struct {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef union {
  char pad[64];
  unsigned long long align_;
  int priority;
} CUlaunchAttributeValue;
typedef struct {
  int id;
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

struct cu_api {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSynchronize)(void);
  CUresult (*CtxSetLimit)(int, size_t);
  CUresult (*CtxGetLimit)(size_t *, int);
  CUresult (*CtxSetCacheConfig)(int);
  CUresult (*ModuleGetLoadingMode)(int *);
  CUresult (*LibraryLoadData)(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned);
  CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
  CUresult (*LibraryGetModule)(CUmodule *, CUlibrary);
  CUresult (*LibraryGetGlobal)(CUdeviceptr *, size_t *, CUlibrary, const char *);
  CUresult (*LibraryUnload)(CUlibrary);
  CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
  CUresult (*GetExportTable)(const void **, const CUuuid *);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*ModuleEnumerateFunctions)(CUfunction *, unsigned, CUmodule);
  CUresult (*LibraryEnumerateKernels)(CUkernel *, unsigned, CUlibrary);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemAllocHost)(void **, size_t);
  CUresult (*MemFreeHost)(void *);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
  launch_fn LaunchKernel;
  launch_fn LaunchKernelAlt; /* used for the extra-form launch (cuLaunchKernel_ptsz in direct_app) */
  CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
  CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
  CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*MemAddressFree)(CUdeviceptr, size_t);
  CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
  CUresult (*MemRelease)(CUmemGenericAllocationHandle);
  CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*MemUnmap)(CUdeviceptr, size_t);
  CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
  /* stream capture and graphs (the `graph` mode) */
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphCreate)(CUgraph *, unsigned);
  CUresult (*GraphInstantiateV2)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphInstantiateWithParams)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphDestroy)(CUgraph);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*GraphAddMemAllocNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, void *);
  CUresult (*GraphAddMemFreeNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr);
  /* explicit construction (the `graph_nodes` mode) */
  CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*GraphAddMemcpyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext);
  CUresult (*GraphAddHostNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_HOST_NODE_PARAMS *);
  CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
  CUresult (*GraphAddEventRecordNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUevent);
  CUresult (*GraphAddChildGraphNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
  CUresult (*GraphAddNode)(CUgraphNode *, CUgraph, const CUgraphNode *, const void *, size_t, CUgraphNodeParams *);
  CUresult (*GraphAddDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
  CUresult (*GraphKernelNodeSetParams)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, void *);
  CUresult (*GraphUpload)(CUgraphExec, CUstream);
  CUresult (*GraphClone)(CUgraph *, CUgraph);
  CUresult (*GraphConditionalHandleCreate)(unsigned long long *, CUgraph, CUcontext, unsigned, unsigned);
};

static const char *g_prog = "app";
static struct cu_api g_cu;

enum { MODE_NORMAL, MODE_CRASH, MODE_ABORT, MODE_FORK, MODE_NOCUDA, MODE_THREADS, MODE_GRAPH, MODE_HANG, MODE_FAULT,
       MODE_HIDDEN, MODE_GRAPH_NODES, MODE_GRAPH_COND, MODE_NOISY, MODE_GRAPH_CAPTURE, MODE_LAUNCHES };
struct opts {
  int mode;
  long loops;
};
static struct opts g_opts = {MODE_NORMAL, 1};

static void die_call(const char *call, CUresult r) {
  fprintf(stderr, "%s: %s failed: %d\n", g_prog, call, r);
  fflush(stderr);
  exit(1);
}
#define CK(call, name)                         \
  do {                                         \
    CUresult r__ = (call);                     \
    if (r__ != 0) die_call(name, r__);         \
  } while (0)

/* ---- output ---- */

struct outbuf {
  char text[4096];
  size_t len;
  const char *prefix;
};
static void outf(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct outbuf *o, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(o->text + o->len, sizeof o->text - o->len, "%s", o->prefix ? o->prefix : "");
  if (n > 0) o->len += (size_t)n;
  va_start(ap, fmt);
  n = vsnprintf(o->text + o->len, sizeof o->text - o->len, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
  if (o->len < sizeof o->text - 1) o->text[o->len++] = '\n';
  o->text[o->len] = 0;
}
static void outflush(struct outbuf *o) {
  fputs(o->text, stdout);
  fflush(stdout);
  o->len = 0;
  o->text[0] = 0;
}

static unsigned long long fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  unsigned long long h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
static double fsum(const float *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s;
}
static unsigned long long usum(const unsigned *v, size_t n) {
  unsigned long long s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s;
}

/* ---- code images ---- */

/* Payload of the fake fatbin: text naming the kernels and globals. */
static const char k_lib_text[] =
    "// hrr fake-cuda fatbin payload\n"
    ".entry axpy\n"
    ".entry fill_u32\n"
    ".entry gather\n"
    ".entry add_global\n"
    ".entry spin\n"
    ".entry fault\n"
    ".entry noisy\n"
    ".entry idle\n"
    ".global g_bias 4\n";

/* What a module built from PTX looks like to cuModuleLoadData. */
static const char k_ptx_text[] =
    "//\n// Generated by the hrr fake toolchain\n//\n"
    ".version 8.0\n.target sm_90\n.address_size 64\n\n"
    ".visible .entry axpy(\n"
    "\t.param .f32 axpy_param_0,\n"
    "\t.param .u64 axpy_param_1,\n"
    "\t.param .u64 axpy_param_2,\n"
    "\t.param .u32 axpy_param_3\n"
    ")\n{\n\tret;\n}\n";

struct fatbin_wrapper {
  int magic;
  int version;
  const void *data;
  void *unused;
};

/* Build a fatbin (16-byte header + payload padded to 8 bytes) in buf. */
static size_t make_fatbin(unsigned char *buf, size_t cap, const char *payload) {
  size_t plen = strlen(payload) + 1, fat = (plen + 7) & ~(size_t)7;
  uint32_t magic = 0xBA55ED50u;
  uint16_t version = 1, hsize = 16;
  uint64_t fsize = fat;
  if (16 + fat > cap) return 0;
  memset(buf, 0, 16 + fat);
  memcpy(buf, &magic, 4);
  memcpy(buf + 4, &version, 2);
  memcpy(buf + 6, &hsize, 2);
  memcpy(buf + 8, &fsize, 8);
  memcpy(buf + 16, payload, plen);
  return 16 + fat;
}

/* ---- the workload ---- */

#define N_ELEMS 4096
#define BLOCK 256

static void host_cb(void *arg) { ++*(int *)arg; }

static void workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  const unsigned grid = (N_ELEMS + BLOCK - 1) / BLOCK;
  const long loops = g_opts.loops;
  CUdevice dev;
  CUcontext ctx, cur;
  int ver = 0, count = 0, major = 0, minor = 0, sms = 0, lmode = 0;
  size_t total = 0;
  char name[64];

  /* Like cudart: the version is asked before cuInit (a recorder opens its archive then). */
  CK(cu->DriverGetVersion(&ver), "cuDriverGetVersion");
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGetCount(&count), "cuDeviceGetCount");
  CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  CK(cu->DeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  CK(cu->DeviceGetAttribute(&major, 75, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceGetAttribute(&minor, 76, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceGetAttribute(&sms, 16, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
  CK(cu->CtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur != ctx) die_call("cuCtxGetCurrent (wrong context)", -1);
  CK(cu->ModuleGetLoadingMode(&lmode), "cuModuleGetLoadingMode");
  /* a context limit (the device-side malloc heap), as programs using device `new` set it */
  size_t heap = 0;
  CK(cu->CtxSetLimit(2, (size_t)64 << 20), "cuCtxSetLimit");
  CK(cu->CtxGetLimit(&heap, 2), "cuCtxGetLimit");
  if (heap != (size_t)64 << 20) die_call("cuCtxGetLimit (limit not set)", -1);
  CK(cu->CtxSetCacheConfig(1 /* PREFER_SHARED */), "cuCtxSetCacheConfig");
  outf(out, "device name=\"%s\" cc=%d.%d sms=%d mem=%zu driver=%d count=%d", name, major, minor, sms, total, ver,
       count);

  /* code: a library from a fatbin wrapper (what cudart does), and a PTX module */
  unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  struct fatbin_wrapper wrapper = {0x466243B1, 1, fatbin, NULL};
  CUlibrary lib;
  CUkernel k_axpy, k_fill, k_gather, k_addg;
  CUfunction f_axpy, f_fill, f_gather, f_mod_axpy;
  CUmodule mod, lmod;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_gather, lib, "gather"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_addg, lib, "add_global"), "cuLibraryGetKernel");
  CK(cu->KernelGetFunction(&f_axpy, k_axpy), "cuKernelGetFunction");
  CK(cu->KernelGetFunction(&f_fill, k_fill), "cuKernelGetFunction");
  CK(cu->KernelGetFunction(&f_gather, k_gather), "cuKernelGetFunction");
  CK(cu->ModuleLoadData(&mod, k_ptx_text), "cuModuleLoadData");
  CK(cu->ModuleGetFunction(&f_mod_axpy, mod, "axpy"), "cuModuleGetFunction");
  (void)f_axpy;

  /* x, y */
  float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float)), *hr = malloc(n * sizeof(float));
  if (!hx || !hy || !hr) die_call("malloc", -1);
  for (int i = 0; i < n; i++) {
    hx[i] = (float)(i % 97) * 0.25f;
    hy[i] = (float)(i % 13) - 6.0f;
  }
  CUdeviceptr x, y;
  CK(cu->MemAlloc(&x, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(x, hx, n * sizeof(float)), "cuMemcpyHtoD");
  CK(cu->MemcpyHtoD(y, hy, n * sizeof(float)), "cuMemcpyHtoD");

  /* axpy, kernelParams form, on the CUkernel handle (as cudart launches) */
  float a = 2.0f;
  void *axpy_params[] = {&a, &x, &y, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel((CUfunction)k_axpy, grid, 1, 1, BLOCK, 1, 1, 0, NULL, axpy_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "axpy_kparams sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  if (g_opts.mode == MODE_HANG || g_opts.mode == MODE_FAULT) {
    /* A kernel that never finishes (or faults), then the wait that shows it. */
    CUkernel k_bad;
    const char *bad = g_opts.mode == MODE_HANG ? "spin" : "fault";
    CK(cu->LibraryGetKernel(&k_bad, lib, bad), "cuLibraryGetKernel");
    CK(cu->LaunchKernel((CUfunction)k_bad, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
    outf(out, "launched %s", bad);
    outflush(out);
    CK(cu->CtxSynchronize(), "cuCtxSynchronize");
  }
  if (g_opts.mode == MODE_NOISY) {
    /* A kernel whose output is half the program's own nondeterminism (the fake's `noisy`
       writes a value new at every launch into the second half), copied back. */
    CUkernel k_noisy;
    CUdeviceptr nz;
    unsigned hn[256];
    unsigned long long nn = 256;
    CK(cu->LibraryGetKernel(&k_noisy, lib, "noisy"), "cuLibraryGetKernel");
    CK(cu->MemAlloc(&nz, sizeof hn), "cuMemAlloc");
    void *noisy_params[] = {&nz, &nn};
    CK(cu->LaunchKernel((CUfunction)k_noisy, 1, 1, 1, 256, 1, 1, 0, NULL, noisy_params, NULL), "cuLaunchKernel");
    CK(cu->MemcpyDtoH(hn, nz, sizeof hn), "cuMemcpyDtoH");
    outf(out, "noisy first=%u last=%u", hn[1], hn[255]);
    CK(cu->MemFree(nz), "cuMemFree");
  }
  if (g_opts.mode == MODE_CRASH || g_opts.mode == MODE_ABORT) {
    outflush(out);
    if (g_opts.mode == MODE_CRASH) kill(getpid(), SIGKILL);
    abort();
  }

  /* axpy again, `extra` packed-buffer form, on the module's CUfunction */
  unsigned char pbuf[32];
  float a2 = 0.5f;
  memset(pbuf, 0, sizeof pbuf);
  memcpy(pbuf + 0, &a2, 4);
  memcpy(pbuf + 8, &x, 8);
  memcpy(pbuf + 16, &y, 8);
  memcpy(pbuf + 24, &n, 4);
  size_t pbuf_size = sizeof pbuf;
  void *extra[] = {(void *)1, pbuf, (void *)2, &pbuf_size, (void *)0};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernelAlt(f_mod_axpy, grid, 1, 1, BLOCK, 1, 1, 0, NULL, NULL, extra), "cuLaunchKernel(extra)");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "axpy_extra sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  /* a stream: memset, async H2D from pinned memory, fill_u32 via cuLaunchKernelEx, async D2H */
  CUstream s;
  CUevent e0, e1;
  CUdeviceptr z;
  unsigned *hz;
  int hostfn_calls = 0;
  float ms = -1.0f;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CK(cu->EventCreate(&e0, 0), "cuEventCreate");
  CK(cu->EventCreate(&e1, 0), "cuEventCreate");
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemAllocHost((void **)&hz, n * sizeof(unsigned)), "cuMemAllocHost");
  for (int i = 0; i < n; i++) hz[i] = (unsigned)i * 3u + 1u;
  CK(cu->EventRecord(e0, s), "cuEventRecord");
  CK(cu->MemsetD32Async(z, 0xDEADBEEFu, n, s), "cuMemsetD32Async");
  CK(cu->MemcpyHtoDAsync(z, hz, 1024 * sizeof(unsigned), s), "cuMemcpyHtoDAsync");
  CUdeviceptr zp = z + 2048 * sizeof(unsigned);
  unsigned fv = 0x01020304u;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&zp, &fv, &fcount};
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = 8; /* CU_LAUNCH_ATTRIBUTE_PRIORITY */
  attr.value.priority = 0;
  CUlaunchConfig cfg = {4, 1, 1, BLOCK, 1, 1, 0, s, &attr, 1};
  for (long l = 0; l < loops; l++) CK(cu->LaunchKernelEx(&cfg, f_fill, fill_params, NULL), "cuLaunchKernelEx");
  CK(cu->MemcpyDtoHAsync(hz, z, n * sizeof(unsigned), s), "cuMemcpyDtoHAsync");
  CK(cu->EventRecord(e1, s), "cuEventRecord");
  CK(cu->LaunchHostFunc(s, host_cb, &hostfn_calls), "cuLaunchHostFunc");
  CK(cu->StreamWaitEvent(s, e1, 0), "cuStreamWaitEvent");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->EventSynchronize(e1), "cuEventSynchronize");
  CK(cu->EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  outf(out, "stream_fill sum=%llu fnv=%016llx hostfn=%d", usum(hz, n), fnv1a(hz, n * sizeof(unsigned)),
       hostfn_calls);

  /* gather: a table of device pointers, stored in device memory, chased by the kernel */
  CUdeviceptr table, gout;
  CUdeviceptr *ht = malloc(n * sizeof(CUdeviceptr));
  if (!ht) die_call("malloc", -1);
  for (int i = 0; i < n; i++) ht[i] = y + (CUdeviceptr)((((unsigned)i * 7u) + 3u) % (unsigned)n) * sizeof(float);
  CK(cu->MemAlloc(&table, n * sizeof(CUdeviceptr)), "cuMemAlloc");
  CK(cu->MemAlloc(&gout, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(table, ht, n * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
  void *gather_params[] = {&table, &gout, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel(f_gather, grid, 1, 1, BLOCK, 1, 1, 0, NULL, gather_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, gout, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "gather sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  /* a __device__ global: find it two ways, set it, use it */
  CUdeviceptr gb, gb2;
  size_t gbs = 0, gbs2 = 0;
  CK(cu->LibraryGetModule(&lmod, lib), "cuLibraryGetModule");
  CK(cu->ModuleGetGlobal(&gb, &gbs, lmod, "g_bias"), "cuModuleGetGlobal");
  CK(cu->LibraryGetGlobal(&gb2, &gbs2, lib, "g_bias"), "cuLibraryGetGlobal");
  if (gb != gb2 || gbs != 4 || gbs2 != 4) die_call("cuLibraryGetGlobal (mismatch)", -1);
  float bias = 1.5f;
  CK(cu->MemcpyHtoD(gb, &bias, sizeof bias), "cuMemcpyHtoD");
  void *addg_params[] = {&y, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel((CUfunction)k_addg, grid, 1, 1, BLOCK, 1, 1, 0, NULL, addg_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "add_global sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  unsigned mt_dev = 0, mt_host = 0;
  CK(cu->PointerGetAttribute(&mt_dev, 2, x), "cuPointerGetAttribute");
  CK(cu->PointerGetAttribute(&mt_host, 2, (CUdeviceptr)(uintptr_t)hz), "cuPointerGetAttribute");
  outf(out, "ptr_attr x=%u pinned=%u", mt_dev, mt_host);

  /* VMM: reserve 4 MiB, back the first 2 MiB, use it, tear it down */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
  prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
  prop.location.id = dev;
  size_t gran = 0;
  CK(cu->MemGetAllocationGranularity(&gran, &prop, 0), "cuMemGetAllocationGranularity");
  CUdeviceptr va;
  CUmemGenericAllocationHandle mh;
  CK(cu->MemAddressReserve(&va, 2 * gran, 0, 0, 0), "cuMemAddressReserve");
  CK(cu->MemCreate(&mh, gran, &prop, 0), "cuMemCreate");
  CK(cu->MemMap(va, gran, 0, mh, 0), "cuMemMap");
  CUmemAccessDesc acc = {{1, dev}, 3};
  CK(cu->MemSetAccess(va, gran, &acc, 1), "cuMemSetAccess");
  CK(cu->MemsetD8(va, 0x5a, gran), "cuMemsetD8");
  CUdeviceptr vp = va + 4096;
  unsigned vv = 7;
  unsigned long long vcount = 1000;
  void *vfill_params[] = {&vp, &vv, &vcount};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel(f_fill, 4, 1, 1, BLOCK, 1, 1, 0, NULL, vfill_params, NULL), "cuLaunchKernel");
  size_t vbytes = 64 * 1024;
  unsigned *hv = malloc(vbytes);
  if (!hv) die_call("malloc", -1);
  CK(cu->MemcpyDtoH(hv, va, vbytes), "cuMemcpyDtoH");
  outf(out, "vmm gran=%zu sum=%llu fnv=%016llx", gran, usum(hv, vbytes / 4), fnv1a(hv, vbytes));
  CK(cu->MemUnmap(va, gran), "cuMemUnmap");
  CK(cu->MemRelease(mh), "cuMemRelease");
  CK(cu->MemAddressFree(va, 2 * gran), "cuMemAddressFree");

  /* teardown */
  CK(cu->CtxSynchronize(), "cuCtxSynchronize");
  CK(cu->EventDestroy(e0), "cuEventDestroy");
  CK(cu->EventDestroy(e1), "cuEventDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(x), "cuMemFree");
  CK(cu->MemFree(y), "cuMemFree");
  CK(cu->MemFree(z), "cuMemFree");
  CK(cu->MemFree(table), "cuMemFree");
  CK(cu->MemFree(gout), "cuMemFree");
  CK(cu->MemFreeHost(hz), "cuMemFreeHost");
  CK(cu->ModuleUnload(mod), "cuModuleUnload");
  CK(cu->LibraryUnload(lib), "cuLibraryUnload");
  CK(cu->DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  free(hx);
  free(hy);
  free(hr);
  free(ht);
  free(hv);
}

/* The `hidden` mode: kernels reached without a recorded look-up, as a math library does.
 * cuFFT gets its functions through the driver's private export table (cuGetExportTable, which
 * capture passes through unrecorded): here `axpy` comes from the fake's export table; then a
 * module's functions and a library's kernels are enumerated and `fill_u32` launched from each. */
static void hidden_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  const unsigned grid = (N_ELEMS + BLOCK - 1) / BLOCK;
  CUdevice dev;
  CUcontext ctx;
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");

  unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  struct fatbin_wrapper wrapper = {0x466243B1, 1, fatbin, NULL};
  CUmodule mod;
  CUlibrary lib;
  CK(cu->ModuleLoadData(&mod, fatbin), "cuModuleLoadData");
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  const void *table = NULL;
  CUuuid id = {{0}};
  CK(cu->GetExportTable(&table, &id), "cuGetExportTable");
  typedef CUresult (*hidden_fn)(CUfunction *, CUmodule, const char *);
  hidden_fn get_function = (hidden_fn)((void *const *)table)[1];
  CUfunction f_axpy;
  CK(get_function(&f_axpy, mod, "axpy"), "export table get_function");
  /* as cuFFT does: an attribute set on the function before its first launch */
  CK(cu->FuncSetAttribute(f_axpy, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, 1024), "cuFuncSetAttribute");

  float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float));
  unsigned *hz = malloc(2 * n * sizeof(unsigned));
  if (!hx || !hy || !hz) die_call("malloc", -1);
  for (int i = 0; i < n; i++) {
    hx[i] = (float)(i % 41) * 0.5f;
    hy[i] = (float)(i % 7) - 3.0f;
  }
  CUdeviceptr x, y, z;
  CK(cu->MemAlloc(&x, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&z, 2 * n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(x, hx, n * sizeof(float)), "cuMemcpyHtoD");
  CK(cu->MemcpyHtoD(y, hy, n * sizeof(float)), "cuMemcpyHtoD");
  float a = 3.0f;
  void *axpy_params[] = {&a, &x, &y, (void *)&n};
  CK(cu->LaunchKernel(f_axpy, grid, 1, 1, BLOCK, 1, 1, 0, NULL, axpy_params, NULL), "cuLaunchKernel");
  CUfunction fns[2];
  CUkernel ks[2];
  CK(cu->ModuleEnumerateFunctions(fns, 2, mod), "cuModuleEnumerateFunctions");
  CK(cu->LibraryEnumerateKernels(ks, 2, lib), "cuLibraryEnumerateKernels");
  /* fns[1] and ks[1] are `fill_u32` (the fatbin's second entry) */
  CUdeviceptr z2 = z + n * sizeof(unsigned);
  unsigned v1 = 0xA5A5A5A5u, v2 = 0x5A5A0001u;
  unsigned long long count = (unsigned long long)n;
  void *fill1[] = {&z, &v1, &count};
  void *fill2[] = {&z2, &v2, &count};
  CK(cu->LaunchKernel(fns[1], grid, 1, 1, BLOCK, 1, 1, 0, NULL, fill1, NULL), "cuLaunchKernel");
  CK(cu->LaunchKernel((CUfunction)ks[1], grid, 1, 1, BLOCK, 1, 1, 0, NULL, fill2, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hy, y, n * sizeof(float)), "cuMemcpyDtoH");
  CK(cu->MemcpyDtoH(hz, z, 2 * n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "hidden axpy sum=%.6f fnv=%016llx", fsum(hy, n), fnv1a(hy, n * sizeof(float)));
  outf(out, "hidden fill sum=%llu fnv=%016llx", usum(hz, 2 * n), fnv1a(hz, 2 * n * sizeof(unsigned)));
  free(hx);
  free(hy);
  free(hz);
}

/* The `graph` mode: a few launches, a memset and an H2D copy captured from a stream into a
 * graph (GLOBAL capture mode, as cudaStreamBeginCapture's default), instantiated two ways and
 * launched 3 times; then an explicitly built (empty) graph instantiated and launched once. */
static void graph_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  const unsigned grid = (N_ELEMS + BLOCK - 1) / BLOCK;
  CUdevice dev;
  CUcontext ctx;
  int ver = 0;
  CK(cu->DriverGetVersion(&ver), "cuDriverGetVersion");
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");

  unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  struct fatbin_wrapper wrapper = {0x466243B1, 1, fatbin, NULL};
  CUlibrary lib;
  CUkernel k_axpy, k_fill;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");

  float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float));
  unsigned *hz = malloc(n * sizeof(unsigned));
  float head[64];
  if (!hx || !hy || !hz) die_call("malloc", -1);
  for (int i = 0; i < n; i++) {
    hx[i] = (float)(i % 89) * 0.5f;
    hy[i] = (float)(i % 11) - 5.0f;
  }
  for (int i = 0; i < 64; i++) head[i] = (float)i * 0.125f;
  CUdeviceptr x, y, z;
  CK(cu->MemAlloc(&x, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(x, hx, n * sizeof(float)), "cuMemcpyHtoD");
  CK(cu->MemcpyHtoD(y, hy, n * sizeof(float)), "cuMemcpyHtoD");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");

  float a = 1.5f;
  void *axpy_params[] = {&a, &x, &y, (void *)&n};
  CUdeviceptr zp = z + 1024 * sizeof(unsigned);
  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 512;
  void *fill_params[] = {&zp, &fv, &fcount};
  CUgraph g;
  CK(cu->StreamBeginCapture(s, 0), "cuStreamBeginCapture"); /* CU_STREAM_CAPTURE_MODE_GLOBAL */
  CK(cu->MemsetD32Async(z, 0x11111111u, n, s), "cuMemsetD32Async");
  CK(cu->MemcpyHtoDAsync(x, head, sizeof head, s), "cuMemcpyHtoDAsync");
  CK(cu->LaunchKernel((CUfunction)k_axpy, grid, 1, 1, BLOCK, 1, 1, 0, s, axpy_params, NULL), "cuLaunchKernel");
  CK(cu->LaunchKernel((CUfunction)k_fill, 2, 1, 1, BLOCK, 1, 1, 0, s, fill_params, NULL), "cuLaunchKernel");
  CK(cu->StreamEndCapture(s, &g), "cuStreamEndCapture");

  CUgraphExec e1, e2;
  CUDA_GRAPH_INSTANTIATE_PARAMS ip;
  memset(&ip, 0, sizeof ip);
  CK(cu->GraphInstantiateWithFlags(&e1, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphInstantiateWithParams(&e2, g, &ip), "cuGraphInstantiateWithParams");
  CK(cu->GraphLaunch(e1, s), "cuGraphLaunch");
  CK(cu->GraphLaunch(e1, s), "cuGraphLaunch");
  CK(cu->GraphLaunch(e2, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->MemcpyDtoH(hy, y, n * sizeof(float)), "cuMemcpyDtoH");
  CK(cu->MemcpyDtoH(hz, z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "graph_axpy sum=%.6f fnv=%016llx", fsum(hy, n), fnv1a(hy, n * sizeof(float)));
  outf(out, "graph_fill sum=%llu fnv=%016llx", usum(hz, n), fnv1a(hz, n * sizeof(unsigned)));

  /* an explicitly built graph (no stream capture): empty, so it changes nothing */
  CUgraph eg;
  CUgraphExec ee;
  CK(cu->GraphCreate(&eg, 0), "cuGraphCreate");
  CK(cu->GraphInstantiateV2(&ee, eg, NULL, NULL, 0), "cuGraphInstantiate");
  CK(cu->GraphLaunch(ee, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");

  CK(cu->GraphExecDestroy(ee), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(eg), "cuGraphDestroy");
  CK(cu->GraphExecDestroy(e1), "cuGraphExecDestroy");
  CK(cu->GraphExecDestroy(e2), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(g), "cuGraphDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(x), "cuMemFree");
  CK(cu->MemFree(y), "cuMemFree");
  CK(cu->MemFree(z), "cuMemFree");
  CK(cu->LibraryUnload(lib), "cuLibraryUnload");
  CK(cu->DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  free(hx);
  free(hy);
  free(hz);
}

static int g_host_node_runs;
static void count_host_node(void *arg) { *(int *)arg += 1; }

static void kernel_node(CUDA_KERNEL_NODE_PARAMS *p, CUkernel k, unsigned grid, void **params) {
  memset(p, 0, sizeof *p);
  p->func = (CUfunction)k;
  p->gridDimX = grid;
  p->gridDimY = p->gridDimZ = 1;
  p->blockDimX = BLOCK;
  p->blockDimY = p->blockDimZ = 1;
  p->kernelParams = params;
}
static void linear_copy(CUDA_MEMCPY3D *p, const void *src_host, CUdeviceptr src_dev, void *dst_host,
                        CUdeviceptr dst_dev, size_t bytes) {
  memset(p, 0, sizeof *p);
  p->srcMemoryType = src_host ? 1 : 2;
  p->srcHost = src_host;
  p->srcDevice = src_dev;
  p->dstMemoryType = dst_host ? 1 : 2;
  p->dstHost = dst_host;
  p->dstDevice = dst_dev;
  p->WidthInBytes = bytes;
  p->Height = p->Depth = 1;
}

/* cuInit, device 0's primary context made current, the fake fatbin loaded as a library (kept
 * loaded for the process). */
static CUlibrary setup_library(void) {
  const struct cu_api *cu = &g_cu;
  CUdevice dev;
  CUcontext ctx;
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
  static unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  static struct fatbin_wrapper wrapper = {0x466243B1, 1, fatbin, NULL};
  CUlibrary lib;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  return lib;
}

/* Program code changing a D2H result inside the graph, after the copy (as simpleCudaGraphs
 * resets its sum): the bytes the device wrote are what replay can check. */
static void reset_first(void *arg) { *(unsigned *)arg = 0xdeadbeefu; }

/* A stream capture with graph memory (cuMemAllocAsync and cuMemFreeAsync inside it) and host
 * copies both ways: each launch of the graph reads `in` and writes `res`, and the host changes
 * `in` between launches (the `graph_capture` mode). */
static void graph_capture_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = 4096;
  CUlibrary lib = setup_library();
  CUkernel k_axpy;
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  float *in = malloc(n * sizeof(float)), *res = calloc(n, sizeof(float));
  if (!in || !res) die_call("malloc", -1);
  for (int i = 0; i < n; i++) in[i] = (float)(i % 7);
  CUdeviceptr y; /* 2 MiB (one page of the fake's granularity), so the graph memory has pages of its own */
  CK(cu->MemAlloc(&y, 2u << 20), "cuMemAlloc");
  CK(cu->MemcpyHtoD(y, res, n * sizeof(float)), "cuMemcpyHtoD");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CUgraph g;
  CUdeviceptr t;
  float a = 0.5f;
  CK(cu->StreamBeginCapture(s, 0), "cuStreamBeginCapture");
  CK(cu->MemAllocAsync(&t, n * sizeof(float), s), "cuMemAllocAsync");
  CK(cu->MemcpyHtoDAsync(t, in, n * sizeof(float), s), "cuMemcpyHtoDAsync");
  void *params[] = {&a, &t, &y, (void *)&n};
  CK(cu->LaunchKernel((CUfunction)k_axpy, (n + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, s, params, NULL),
     "cuLaunchKernel");
  CK(cu->MemcpyDtoHAsync(res, y, n * sizeof(float), s), "cuMemcpyDtoHAsync");
  CK(cu->LaunchHostFunc(s, reset_first, res), "cuLaunchHostFunc");
  CK(cu->MemFreeAsync(t, s), "cuMemFreeAsync");
  CK(cu->StreamEndCapture(s, &g), "cuStreamEndCapture");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < n; i++) in[i] = (float)((i + 3 * r) % 13);
    CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
    CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
    outf(out, "graph_capture launch=%d sum=%.6f fnv=%016llx", r, fsum(res, n), fnv1a(res, n * sizeof(float)));
  }
  CK(cu->GraphExecDestroy(e), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(g), "cuGraphDestroy");

  /* the same built node by node, with memory alloc and free nodes */
  CUgraph g2;
  CUgraphNode n_alloc, n_h2d, n_axpy, n_d2h, n_free;
  CK(cu->GraphCreate(&g2, 0), "cuGraphCreate");
  unsigned char ap[120]; /* CUDA_MEM_ALLOC_NODE_PARAMS: pool properties, access, bytesize, dptr */
  memset(ap, 0, sizeof ap);
  ap[0] = 1;  /* CU_MEM_ALLOCATION_TYPE_PINNED */
  ap[8] = 1;  /* CU_MEM_LOCATION_TYPE_DEVICE, id 0 */
  size_t bytes = n * sizeof(float);
  memcpy(ap + 104, &bytes, 8);
  CK(cu->GraphAddMemAllocNode(&n_alloc, g2, NULL, 0, ap), "cuGraphAddMemAllocNode");
  CUdeviceptr t2;
  memcpy(&t2, ap + 112, 8);
  CUcontext cur;
  CK(cu->CtxGetCurrent(&cur), "cuCtxGetCurrent");
  CUDA_MEMCPY3D cp;
  linear_copy(&cp, in, 0, NULL, t2, bytes);
  CK(cu->GraphAddMemcpyNode(&n_h2d, g2, &n_alloc, 1, &cp, cur), "cuGraphAddMemcpyNode");
  void *p2[] = {&a, &t2, &y, (void *)&n};
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_node(&kp, k_axpy, (n + BLOCK - 1) / BLOCK, p2);
  CK(cu->GraphAddKernelNode(&n_axpy, g2, &n_h2d, 1, &kp), "cuGraphAddKernelNode");
  linear_copy(&cp, NULL, y, res, 0, bytes);
  CK(cu->GraphAddMemcpyNode(&n_d2h, g2, &n_axpy, 1, &cp, cur), "cuGraphAddMemcpyNode");
  CK(cu->GraphAddMemFreeNode(&n_free, g2, &n_d2h, 1, t2), "cuGraphAddMemFreeNode");
  CK(cu->GraphInstantiateWithFlags(&e, g2, 0), "cuGraphInstantiateWithFlags");
  for (int i = 0; i < n; i++) in[i] = (float)(i % 5);
  CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  outf(out, "graph_capture nodes sum=%.6f fnv=%016llx", fsum(res, n), fnv1a(res, n * sizeof(float)));
  CK(cu->GraphExecDestroy(e), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(g2), "cuGraphDestroy");
  CK(cu->MemFree(y), "cuMemFree");
  free(in);
  free(res);
}

/* The `graph_nodes` mode: a graph built node by node — an H2D memcpy node from a host buffer
 * the program changes between launches, a memset node (through cuGraphAddNode), an axpy kernel
 * node after both, a child graph (fill_u32 kernel node and an empty node), a host node, an
 * event record node, D2H memcpy nodes (one ordered by cuGraphAddDependencies) — instantiated,
 * uploaded and launched 3 times, with an exec kernel-node update after the first launch and a
 * graph kernel-node update applied by cuGraphExecUpdate after the second. */
static void graph_nodes_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  const unsigned grid = (N_ELEMS + BLOCK - 1) / BLOCK;
  CUdevice dev;
  CUcontext ctx;
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
  unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  struct fatbin_wrapper wrapper = {0x466243B1, 1, fatbin, NULL};
  CUlibrary lib;
  CUkernel k_axpy, k_fill;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");

  float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float));
  unsigned *hz = malloc(n * sizeof(unsigned));
  if (!hx || !hy || !hz) die_call("malloc", -1);
  CUdeviceptr x, y, z;
  CK(cu->MemAlloc(&x, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemsetD8(z, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CUevent ev;
  CK(cu->EventCreate(&ev, 0), "cuEventCreate");

  CUgraph g, child;
  CK(cu->GraphCreate(&g, 0), "cuGraphCreate");
  CK(cu->GraphCreate(&child, 0), "cuGraphCreate");
  CUgraphNode n_h2d, n_set, n_axpy, n_child, n_host, n_d2h_y, n_d2h_z, n_rec, c_fill, c_empty;
  CUDA_MEMCPY3D cp;
  linear_copy(&cp, hx, 0, NULL, x, n * sizeof(float));
  CK(cu->GraphAddMemcpyNode(&n_h2d, g, NULL, 0, &cp, ctx), "cuGraphAddMemcpyNode");
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = 2; /* CU_GRAPH_NODE_TYPE_MEMSET */
  np.u.memset.p.dst = y;
  np.u.memset.p.value = 0x3f800000u; /* 1.0f */
  np.u.memset.p.elementSize = 4;
  np.u.memset.p.width = (size_t)n;
  np.u.memset.p.height = 1;
  np.u.memset.ctx = ctx;
  CK(cu->GraphAddNode(&n_set, g, NULL, NULL, 0, &np), "cuGraphAddNode");
  float a = 1.5f;
  void *axpy_params[] = {&a, &x, &y, (void *)&n};
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_node(&kp, k_axpy, grid, axpy_params);
  CUgraphNode axpy_deps[] = {n_h2d, n_set};
  CK(cu->GraphAddKernelNode(&n_axpy, g, axpy_deps, 2, &kp), "cuGraphAddKernelNode");

  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&z, &fv, &fcount};
  CUDA_KERNEL_NODE_PARAMS fp;
  kernel_node(&fp, k_fill, 4, fill_params);
  CK(cu->GraphAddKernelNode(&c_fill, child, NULL, 0, &fp), "cuGraphAddKernelNode");
  CK(cu->GraphAddEmptyNode(&c_empty, child, &c_fill, 1), "cuGraphAddEmptyNode");
  CK(cu->GraphAddChildGraphNode(&n_child, g, NULL, 0, child), "cuGraphAddChildGraphNode");

  CUDA_HOST_NODE_PARAMS hp = {count_host_node, &g_host_node_runs};
  CK(cu->GraphAddHostNode(&n_host, g, &n_axpy, 1, &hp), "cuGraphAddHostNode");
  linear_copy(&cp, NULL, y, hy, 0, n * sizeof(float));
  CK(cu->GraphAddMemcpyNode(&n_d2h_y, g, &n_host, 1, &cp, ctx), "cuGraphAddMemcpyNode");
  linear_copy(&cp, NULL, z, hz, 0, n * sizeof(unsigned));
  CK(cu->GraphAddMemcpyNode(&n_d2h_z, g, NULL, 0, &cp, ctx), "cuGraphAddMemcpyNode");
  CK(cu->GraphAddDependencies(g, &n_child, &n_d2h_z, 1), "cuGraphAddDependencies");
  CUgraphNode n_reset;
  CUDA_HOST_NODE_PARAMS rp = {reset_first, hz};
  CK(cu->GraphAddHostNode(&n_reset, g, &n_d2h_z, 1, &rp), "cuGraphAddHostNode");
  CUgraphNode rec_deps[] = {n_d2h_y, n_reset};
  CK(cu->GraphAddEventRecordNode(&n_rec, g, rec_deps, 2, ev), "cuGraphAddEventRecordNode");

  /* one plain launch first (the same fill the child graph makes) */
  CK(cu->LaunchKernel((CUfunction)k_fill, 4, 1, 1, BLOCK, 1, 1, 0, s, fill_params, NULL), "cuLaunchKernel");
  CUgraph g2;
  CK(cu->GraphClone(&g2, g), "cuGraphClone");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphUpload(e, s), "cuGraphUpload");
  for (int launch = 0; launch < 3; launch++) {
    for (int i = 0; i < n; i++) hx[i] = (float)(i % 89) * 0.5f + (float)launch;
    CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
    CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
    outf(out, "nodes[%d] axpy sum=%.6f fnv=%016llx fill sum=%llu fnv=%016llx", launch, fsum(hy, n),
         fnv1a(hy, n * sizeof(float)), usum(hz, n), fnv1a(hz, n * sizeof(unsigned)));
    if (launch == 0) { /* the instantiation's axpy node gets a = 2.5 */
      a = 2.5f;
      CK(cu->GraphExecKernelNodeSetParams(e, n_axpy, &kp), "cuGraphExecKernelNodeSetParams");
    } else if (launch == 1) { /* the graph's axpy node gets a = -1, applied by an exec update */
      a = -1.0f;
      fcount = 2048;
      CK(cu->GraphKernelNodeSetParams(n_axpy, &kp), "cuGraphKernelNodeSetParams");
      CK(cu->GraphExecUpdate(e, g, NULL), "cuGraphExecUpdate");
    }
  }
  outf(out, "nodes host_node_runs=%d", g_host_node_runs);

  CK(cu->GraphExecDestroy(e), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(g2), "cuGraphDestroy");
  CK(cu->GraphDestroy(g), "cuGraphDestroy");
  CK(cu->GraphDestroy(child), "cuGraphDestroy");
  CK(cu->EventDestroy(ev), "cuEventDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(x), "cuMemFree");
  CK(cu->MemFree(y), "cuMemFree");
  CK(cu->MemFree(z), "cuMemFree");
  CK(cu->LibraryUnload(lib), "cuLibraryUnload");
  CK(cu->DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  free(hx);
  free(hy);
  free(hz);
}

/* The `graph_cond` mode: a graph whose only node is a conditional IF node (default value 1,
 * assigned at each launch) with a fill_u32 kernel node in its body; launched once, then `z` is
 * copied back. */
static void graph_cond_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  CUcontext ctx;
  CUlibrary lib = setup_library();
  CK(cu->CtxGetCurrent(&ctx), "cuCtxGetCurrent");
  CUkernel k_fill;
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");
  unsigned *hz = malloc(n * sizeof(unsigned));
  if (!hz) die_call("malloc", -1);
  CUdeviceptr z;
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemsetD8(z, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");

  CUgraph g, body = NULL;
  CK(cu->GraphCreate(&g, 0), "cuGraphCreate");
  unsigned long long h;
  CK(cu->GraphConditionalHandleCreate(&h, g, ctx, 1, 1), "cuGraphConditionalHandleCreate");
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = 13; /* CU_GRAPH_NODE_TYPE_CONDITIONAL */
  np.u.conditional.handle = h;
  np.u.conditional.type = 0; /* IF */
  np.u.conditional.size = 1;
  np.u.conditional.phGraph_out = &body;
  np.u.conditional.ctx = ctx;
  CUgraphNode n_cond, b_fill;
  CK(cu->GraphAddNode(&n_cond, g, NULL, NULL, 0, &np), "cuGraphAddNode");
  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&z, &fv, &fcount};
  CUDA_KERNEL_NODE_PARAMS fp;
  kernel_node(&fp, k_fill, 4, fill_params);
  CK(cu->GraphAddKernelNode(&b_fill, body, NULL, 0, &fp), "cuGraphAddKernelNode");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->MemcpyDtoH(hz, z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "cond fill sum=%llu fnv=%016llx", usum(hz, n), fnv1a(hz, n * sizeof(unsigned)));
  CK(cu->GraphExecDestroy(e), "cuGraphExecDestroy");
  CK(cu->GraphDestroy(g), "cuGraphDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(z), "cuMemFree");
  CK(cu->LibraryUnload(lib), "cuLibraryUnload");
  CK(cu->DevicePrimaryCtxRelease(0), "cuDevicePrimaryCtxRelease");
  free(hz);
}

static void *thread_main(void *arg) {
  workload(arg);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: %s [crash|abort|hang|fault|hidden|noisy|fork|nocuda|threads|graph|graph_nodes|graph_cond|graph_capture|loop N|launches N]\n", g_prog);
  exit(2);
}

/* resolve() fills g_cu; it must not initialise CUDA. */
static int app_main(int argc, char **argv, const char *prog, void (*resolve)(void)) {
  g_prog = prog;
  if (argc > 1) {
    if (!strcmp(argv[1], "crash")) g_opts.mode = MODE_CRASH;
    else if (!strcmp(argv[1], "abort")) g_opts.mode = MODE_ABORT;
    else if (!strcmp(argv[1], "fork")) g_opts.mode = MODE_FORK;
    else if (!strcmp(argv[1], "nocuda")) g_opts.mode = MODE_NOCUDA;
    else if (!strcmp(argv[1], "threads")) g_opts.mode = MODE_THREADS;
    else if (!strcmp(argv[1], "graph")) g_opts.mode = MODE_GRAPH;
    else if (!strcmp(argv[1], "graph_nodes")) g_opts.mode = MODE_GRAPH_NODES;
    else if (!strcmp(argv[1], "graph_capture")) g_opts.mode = MODE_GRAPH_CAPTURE;
    else if (!strcmp(argv[1], "graph_cond")) g_opts.mode = MODE_GRAPH_COND;
    else if (!strcmp(argv[1], "hang")) g_opts.mode = MODE_HANG;
    else if (!strcmp(argv[1], "fault")) g_opts.mode = MODE_FAULT;
    else if (!strcmp(argv[1], "hidden")) g_opts.mode = MODE_HIDDEN;
    else if (!strcmp(argv[1], "noisy")) g_opts.mode = MODE_NOISY;
    else if (!strcmp(argv[1], "launches") && argc > 2) {
      char *end;
      g_opts.mode = MODE_LAUNCHES;
      g_opts.loops = strtol(argv[2], &end, 10);
      if (*end || g_opts.loops < 1) usage();
    } else if (!strcmp(argv[1], "loop") && argc > 2) {
      char *end;
      g_opts.loops = strtol(argv[2], &end, 10);
      if (*end || g_opts.loops < 1) usage();
    } else usage();
  }
  if (g_opts.mode == MODE_NOCUDA) {
    printf("nocuda ok\n");
    return 0;
  }
  resolve();

  if (g_opts.mode == MODE_LAUNCHES) { /* N launches of a kernel that does nothing */
    CUlibrary lib = setup_library();
    CUkernel k;
    CK(g_cu.LibraryGetKernel(&k, lib, "idle"), "cuLibraryGetKernel");
    unsigned long long v = 0;
    void *params[] = {&v};
    for (long i = 0; i < g_opts.loops; i++)
      CK(g_cu.LaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
    CK(g_cu.CtxSynchronize(), "cuCtxSynchronize");
    printf("launches %ld done\n", g_opts.loops);
    return 0;
  }
  if (g_opts.mode == MODE_HIDDEN) {
    static struct outbuf ob;
    hidden_workload(&ob);
    outflush(&ob);
    return 0;
  }
  if (g_opts.mode == MODE_GRAPH || g_opts.mode == MODE_GRAPH_NODES || g_opts.mode == MODE_GRAPH_COND ||
      g_opts.mode == MODE_GRAPH_CAPTURE) {
    static struct outbuf ob;
    if (g_opts.mode == MODE_GRAPH) graph_workload(&ob);
    else if (g_opts.mode == MODE_GRAPH_CAPTURE) graph_capture_workload(&ob);
    else if (g_opts.mode == MODE_GRAPH_NODES) graph_nodes_workload(&ob);
    else graph_cond_workload(&ob);
    outflush(&ob);
    return 0;
  }

  if (g_opts.mode == MODE_THREADS) {
    static struct outbuf ob[2];
    pthread_t t[2];
    ob[0].prefix = "[t0] ";
    ob[1].prefix = "[t1] ";
    for (int i = 0; i < 2; i++)
      if (pthread_create(&t[i], NULL, thread_main, &ob[i])) die_call("pthread_create", -1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    outflush(&ob[0]);
    outflush(&ob[1]);
    return 0;
  }
  if (g_opts.mode == MODE_FORK) {
    static struct outbuf ob;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) die_call("fork", -1);
    if (pid == 0) {
      ob.prefix = "[child] ";
      workload(&ob);
      outflush(&ob);
      _exit(0);
    }
    ob.prefix = "[parent] ";
    workload(&ob);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) die_call("waitpid", -1);
    outflush(&ob);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "%s: child failed (status %d)\n", g_prog, st);
      return 1;
    }
    return 0;
  }
  static struct outbuf ob;
  workload(&ob);
  outflush(&ob);
  return 0;
}

#endif
