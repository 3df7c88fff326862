/*
 * fake_common.h - what the fake CUDA driver (tests/fake-cuda) and the fake HIP runtime
 * (tests/fake-hip) do the same way: error tables looked up by code, and host mappings made
 * anywhere at a given alignment (when the fixed address window of the fake cannot be used).
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
