/*
 * sums.h - what the test programs print of a result buffer: its 64-bit FNV-1a hash and its sum
 * (of floats or of unsigned ints), so that plain, captured and replayed runs compare line by line.
 */
#ifndef HRR_FAKE_CUDA_SUMS_H
#define HRR_FAKE_CUDA_SUMS_H
#include <stddef.h>

static inline unsigned long long fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  unsigned long long h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
static inline double fsum(const float *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s;
}
static inline unsigned long long usum(const unsigned *v, size_t n) {
  unsigned long long s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s;
}

#endif
