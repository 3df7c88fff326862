// <<<>>> launches of kernels with pointer, scalar, by-value struct and hidden arguments, a
// __constant__ variable set with hipMemcpyToSymbol, and copies in every direction.
//   vector_add          run the workload
//   vector_add nohip    exit before any HIP call (the fat binary is still registered at start-up)
#include "common.h"

struct Affine {
  float scale;
  int n;
  double bias;
};

__constant__ float c_coeffs[4];

__global__ void vadd(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void saxpy(float s, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + y[i];
}

__global__ void affine_k(Affine p, const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = in[i] * p.scale + (float)p.bias;
}

// printf makes the compiler add hidden arguments (hostcall buffer, global offsets).
__global__ void count_over(const float *x, int n, float t, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (n < 0 && i == 0) printf("count_over: bad n %d\n", n);
  if (i < n && x[i] > t) atomicAdd(out, 1);
}

__global__ void poly(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = c_coeffs[0] + x[i] * (c_coeffs[1] + x[i] * (c_coeffs[2] + x[i] * c_coeffs[3]));
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "nohip")) {
    printf("nohip ok\n");
    return 0;
  }
  require_device();
  const int n = 1000;
  const size_t bytes = n * sizeof(float);
  const dim3 grid((n + 255) / 256), block(256);
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
  for (int i = 0; i < n; i++) {
    a[i] = 0.5f * i;
    b[i] = 1000.0f - i;
  }
  hipDeviceProp_t prop;
  CHECK(hipGetDeviceProperties(&prop, 0));
  float *da, *db, *dc;
  int *dcount;
  CHECK(hipMalloc(&da, bytes));
  CHECK(hipMalloc(&db, bytes));
  CHECK(hipMalloc(&dc, bytes));
  CHECK(hipMalloc(&dcount, sizeof(int)));
  CHECK(hipMemcpy(da, a, bytes, hipMemcpyHostToDevice));
  CHECK(hipMemcpyHtoD(db, b, bytes));

  vadd<<<grid, block>>>(da, db, dc, n);
  CHECK(hipGetLastError());
  CHECK(hipMemcpy(c, dc, bytes, hipMemcpyDeviceToHost));
  show_f32("vadd", c, n);

  saxpy<<<grid, block>>>(2.0f, da, dc, n);
  CHECK(hipMemcpy(c, dc, bytes, hipMemcpyDefault));
  show_f32("saxpy", c, n);

  Affine p = {0.5f, n, 3.25};
  affine_k<<<grid, block>>>(p, dc, db);
  CHECK(hipMemcpyDtoH(c, db, bytes));
  show_f32("affine", c, n);

  int count = -1;
  CHECK(hipMemset(dcount, 0, sizeof(int)));
  count_over<<<grid, block>>>(dc, n, 1000.0f, dcount);
  CHECK(hipMemcpy(&count, dcount, sizeof(int), hipMemcpyDeviceToHost));
  printf("%-14s %d\n", "count_over", count);

  const float coeffs[4] = {1.0f, 0.5f, 0.25f, 0.125f};
  CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_coeffs), coeffs, sizeof coeffs));
  poly<<<grid, block>>>(da, dc, n);
  CHECK(hipDeviceSynchronize());
  CHECK(hipMemcpy(c, dc, bytes, hipMemcpyDeviceToHost));
  show_f32("poly", c, n);
  float back[4] = {0};
  CHECK(hipMemcpyFromSymbol(back, HIP_SYMBOL(c_coeffs), sizeof back));
  show_f32("c_coeffs", back, 4);

  CHECK(hipMemcpyDtoD(db, dc, bytes));
  CHECK(hipMemcpy(c, db, bytes, hipMemcpyDeviceToHost));
  show_f32("dtod", c, n);

  CHECK(hipFree(da));
  CHECK(hipFree(db));
  CHECK(hipFree(dc));
  CHECK(hipFree(dcount));
  free(a);
  free(b);
  free(c);
  printf("vector_add done\n");
  return 0;
}
