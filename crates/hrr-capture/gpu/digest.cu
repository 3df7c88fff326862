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

// Fingerprints of whole 64 KiB chunks (the tracker of host-visible memory's, XXH3-128 with the
// default secret and seed 0, as `twox_hash::XxHash3_128::oneshot` computes it on the host): one
// warp per chunk of `src` (`nchunks` of them, consecutive), the chunk's fingerprint written as
// its low and high 64 bits to out[2 * chunk], out[2 * chunk + 1]. A chunk is 64 of XXH3's
// 1 KiB blocks of 16 stripes: lane l accumulates half (4 lanes) of stripe l / 2 of each block,
// the warp sums the 16 stripes' parts (their order does not matter within a block), each lane
// keeps the four accumulators of its half and scrambles them after each block but the last.
// The host checks the first chunk against its own at first use (capture's digest.rs).

#define P32_1 0x9E3779B1ull
#define P64_1 0x9E3779B185EBCA87ull
#define P64_2 0xC2B2AE3D27D4EB4Full
#define PMX1 0x165667919E3779F9ull

// XXH3's 192-byte default secret as 24 little-endian words, passed by value in the launch's
// parameters (capture's digest.rs, FINGERPRINT_SECRET), not held as `.const` data: a module
// with constant data has the driver allocate a constant bank for it in device memory when it
// loads, which, loaded between a program's allocations and its kernel's first launch, slowed
// tf32TensorCoreGemm's kernel by 6% on an H100 (sixteenth and seventeenth sessions,
// scripts/gpu-placement-diag.sh). Stripe s reads words s..s+7, the scramble words 16..23; the
// last stripe, the final merges of the low and high halves read the unaligned words at byte
// offsets 121, 11 and 117.
struct Secret {
  unsigned long long w[24];
};

// The secret's 8 bytes at byte offset 8 * q + r (0 < r < 8; q and r known at compile time).
__device__ __forceinline__ unsigned long long unaligned(const Secret &s, int q, int r) {
  return (s.w[q] >> (8 * r)) | (s.w[q + 1] << (64 - 8 * r));
}

__device__ __forceinline__ unsigned long long merge(const unsigned long long *acc,
                                                    const unsigned long long *secret,
                                                    unsigned long long r) {
  for (int i = 0; i < 4; i++) {
    const unsigned long long a = acc[2 * i] ^ secret[2 * i], b = acc[2 * i + 1] ^ secret[2 * i + 1];
    r += (a * b) ^ __umul64hi(a, b);
  }
  r ^= r >> 37;
  r *= PMX1;
  return r ^ (r >> 32);
}

extern "C" __global__ void __launch_bounds__(256)
hrr_fingerprint(const unsigned long long *src, unsigned long long nchunks, unsigned long long *out,
                const Secret secret) {
  const unsigned long long chunk = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (chunk >= nchunks) return; // whole warps leave together
  const unsigned lane = threadIdx.x & 31, stripe = lane >> 1, half = lane & 1;
  // this lane's four of XXH3's eight initial accumulators, chosen by selects (an array
  // indexed by `half` would be local memory)
  unsigned long long acc[4] = {half ? 0x85EBCA77C2B2AE63ull : 0xC2B2AE3Dull,
                               half ? 0x85EBCA77ull : P64_1,
                               half ? 0x27D4EB2F165667C5ull : P64_2,
                               half ? P32_1 : 0x165667B19E3779F9ull};
  // this lane's secret words: key[k] its stripe's (word stripe + 4 * half + k, picked by
  // compares, as indexing the parameter by the lane would copy it to local memory),
  // last_key[k] the last stripe's, scramble[k] the scramble's
  unsigned long long key[4], last_key[4], scramble[4];
  for (int k = 0; k < 4; k++) {
    const unsigned j = stripe + 4 * half + k;
    unsigned long long v = 0;
#pragma unroll
    for (int t = 0; t < 23; t++) v = j == t ? secret.w[t] : v;
    key[k] = v;
    last_key[k] = half ? unaligned(secret, 19 + k, 1) : unaligned(secret, 15 + k, 1);
    scramble[k] = half ? secret.w[20 + k] : secret.w[16 + k];
  }
  const unsigned long long *c = src + chunk * 8192;
  for (int block = 0; block < 64; block++) {
    const unsigned long long *w = c + block * 128 + stripe * 8 + half * 4;
    const bool last = block == 63;
    unsigned long long part[4] = {0, 0, 0, 0};
    // the last block's 16th stripe is XXH3's "last stripe": another secret
    if (!last || stripe < 15) {
      for (int k = 0; k < 4; k++) {
        const unsigned long long v = w[k], x = v ^ key[k];
        part[k ^ 1] += v;
        part[k] += (x & 0xffffffffull) * (x >> 32);
      }
    } else {
      for (int k = 0; k < 4; k++) {
        const unsigned long long v = w[k], x = v ^ last_key[k];
        part[k ^ 1] += v;
        part[k] += (x & 0xffffffffull) * (x >> 32);
      }
    }
    for (int o = 2; o < 32; o <<= 1)
      for (int k = 0; k < 4; k++) part[k] += __shfl_xor_sync(0xffffffffu, part[k], o);
    for (int k = 0; k < 4; k++) {
      acc[k] += part[k];
      if (!last) {
        acc[k] ^= acc[k] >> 47;
        acc[k] ^= scramble[k];
        acc[k] *= P32_1;
      }
    }
  }
  unsigned long long all[8];
  for (int k = 0; k < 4; k++) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, acc[k], 1);
    all[k] = half ? other : acc[k];
    all[4 + k] = half ? acc[k] : other;
  }
  if (lane == 0) {
    unsigned long long lo[8], hi[8];
    for (int i = 0; i < 8; i++) {
      lo[i] = unaligned(secret, 1 + i, 3);
      hi[i] = unaligned(secret, 14 + i, 5);
    }
    const unsigned long long len = 65536;
    out[2 * chunk] = merge(all, lo, len * P64_1);
    out[2 * chunk + 1] = merge(all, hi, ~(len * P64_2));
  }
}
