/*
 * two_process.h - what the two-process apps (ipc_app.c, shareable_app.c) share: the driver
 * calls both make, the error check, the two byte patterns, the context set-up and how each
 * process ends. Each process sets `who` to its name once it forked.
 */
#ifndef TWO_PROCESS_H
#define TWO_PROCESS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fake_cuda_abi.h"

CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);

/* Which process failed (the program's name until it forks). */
static const char *who = "app";

#define CHECK_PROG who
#include "check.h"

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

/* The child's end: whether it saw `patterns` printed, its answer ('y' or 'n') sent to the
 * parent; its exit status. */
static int child_answer(int to_parent, const char *patterns, int ok) {
  printf("child: %s %s\n", patterns, ok ? "seen" : "NOT seen");
  fflush(stdout);
  char done = ok ? 'y' : 'n';
  return write(to_parent, &done, 1) == 1 && ok ? 0 : 1;
}

/* The parent's check, once the child is done: its answer read from from_child (exit 1 without
 * one), the child waited for (its status in *status), the n bytes at d copied back into buf.
 * 1 when the child answered 'y' and buf holds pattern A, then from the middle on B. */
static int parent_check(int from_child, pid_t child, int *status, CUdeviceptr d, unsigned char *buf, size_t n) {
  char done = 0;
  if (read(from_child, &done, 1) != 1) exit(1);
  *status = 0;
  waitpid(child, status, 0);
  memset(buf, 0, n);
  CK(cuMemcpyDtoH_v2(buf, d, n));
  int ok = done == 'y';
  for (size_t i = 0; i < n; i++) ok &= buf[i] == pattern(i, i >= n / 2);
  return ok;
}

/* The parent's end: the check's result printed; its exit status. */
static int parent_verdict(int ok, int status) {
  printf("parent: child's half %s\n", ok ? "seen" : "NOT seen");
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
#endif
