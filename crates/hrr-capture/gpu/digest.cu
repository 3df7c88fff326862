// Chunk digests of a D2H result, on the GPU (hrr_archive::digest; FORMAT.md §7, "Result
// digests"): one thread block per 64 KiB chunk of `nwords` 8-byte words at `src`, the two
// 64-bit sums of the chunk's words reduced in the block, the chunk's 16-byte digest written to
// out[2 * chunk], out[2 * chunk + 1]. Must compute exactly what `hrr_archive::digest` does on
// the host (its `known_values` test, and capture's check of the first chunk at first use).
//
// digest.ptx beside this file is generated from it: scripts/gen-digest-ptx.sh (needs nvcc).

#define CHUNK_WORDS 8192ull
#define K 0x9E3779B97F4A7C15ull
#define S 0xD6E8FEB86659FD93ull

__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

extern "C" __global__ void __launch_bounds__(256)
hrr_digest(const unsigned long long *src, unsigned long long nwords, unsigned long long *out) {
  const unsigned long long first = (unsigned long long)blockIdx.x * CHUNK_WORDS;
  const unsigned long long end = min(first + CHUNK_WORDS, nwords);
  unsigned long long a = 0, b = 0;
  for (unsigned long long i = first + threadIdx.x; i < end; i += blockDim.x) {
    const unsigned long long x = src[i] ^ ((i - first) * K);
    a += mix(x);
    b += mix(x ^ S);
  }
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_down_sync(0xffffffffu, a, o);
    b += __shfl_down_sync(0xffffffffu, b, o);
  }
  __shared__ unsigned long long sa[8], sb[8];
  if ((threadIdx.x & 31) == 0) {
    sa[threadIdx.x >> 5] = a;
    sb[threadIdx.x >> 5] = b;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < (blockDim.x + 31) / 32; w++) {
      a += sa[w];
      b += sb[w];
    }
    const unsigned long long len = (end - first) * 8;
    out[2 * blockIdx.x] = mix(a ^ len);
    out[2 * blockIdx.x + 1] = mix(b + len * K);
  }
}
