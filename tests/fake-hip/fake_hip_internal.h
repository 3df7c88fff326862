/*
 * fake_hip_internal.h - what the files of the fake HIP runtime (libamdhip64.so.5) share: the ABI
 * types, error codes and limits, the state structures, and the functions and globals one file
 * defines for the others (hidden; fake_hip.map exports only the hip* and __hip* entry points).
 *
 * The fake is a CPU-only stand-in for the HIP runtime, built with SONAME libamdhip64.so.5 and the
 * runtime's symbol versions (hip_4.2 ... hip_5.1), so unmodified programs built by hipcc against
 * ROCm 5.2 run on it through LD_LIBRARY_PATH, and so do the hrr capture and replay tools.
 * "Device" memory is host memory at deterministic addresses, streams run synchronously, and the
 * kernels of the test programs (apps/) run on the CPU, found by name.  See README.md next to
 * these files for the contract.  Written from scratch for hrr; it follows the public HIP ABI
 * (names, versions, struct layouts of ROCm 5.2, error codes) and nothing else.
 */
#ifndef FAKE_HIP_INTERNAL_H
#define FAKE_HIP_INTERNAL_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fake_common.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* ------------------------------------------------------------------------ */
/* ABI (own minimal definitions; layouts follow the ROCm 5.2 headers)       */
/* ------------------------------------------------------------------------ */

typedef int hipError_t;
typedef struct { unsigned x, y, z; } dim3;
typedef struct fh_stream *hipStream_t;
typedef struct fh_event *hipEvent_t;
typedef struct fh_pool *hipMemPool_t;
typedef struct fh_module *hipModule_t;
typedef struct fh_func *hipFunction_t;
typedef struct fh_vmem *hipMemGenericAllocationHandle_t;
typedef void (*hipHostFn_t)(void *);

typedef struct { int type; int id; } hipMemLocation; /* type: hipMemLocationTypeDevice = 1 */
/* The ROCm 5 layout (ROCm 6 reorders it to match CUDA's CUmemAllocationProp). */
typedef struct {
  unsigned char compressionType;
  hipMemLocation location;
  int requestedHandleType;
  int type; /* hipMemAllocationTypePinned = 1 */
  unsigned short usage;
  void *win32HandleMetaData;
} hipMemAllocationProp;
typedef struct { hipMemLocation location; int flags; } hipMemAccessDesc;

_Static_assert(sizeof(hipMemAllocationProp) == 32, "hipMemAllocationProp layout");
_Static_assert(sizeof(hipMemAccessDesc) == 12, "hipMemAccessDesc layout");

/* hipDeviceProp_t of ROCm 5.2: 792 bytes; the fields the fake fills. */
#define PROP_BYTES 792
#define PROP_NAME 0
#define PROP_TOTAL_MEM 256
#define PROP_MAJOR 328
#define PROP_MINOR 332
#define PROP_GCN_ARCH 392
#define PROP_GCN_ARCH_NAME 396

enum {
  E_SUCCESS = 0,
  E_INVALID_VALUE = 1,
  E_OUT_OF_MEMORY = 2,
  E_INVALID_DEVICE_FUNCTION = 98,
  E_INVALID_DEVICE = 101,
  E_INVALID_SYMBOL = 13,
  E_MISSING_CONFIGURATION = 52,
  E_INVALID_IMAGE = 200,
  E_FILE_NOT_FOUND = 301,
  E_INVALID_HANDLE = 400,
  E_ILLEGAL_STATE = 401,
  E_NOT_FOUND = 500,
  E_NOT_READY = 600,
  E_ILLEGAL_ADDRESS = 700,
  E_NOT_SUPPORTED = 801,
  E_STREAM_CAPTURE_UNSUPPORTED = 900,
};

#define FH_VERSION 50221153 /* HIP_VERSION of ROCm 5.2.3 */
#define FH_GRAN ((size_t)64 << 10)
#define FH_TOTAL ((size_t)16 << 30)
#define FH_VA_BASE ((uintptr_t)0x7d0000000000ULL)
#define RET(r) return ret(__func__, (r))
#define GROW(arr, n, cap)                                                        \
  do {                                                                           \
    if ((n) == (cap)) {                                                          \
      size_t nc_ = (cap) ? (cap) * 2 : 16;                                       \
      void *p_ = realloc((arr), nc_ * sizeof(*(arr)));                           \
      if (!p_) abort();                                                          \
      (arr) = p_;                                                                \
      (cap) = nc_;                                                               \
    }                                                                            \
  } while (0)
