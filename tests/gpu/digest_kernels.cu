// digest_kernels: capture's GPU kernels (crates/hrr-capture/gpu/digest.ptx: hrr_digest and
// hrr_fingerprint) against their C references (tests/fake-cuda/capture_kernels_ref.h, which
// the fake driver runs, and whose fingerprints the CPU tests compare with twox_hash's) on 64 MiB
// of pseudo-random data with a chunk of zeros and a last partial chunk, and their time.
//
//   digest_kernels PATH/TO/digest.ptx
//
// Prints one line per kernel; exit status 1 when any chunk differs.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake-cuda/capture_kernels_ref.h"

#define CK(x)                                                                   \
  do {                                                                          \
    CUresult r_ = (x);                                                          \
    if (r_) {                                                                   \
      printf("digest_kernels: %s failed: %d\n", #x, (int)r_);                   \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

static float timed(CUfunction f, unsigned grid, void **params) {
  CUevent e0, e1;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));
  float best = 1e9f;
  for (int r = 0; r < 5; r++) {
    CK(cuEventRecord(e0, 0));
    CK(cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, 0, params, 0));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    float ms;
    CK(cuEventElapsedTime(&ms, e0, e1));
    if (ms < best) best = ms;
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: digest_kernels digest.ptx\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  static char ptx[1 << 20];
  size_t n = fread(ptx, 1, sizeof ptx - 1, f);
  ptx[n] = 0;
  fclose(f);
  CK(cuInit(0));
  CUdevice d;
  CK(cuDeviceGet(&d, 0));
  CUcontext c;
  CK(cuDevicePrimaryCtxRetain(&c, d));
  CK(cuCtxSetCurrent(c));
  CUmodule m;
  CK(cuModuleLoadData(&m, ptx));
  CUfunction digest, fingerprint;
  CK(cuModuleGetFunction(&digest, m, "hrr_digest"));
  CK(cuModuleGetFunction(&fingerprint, m, "hrr_fingerprint"));

  const size_t chunks = 1024, bytes = chunks * 65536 + 616; // a last partial chunk
  uint8_t *h = (uint8_t *)malloc(bytes);
  uint64_t seed = 88172645463325252ull;
  for (size_t i = 0; i < bytes / 8; i++) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    memcpy(h + 8 * i, &seed, 8);
  }
  memset(h + 5 * 65536, 0, 65536);
  CUdeviceptr src, out;
  CK(cuMemAlloc(&src, bytes));
  CK(cuMemAlloc(&out, (chunks + 1) * 16));
  CK(cuMemcpyHtoD(src, h, bytes));
  uint64_t *got = (uint64_t *)malloc((chunks + 1) * 16), *want = (uint64_t *)malloc((chunks + 1) * 16);
  int failed = 0;

  uint64_t words = bytes / 8;
  void *dp[] = {&src, &words, &out};
  float ms = timed(digest, (unsigned)(chunks + 1), dp);
  CK(cuMemcpyDtoH(got, out, (chunks + 1) * 16));
  hrr_digest_ref((const uint64_t *)h, words, want);
  size_t bad = 0;
  for (size_t k = 0; k <= chunks; k++) bad += got[2 * k] != want[2 * k] || got[2 * k + 1] != want[2 * k + 1];
  printf("hrr_digest: %zu of %zu chunks differ from the C reference; 64 MiB in %.3f ms\n", bad, chunks + 1, ms);
  failed |= bad != 0;

  uint64_t nch = chunks;
  uint64_t secret[24]; // (its 4th parameter: XXH3's secret by value)
  memcpy(secret, XXH3_SECRET, sizeof secret);
  void *fp[] = {&src, &nch, &out, secret};
  ms = timed(fingerprint, (unsigned)((chunks * 32 + 255) / 256), fp);
  CK(cuMemcpyDtoH(got, out, chunks * 16));
  bad = 0;
  for (size_t k = 0; k < chunks; k++) {
    uint64_t lo, hi;
    xxh3_128_64k(h + k * 65536, &lo, &hi);
    bad += lo != got[2 * k] || hi != got[2 * k + 1];
  }
  printf("hrr_fingerprint: %zu of %zu chunks differ from the C reference; 64 MiB in %.3f ms\n", bad, chunks, ms);
  failed |= bad != 0;
  return failed;
}
