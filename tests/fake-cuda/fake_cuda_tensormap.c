/*
 * fake_cuda_tensormap.c - Hopper TMA descriptors (CUtensorMap, 128 bytes): cuTensorMapEncodeTiled,
 * cuTensorMapEncodeIm2col and cuTensorMapReplaceAddress, in an encoding of the fake's own (the
 * real one is undocumented): the global address is kept shifted right by 4, so that no 8-byte
 * word of the map equals it and only encoding the map again moves it (like the real one, as far
 * as replay may assume). The tma_load kernels read the address back with tensor_map_source().
 *
 * Layout: "FTM1" | dtype u32 | address >> 4 u64 | rank u32 | im2col u32 | dims u64[5] |
 * box (im2col: channels, pixels) u32[5] | element strides u32[5] | zeros.
 */
#include "fake_cuda_internal.h"

enum { MAP_BYTES = 128, MAX_RANK = 5 };
static const unsigned char MAGIC[4] = {'F', 'T', 'M', '1'};

static CUresult encode(unsigned char *map, int dtype, unsigned rank, const void *addr, const unsigned long long *dims,
                       const unsigned *box, const unsigned *elem, unsigned im2col) {
  uintptr_t a = (uintptr_t)addr;
  if (!map || ((uintptr_t)map & 63) || rank < 1 || rank > MAX_RANK || !a || (a & 15) || !dims || !elem)
    return E_INVALID_VALUE; /* the map 64-byte aligned, as CUtensorMap is */
  unsigned char m[MAP_BYTES] = {0};
  uint64_t shifted = (uint64_t)a >> 4;
  memcpy(m, MAGIC, 4);
  memcpy(m + 4, &dtype, 4);
  memcpy(m + 8, &shifted, 8);
  memcpy(m + 16, &rank, 4);
  memcpy(m + 20, &im2col, 4);
  memcpy(m + 24, dims, rank * 8);
  if (box) memcpy(m + 64, box, rank * 4);
  memcpy(m + 84, elem, rank * 4);
  memcpy(map, m, MAP_BYTES);
  return E_SUCCESS;
}

CUresult i_tensor_map_encode_tiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                   const unsigned long long *strides, const unsigned *box, const unsigned *elem) {
  if (rank > 1 && !strides) return E_INVALID_VALUE;
  if (!box) return E_INVALID_VALUE;
  return encode(map, dtype, rank, addr, dims, box, elem, 0);
}

CUresult i_tensor_map_encode_im2col(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                    const unsigned long long *strides, const int *lower, const int *upper,
                                    unsigned channels, unsigned pixels, const unsigned *elem) {
  if (rank < 3 || !strides || !lower || !upper) return E_INVALID_VALUE;
  unsigned box[MAX_RANK] = {channels, pixels};
  return encode(map, dtype, rank, addr, dims, box, elem, 1);
}

CUresult i_tensor_map_replace_address(void *map, void *addr) {
  uintptr_t a = (uintptr_t)addr;
  if (!map || ((uintptr_t)map & 63) || memcmp(map, MAGIC, 4) || !a || (a & 15)) return E_INVALID_VALUE;
  uint64_t shifted = (uint64_t)a >> 4;
  memcpy((unsigned char *)map + 8, &shifted, 8);
  return E_SUCCESS;
}

int tensor_map_source(const unsigned char *map, uint64_t *addr) {
  if (memcmp(map, MAGIC, 4)) return 0;
  uint64_t shifted;
  memcpy(&shifted, map + 8, 8);
  *addr = shifted << 4;
  return 1;
}
