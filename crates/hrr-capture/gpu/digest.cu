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

// The default secret's 8-byte words at offsets 0, 8, ..., 184 (stripe s reads words s..s+7,
// the scramble words 16..23), and its unaligned words at 121 (the last stripe's), 11 and 117
// (the final merges of the low and high halves).
__constant__ unsigned long long XW[24] = {
    0xbe4ba423396cfeb8ull, 0x1cad21f72c81017cull, 0xdb979083e96dd4deull, 0x1f67b3b7a4a44072ull,
    0x78e5c0cc4ee679cbull, 0x2172ffcc7dd05a82ull, 0x8e2443f7744608b8ull, 0x4c263a81e69035e0ull,
    0xcb00c391bb52283cull, 0xa32e531b8b65d088ull, 0x4ef90da297486471ull, 0xd8acdea946ef1938ull,
    0x3f349ce33f76faa8ull, 0x1d4f0bc7c7bbdcf9ull, 0x3159b4cd4be0518aull, 0x647378d9c97e9fc8ull,
    0xc3ebd33483acc5eaull, 0xeb6313faffa081c5ull, 0x49daf0b751dd0d17ull, 0x9e68d429265516d3ull,
    0xfca1477d58be162bull, 0xce31d07ad1b8f88full, 0x280416958f3acb45ull, 0x7e404bbbcafbd7afull};
__constant__ unsigned long long XLAST[8] = {
    0xea647378d9c97e9full, 0xc5c3ebd33483acc5ull, 0x17eb6313faffa081ull, 0xd349daf0b751dd0dull,
    0x2b9e68d429265516ull, 0x8ffca1477d58be16ull, 0x45ce31d07ad1b8f8ull, 0xaf280416958f3acbull};
__constant__ unsigned long long XLO[8] = {
    0x6dd4de1cad21f72cull, 0xa44072db979083e9ull, 0xe679cb1f67b3b7a4ull, 0xd05a8278e5c0cc4eull,
    0x4608b82172ffcc7dull, 0x9035e08e2443f774ull, 0x52283c4c263a81e6ull, 0x65d088cb00c391bbull};
__constant__ unsigned long long XHI[8] = {
    0xd9c97e9fc83159b4ull, 0x3483acc5ea647378ull, 0xfaffa081c5c3ebd3ull, 0xb751dd0d17eb6313ull,
    0x29265516d349daf0ull, 0x7d58be162b9e68d4ull, 0x7ad1b8f88ffca147ull, 0x958f3acb45ce31d0ull};

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
hrr_fingerprint(const unsigned long long *src, unsigned long long nchunks, unsigned long long *out) {
  const unsigned long long chunk = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (chunk >= nchunks) return; // whole warps leave together
  const unsigned lane = threadIdx.x & 31, stripe = lane >> 1, half = lane & 1;
  // this lane's four accumulators: acc[4 * half + k]
  const unsigned long long init[8] = {0xC2B2AE3Dull, P64_1, P64_2, 0x165667B19E3779F9ull,
                                      0x85EBCA77C2B2AE63ull, 0x85EBCA77ull, 0x27D4EB2F165667C5ull,
                                      P32_1};
  unsigned long long acc[4];
  for (int k = 0; k < 4; k++) acc[k] = init[4 * half + k];
  const unsigned long long *c = src + chunk * 8192;
  for (int block = 0; block < 64; block++) {
    const unsigned long long *w = c + block * 128 + stripe * 8 + half * 4;
    const bool last = block == 63;
    unsigned long long part[4] = {0, 0, 0, 0};
    // the last block's 16th stripe is XXH3's "last stripe": another secret
    if (!last || stripe < 15) {
      for (int k = 0; k < 4; k++) {
        const unsigned i = half * 4 + k;
        const unsigned long long v = w[k], key = v ^ XW[stripe + i];
        part[k ^ 1] += v;
        part[k] += (key & 0xffffffffull) * (key >> 32);
      }
    } else {
      for (int k = 0; k < 4; k++) {
        const unsigned i = half * 4 + k;
        const unsigned long long v = w[k], key = v ^ XLAST[i];
        part[k ^ 1] += v;
        part[k] += (key & 0xffffffffull) * (key >> 32);
      }
    }
    for (int o = 2; o < 32; o <<= 1)
      for (int k = 0; k < 4; k++) part[k] += __shfl_xor_sync(0xffffffffu, part[k], o);
    for (int k = 0; k < 4; k++) {
      acc[k] += part[k];
      if (!last) {
        acc[k] ^= acc[k] >> 47;
        acc[k] ^= XW[16 + half * 4 + k];
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
    const unsigned long long len = 65536;
    out[2 * chunk] = merge(all, XLO, len * P64_1);
    out[2 * chunk + 1] = merge(all, XHI, ~(len * P64_2));
  }
}
