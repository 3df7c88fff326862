// Kernels loaded by module_launch through hipModuleLoadData / hipModuleLoad
// (built with hipcc --genco: an offload bundle of device code only).
#include <hip/hip_runtime.h>

struct Affine {
  float scale;
  int n;
  double bias;
};

extern "C" __global__ void affine(Affine p, const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = in[i] * p.scale + (float)p.bias;
}

extern "C" __global__ void grid_stride(float *x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] *= 2.0f;
}

extern "C" __global__ void fill_u32(unsigned *p, unsigned v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v + (unsigned)i;
}
