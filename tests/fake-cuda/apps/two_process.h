/*
 * two_process.h - what the two-process apps (ipc_app.c, shareable_app.c) share: the driver
 * calls both make, the error check, the two byte patterns and the context set-up. Each process
 * sets `who` to its name once it forked.
 */
#ifndef TWO_PROCESS_H
#define TWO_PROCESS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_cuda_abi.h"

CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);

/* Which process failed (the program's name until it forks). */
static const char *who = "app";

#define CK(x)                                                     \
  do {                                                            \
    CUresult r_ = (x);                                            \
    if (r_) {                                                     \
      fprintf(stderr, "%s: %s failed: %d\n", who, #x, r_);        \
      exit(1);                                                    \
    }                                                             \
  } while (0)

/* Byte i of pattern A (b = 0: the exporter's), B (b = 1: the importer's) or C (b = 2: the
 * exporter's second allocation, where there is one). */
static unsigned char pattern(size_t i, int b) {
  return (unsigned char)(b == 2 ? i * 3 + 11 : b ? i * 13 + 5 : i * 7 + 1);
}

/* A context for this process: on device 0, or for the child on device $FAKE_APP_CHILD_DEVICE
   (one process a device, as in a data-parallel job; run the fake with FAKE_CUDA_DEVICES=2). */
static void context(void) {
  int dev;
  CUcontext ctx;
  const char *c = getenv("FAKE_APP_CHILD_DEVICE");
  int ordinal = c && !strcmp(who, "child") ? atoi(c) : 0;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0)); /* every device looked up, as cudart does */
  CK(cuDeviceGet(&dev, ordinal));
  CK(cuCtxCreate_v2(&ctx, 0, dev));
}
#endif