enum { R_DEV = 1, R_HOST, R_HOSTREG, R_VMM, R_GLOBAL };
struct region { uintptr_t base; size_t size, mapped; int kind, access; };
struct resv { uintptr_t base; size_t size; };
struct fh_graph;
/* `capture`: the graph a stream capture is building (launches go into it, unrun). */
struct fh_stream { unsigned flags; int priority; struct fh_graph *capture; };
struct fh_event { unsigned flags; unsigned long long stamp; int recorded; };
struct fh_vmem { int fd; size_t size; };
enum { K_H2H = 0, K_H2D = 1, K_D2H = 2, K_D2D = 3, K_DEFAULT = 4 };
/* A code container: a registered fat binary or a loaded module. */
struct global { char *name; uintptr_t dev; size_t size; const void *host_var; };
struct fh_module {
  const unsigned char *image; /* a bundle or an ELF */
  size_t len;
  int owned;                  /* image was copied (modules) */
  struct global *globals;
  size_t nglob, capglob;
};
struct fh_func { struct fh_module *owner; const struct kernel *k; char *name; };
/* host stub -> function (registered <<<>>> kernels) */
struct stub { const void *host; struct fh_func *f; };
struct kargs { const unsigned char *buf; size_t len; };
struct launch { dim3 grid, block; struct fh_module *owner; };
/* Kernel table: name, argument layout (what hipcc's metadata says: size@offset per argument
 * the program passes), CPU implementation. */
struct kernel {
  const char *name;
  int nargs;
  unsigned off[6], size[6];
  hipError_t (*run)(struct kargs, const struct launch *);
};

#pragma GCC visibility push(hidden)
/* fake_hip_core.c */
void lock(void);
void unlock(void);
hipError_t ret(const char *name, hipError_t r);
uintptr_t round_up(uintptr_t x, uintptr_t a);
void obj_add(void *p);
int obj_del(void *p);
int obj_known(const void *p);
/* Stream capture (fake_hip_graph.c): the graph `s` is capturing into (NULL: none), and a
   launch of `f` appended to it with its argument bytes. */
struct fh_graph *capturing(hipStream_t s);
hipError_t graph_add_launch(struct fh_graph *g, struct fh_func *f, dim3 grid, dim3 block, struct kargs a);
/* A memset of `count` elements of `width` bytes appended to `g`, and one done now (locked). */
hipError_t graph_add_memset(struct fh_graph *g, void *dst, unsigned v, size_t count, int width);
hipError_t set_elements(void *dst, unsigned v, size_t count, int width);
/* A device-to-device copy appended to `g`; a copy of `kind` done now (locked). */
hipError_t graph_add_copy(struct fh_graph *g, void *dst, const void *src, size_t n);
hipError_t copy_now(void *dst, const void *src, size_t n, int kind);
/* Run `f` with argument bytes `a` (a graph's kernel node). */
hipError_t run_args(struct fh_func *f, dim3 grid, dim3 block, struct kargs a);
int stream_ok(hipStream_t s);

/* fake_hip_memory.c */
int range_ok(uintptr_t p, size_t len, int device);
hipError_t dev_alloc(void **out, size_t size, int kind);
hipError_t dev_free(void *p, int kind);
hipError_t copy(void *dst, const void *src, size_t n, int kind);

/* fake_hip_module.c */
extern struct fh_func **g_fn;
extern size_t g_nfn, g_capfn;
extern struct stub *g_stub;
extern size_t g_nstub, g_capstub;
struct global *global_find(struct fh_module *m, const char *name);

/* fake_hip_kernels.c */
struct fh_func *func_new(struct fh_module *owner, const char *name);
int func_known(const struct fh_func *f);
hipError_t run(struct fh_func *f, dim3 grid, dim3 block, hipStream_t s, void **params, void **extra);
#pragma GCC visibility pop

/* Entry points that fake_hip_kernels.c calls or hands out (hipGetProcAddress). */
hipError_t hipGetDeviceCount(int *n);
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s);
hipError_t hipMalloc(void **p, size_t size);
hipError_t hipFree(void *p);
hipError_t hipMemcpy(void *d, const void *s, size_t n, int kind);
hipError_t hipMemset(void *d, int v, size_t n);

#endif
