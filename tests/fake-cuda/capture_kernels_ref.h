/*
 * capture_kernels_ref.h - C references of capture's GPU kernels (crates/hrr-capture/gpu/
 * digest.cu): hrr_digest (hrr_archive::digest's chunk digests) and hrr_fingerprint (XXH3-128 of
 * 64 KiB chunks, the tracker of host-visible memory's fingerprint). The fake driver runs these
 * for the kernels; tests/gpu/digest_kernels.cu checks the real kernels against them on a GPU.
 */
#ifndef CAPTURE_KERNELS_REF_H
#define CAPTURE_KERNELS_REF_H
#include <stdint.h>
#include <string.h>

/* The SplitMix64 finaliser of hrr_archive::digest. */
static inline uint64_t digest_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* XXH3-128 (default secret, seed 0) of one 64 KiB chunk, written from the algorithm's
   description (one stripe after another), not from capture's kernel (one warp per chunk): the
   tracker of host-visible memory's fingerprint (twox_hash on the host), which hrr_fingerprint
   computes on a GPU. */
static const uint8_t XXH3_SECRET[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e};

static inline uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline void xxh3_accumulate(uint64_t acc[8], const uint8_t *stripe, const uint8_t *secret) {
  for (int i = 0; i < 8; i++) {
    uint64_t v = rd64(stripe + 8 * i), key = v ^ rd64(secret + 8 * i);
    acc[i ^ 1] += v;
    acc[i] += (key & 0xffffffffull) * (key >> 32);
  }
}

static inline uint64_t xxh3_merge(const uint64_t acc[8], const uint8_t *secret, uint64_t r) {
  for (int i = 0; i < 4; i++) {
    unsigned __int128 m = (unsigned __int128)(acc[2 * i] ^ rd64(secret + 16 * i)) *
                          (acc[2 * i + 1] ^ rd64(secret + 16 * i + 8));
    r += (uint64_t)m ^ (uint64_t)(m >> 64);
  }
  r ^= r >> 37;
  r *= 0x165667919E3779F9ull;
  return r ^ (r >> 32);
}

static inline void xxh3_128_64k(const uint8_t *p, uint64_t *lo, uint64_t *hi) {
  uint64_t acc[8] = {0xC2B2AE3Dull, 0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full,
                     0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull, 0x85EBCA77ull,
                     0x27D4EB2F165667C5ull, 0x9E3779B1ull};
  const size_t len = 65536, block = 1024; /* 16 stripes of 64 bytes a block */
  for (size_t b = 0; b + block < len; b += block) {
    for (int s = 0; s < 16; s++) xxh3_accumulate(acc, p + b + 64 * s, XXH3_SECRET + 8 * s);
    for (int i = 0; i < 8; i++) { /* scramble */
      acc[i] ^= acc[i] >> 47;
      acc[i] ^= rd64(XXH3_SECRET + 128 + 8 * i);
      acc[i] *= 0x9E3779B1ull;
    }
  }
  /* the last block: its stripes but the last, then the input's last stripe */
  for (int s = 0; s < 15; s++) xxh3_accumulate(acc, p + len - block + 64 * s, XXH3_SECRET + 8 * s);
  xxh3_accumulate(acc, p + len - 64, XXH3_SECRET + 192 - 64 - 7);
  *lo = xxh3_merge(acc, XXH3_SECRET + 11, len * 0x9E3779B185EBCA87ull);
  *hi = xxh3_merge(acc, XXH3_SECRET + 192 - 64 - 11, ~(len * 0xC2B2AE3D27D4EB4Full));
}

/* hrr_digest: per 8192-word chunk of the `nwords` words at `w`, hrr_archive::digest's two sums
   finished into 16 bytes at out[2 * chunk], out[2 * chunk + 1]. */
static inline void hrr_digest_ref(const uint64_t *w, uint64_t nwords, uint64_t *out) {
  const uint64_t K = 0x9E3779B97F4A7C15ull, S = 0xD6E8FEB86659FD93ull;
  for (uint64_t c = 0; c * 8192 < nwords; c++) {
    uint64_t a = 0, b = 0, f = c * 8192, e = f + 8192 < nwords ? f + 8192 : nwords;
    for (uint64_t i = f; i < e; i++) {
      uint64_t x = w[i] ^ ((i - f) * K);
      a += digest_mix(x);
      b += digest_mix(x ^ S);
    }
    uint64_t len = (e - f) * 8;
    out[2 * c] = digest_mix(a ^ len);
    out[2 * c + 1] = digest_mix(b + len * K);
  }
}

#endif
