/* Shared by the HIP test programs: error checks that print the runtime's own codes, and
 * checksums of result buffers (a sum and a 64-bit FNV-1a hash of the bytes). Output never
 * contains addresses or timings, so plain, captured and replayed runs compare byte for byte. */
#pragma once
#include <hip/hip_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A call whose failure ends the program: prints the code and the runtime's message, exits 2. */
#define CHECK(call)                                                                     \
  do {                                                                                  \
    hipError_t e_ = (call);                                                             \
    if (e_ != hipSuccess) {                                                             \
      printf("%s: error %d (%s)\n", #call, (int)e_, hipGetErrorString(e_));             \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

static inline uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static inline void show_f32(const char *what, const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  printf("%-14s sum=%.4f hash=%016llx\n", what, s, (unsigned long long)fnv1a(x, n * 4));
}

static inline void show_u32(const char *what, const unsigned *x, size_t n) {
  unsigned long long s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  printf("%-14s sum=%llu hash=%016llx\n", what, s, (unsigned long long)fnv1a(x, n * 4));
}

/* With no usable device, show what the runtime answers to a few calls and stop (exit 3): the
 * codes must be the same with and without capture. */
static inline void require_device(void) {
  int n = -1;
  hipError_t e = hipGetDeviceCount(&n);
  if (e == hipSuccess && n > 0) return;
  printf("hipGetDeviceCount: %d (%s), count %d\n", (int)e, hipGetErrorString(e), n);
  void *p = NULL;
  e = hipMalloc(&p, 4096);
  printf("hipMalloc: %d (%s)\n", (int)e, hipGetErrorString(e));
  float h[4] = {1, 2, 3, 4};
  e = hipMemcpy(p, h, sizeof h, hipMemcpyHostToDevice);
  printf("hipMemcpy: %d\n", (int)e);
  e = hipDeviceSynchronize();
  printf("hipDeviceSynchronize: %d\n", (int)e);
  exit(3);
}
