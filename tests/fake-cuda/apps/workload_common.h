/*
 * workload_common.h - what the workloads of driver_app and direct_app share: the driver entry points
 * they call (`struct cu_api`, filled by each app its own way), the options, the call check, the
 * output buffer and its hashes, the code images (a fatbin payload, PTX text) and the common
 * start and end (device 0's primary context, the library of k_lib_text, the x/y/z buffers).
 */
#ifndef HRR_FAKE_CUDA_WORKLOAD_COMMON_H
#define HRR_FAKE_CUDA_WORKLOAD_COMMON_H
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

#include "../fake_cuda_abi.h"
#include "sums.h"

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
  /* the fake's private way to a device's primary context, no call of the driver API (as cudart
   * has one): NULL where the app did not look it up */
  CUcontext (*PrimaryContextPrivately)(CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned);
  CUresult (*MemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
  CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
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
  CUresult (*MemHostAlloc)(void **, size_t, unsigned); /* driver_app only (`launches N W pinned`) */
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
  /* nodes added by hand to a stream capture (the `graph_cond_capture` mode) */
  CUresult (*StreamGetCaptureInfo)(CUstream, int *, unsigned long long *, CUgraph *, const CUgraphNode **,
                                   const void **, size_t *);
  CUresult (*StreamUpdateCaptureDependencies)(CUstream, CUgraphNode *, const void *, size_t, unsigned);
  CUresult (*StreamBeginCaptureToGraph)(CUstream, CUgraph, const CUgraphNode *, const void *, size_t, int);
};

static const char *g_prog = "app";
static struct cu_api g_cu;

enum { MODE_NORMAL, MODE_CRASH, MODE_ABORT, MODE_FORK, MODE_NOCUDA, MODE_THREADS, MODE_GRAPH, MODE_HANG, MODE_FAULT,
       MODE_HIDDEN, MODE_GRAPH_NODES, MODE_GRAPH_COND, MODE_NOISY, MODE_GRAPH_CAPTURE, MODE_LAUNCHES, MODE_TWO_DEVICES,
       MODE_GRAPH_COND_CAPTURE, MODE_CHAIN, MODE_RELOAD, MODE_SEGV };
struct opts {
  int mode;
  long loops;
  /* `launches N WORDS [pinned]`: an argument buffer of WORDS 8-byte words (through `extra`),
   * and a mapped pinned region tracked by capture beside them */
  long arg_words;
  int pinned;
  long noisy; /* `noisy N`: launches of the noisy kernel (0: one) */
  int noisy_burst; /* `noisy_burst N`: the N launches back to back, each into a buffer of its own, read back after */
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

/* k_ptx_text with a comment of 320 KiB after it, as large as a real module whose image capture
 * stores on a thread of its own while the driver loads it (crates/hrr-capture, code.rs). */
static char *g_large_ptx;
static void make_large_ptx(void) {
  size_t n = strlen(k_ptx_text), pad = 320 << 10;
  char *text = malloc(n + pad + 2);
  if (!text) exit(1);
  memcpy(text, k_ptx_text, n);
  memcpy(text + n, "//", 2);
  memset(text + n + 2, 'x', pad - 3);
  text[n + pad - 1] = '\n';
  text[n + pad] = 0;
  g_large_ptx = text;
}
/* Built once (pthread_once: the `threads` mode's two threads ask at once; a thread handed the
 * text while the other still filled it loaded, and capture recorded, a half-written image). */
static const char *large_ptx_text(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, make_large_ptx);
  return g_large_ptx;
}

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

/* A fatbin of k_lib_text in fatbin[0..cap), and the wrapper around it that cudart hands to
 * cuLibraryLoadData. */
static struct fatbin_wrapper lib_image(unsigned char *fatbin, size_t cap) {
  if (!make_fatbin(fatbin, cap, k_lib_text)) die_call("make_fatbin", -1);
  return (struct fatbin_wrapper){0x466243B1, 1, fatbin, NULL};
}

/* The library of k_lib_text loaded (from a fatbin that lives as long as the program), with its
 * `axpy` and `fill_u32` kernels. */
