/*
 * fake_common.h - what the fake CUDA driver (tests/fake-cuda) and the fake HIP runtime
 * (tests/fake-hip) do the same way: error tables looked up by code (and the errors both know),
 * and host mappings made anywhere at a given alignment (when the fixed address window of the
 * fake cannot be used).
 */
#ifndef HRR_FAKE_COMMON_H
#define HRR_FAKE_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* One row of a fake's error table: the code, its enum name and its description. */
struct fake_error {
  int code;
  const char *name, *text;
};

/* The errors the two fakes share (the same code and description; HIP took them from CUDA):
 * X(code, CUDA name, HIP name, description).  FAKE_SHARED_ERRORS(FAKE_CUDA_ERROR_ROW) (or
 * FAKE_HIP_ERROR_ROW) gives a fake's rows of them. */
#define FAKE_SHARED_ERRORS(X)                                                                            \
  X(0, CUDA_SUCCESS, hipSuccess, "no error")                                                             \
  X(1, CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue, "invalid argument")                               \
  X(2, CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory, "out of memory")                                   \
  X(101, CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice, "invalid device ordinal")                     \
  X(200, CUDA_ERROR_INVALID_IMAGE, hipErrorInvalidImage, "device kernel image is invalid")               \
  X(301, CUDA_ERROR_FILE_NOT_FOUND, hipErrorFileNotFound, "file not found")                              \
  X(400, CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle, "invalid resource handle")                    \
  X(500, CUDA_ERROR_NOT_FOUND, hipErrorNotFound, "named symbol not found")                               \
  X(600, CUDA_ERROR_NOT_READY, hipErrorNotReady, "device not ready")                                     \
  X(700, CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress, "an illegal memory access was encountered") \
  X(801, CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported, "operation not supported")
#define FAKE_CUDA_ERROR_ROW(code, cuda, hip, text) {code, #cuda, text},
#define FAKE_HIP_ERROR_ROW(code, cuda, hip, text) {code, #hip, text},

/* The row of table[0..n) for code, or NULL. */
static inline const struct fake_error *fake_error_find(const struct fake_error *table, size_t n, int code) {
  for (size_t i = 0; i < n; i++)
    if (table[i].code == code) return &table[i];
  return NULL;
}

/* Map len bytes (prot, private, anonymous, not reserved) anywhere, at an address aligned to
 * align: map len + align and unmap what lies outside the aligned part. 0 on failure. */
static inline uintptr_t fake_map_aligned(size_t len, size_t align, int prot) {
  size_t over = len + align;
  void *p = mmap(NULL, over, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  uintptr_t s = (uintptr_t)p, al = (s + align - 1) / align * align;
  if (al > s) munmap(p, al - s);
  if (s + over > al + len) munmap((void *)(al + len), s + over - (al + len));
  return al;
}

#endif