static void load_axpy_fill(CUlibrary *lib, CUkernel *k_axpy, CUkernel *k_fill) {
  static unsigned char fatbin[512] __attribute__((aligned(16)));
  struct fatbin_wrapper wrapper = lib_image(fatbin, sizeof fatbin);
  CK(g_cu.LibraryLoadData(lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CK(g_cu.LibraryGetKernel(k_axpy, *lib, "axpy"), "cuLibraryGetKernel");
  CK(g_cu.LibraryGetKernel(k_fill, *lib, "fill_u32"), "cuLibraryGetKernel");
}

/* The device ordinal the workload runs on: FAKE_APP_DEVICE=K (default 0; run the fake driver
 * with FAKE_CUDA_DEVICES above K). */
static int app_device(void) {
  const char *s = getenv("FAKE_APP_DEVICE");
  if (!s || !*s) return 0;
  char *end;
  long k = strtol(s, &end, 10);
  if (*end || k < 0 || k > 63) {
    fprintf(stderr, "FAKE_APP_DEVICE: expected an ordinal 0..63, got \"%s\"\n", s);
    exit(2);
  }
  return (int)k;
}

/* A device and its primary context. */
struct primary {
  CUdevice dev;
  CUcontext ctx;
};
/* cuInit, then device app_device() with its primary context made current: the two. */
static struct primary use_primary_ctx(void) {
  struct primary p;
  CK(g_cu.Init(0), "cuInit");
  CK(g_cu.DeviceGet(&p.dev, app_device()), "cuDeviceGet");
  CK(g_cu.DevicePrimaryCtxRetain(&p.ctx, p.dev), "cuDevicePrimaryCtxRetain");
  CK(g_cu.CtxSetCurrent(p.ctx), "cuCtxSetCurrent");
  return p;
}

/* The buffers of the axpy and fill workloads: x and y (n floats each) and z (zn unsigned ints),
 * on the host (hx, hy, hz) and on the device (x, y, z). */
struct xyz {
  float *hx, *hy;
  unsigned *hz;
  CUdeviceptr x, y, z;
};
/* The host buffers allocated, then the device's (x, y, z in that order). */
static void xyz_alloc(struct xyz *b, int n, int zn) {
  b->hx = malloc(n * sizeof(float));
  b->hy = malloc(n * sizeof(float));
  b->hz = malloc(zn * sizeof(unsigned));
  if (!b->hx || !b->hy || !b->hz) die_call("malloc", -1);
  CK(g_cu.MemAlloc(&b->x, n * sizeof(float)), "cuMemAlloc");
  CK(g_cu.MemAlloc(&b->y, n * sizeof(float)), "cuMemAlloc");
  CK(g_cu.MemAlloc(&b->z, zn * sizeof(unsigned)), "cuMemAlloc");
}
/* hx and hy copied to x and y. */
static void xyz_upload(const struct xyz *b, int n) {
  CK(g_cu.MemcpyHtoD(b->x, b->hx, n * sizeof(float)), "cuMemcpyHtoD");
  CK(g_cu.MemcpyHtoD(b->y, b->hy, n * sizeof(float)), "cuMemcpyHtoD");
}
/* cuMemFree of the n device buffers p[0..n), in that order. */
static void mem_free_each(const CUdeviceptr *p, int n) {
  for (int i = 0; i < n; i++) CK(g_cu.MemFree(p[i]), "cuMemFree");
}
/* The device buffers freed (x, y, z in that order), then the host's. */
static void xyz_free(struct xyz *b) {
  mem_free_each((CUdeviceptr[]){b->x, b->y, b->z}, 3);
  free(b->hx);
  free(b->hy);
  free(b->hz);
}

/* What the axpy and fill workloads start from: the primary context (use_primary_ctx), the
 * library with its `axpy` and `fill_u32` kernels (load_axpy_fill), and buffers x, y and z of n
 * elements each (xyz_alloc), made in that order. */
struct kernel_run {
  struct primary pc;
  CUlibrary lib;
  CUkernel k_axpy, k_fill;
  struct xyz b;
};
static void kernel_run_open(struct kernel_run *r, int n) {
  r->pc = use_primary_ctx();
  load_axpy_fill(&r->lib, &r->k_axpy, &r->k_fill);
  xyz_alloc(&r->b, n, n);
}
/* The buffers freed, the library unloaded and the primary context released. */
static void kernel_run_close(struct kernel_run *r) {
  xyz_free(&r->b);
  CK(g_cu.LibraryUnload(r->lib), "cuLibraryUnload");
  CK(g_cu.DevicePrimaryCtxRelease(r->pc.dev), "cuDevicePrimaryCtxRelease");
}

/* ---- the workload ---- */

#define N_ELEMS 4096
#define BLOCK 256
#define GRID ((N_ELEMS + BLOCK - 1) / BLOCK) /* blocks for one thread an element */

static void host_cb(void *arg) { ++*(int *)arg; }

#endif
