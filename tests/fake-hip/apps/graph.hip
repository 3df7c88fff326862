// A HIP graph made by stream capture: a memset, two kernels and a device-to-device copy captured
// on a stream (not run then),
// instantiated with hipGraphInstantiate and launched three times, then instantiated again with
// hipGraphInstantiateWithFlags and launched once more; the results read back after each.
//   graph
#include "common.h"

__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void add_into(float *d, const float *s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += s[i];
}

int main() {
  require_device();
  const int n = 4096;
  const size_t bytes = n * sizeof(float);
  const dim3 grid(n / 256), block(256);
  static float host[4096];
  for (int i = 0; i < n; i++) host[i] = (float)(i % 17) * 0.5f;
  float *dx, *dy, *dz;
  CHECK(hipMalloc(&dx, bytes));
  CHECK(hipMalloc(&dy, bytes));
  CHECK(hipMalloc(&dz, bytes));
  CHECK(hipMemset(dz, 0, bytes));
  CHECK(hipMemcpy(dx, host, bytes, hipMemcpyHostToDevice));
  CHECK(hipMemcpy(dy, host, bytes, hipMemcpyHostToDevice));

  hipStream_t s;
  CHECK(hipStreamCreate(&s));
  hipGraph_t g;
  float one = 1.0f;
  int one_bits;
  memcpy(&one_bits, &one, 4);
  CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  CHECK(hipMemsetD32Async((hipDeviceptr_t)dy, one_bits, n, s));
  scale<<<grid, block, 0, s>>>(dx, 1.5f, n);
  add_into<<<grid, block, 0, s>>>(dy, dx, n);
  CHECK(hipMemcpyAsync(dz, dy, bytes, hipMemcpyDeviceToDevice, s));
  CHECK(hipStreamEndCapture(s, &g));
  // captured, not run: dx and dy are unchanged
  CHECK(hipMemcpy(host, dx, bytes, hipMemcpyDeviceToHost));
  show_f32("captured_x", host, n);
  CHECK(hipMemcpy(host, dy, bytes, hipMemcpyDeviceToHost));
  show_f32("captured_y", host, n);

  hipGraphExec_t e;
  CHECK(hipGraphInstantiate(&e, g, NULL, NULL, 0));
  for (int i = 0; i < 3; i++) CHECK(hipGraphLaunch(e, s));
  CHECK(hipStreamSynchronize(s));
  CHECK(hipMemcpy(host, dz, bytes, hipMemcpyDeviceToHost));
  show_f32("graph_z", host, n);

  hipGraphExec_t e2;
  CHECK(hipGraphInstantiateWithFlags(&e2, g, 0));
  CHECK(hipGraphLaunch(e2, s));
  CHECK(hipStreamSynchronize(s));
  CHECK(hipMemcpy(host, dx, bytes, hipMemcpyDeviceToHost));
  show_f32("graph_x", host, n);

  CHECK(hipGraphExecDestroy(e2));
  CHECK(hipGraphExecDestroy(e));
  CHECK(hipGraphDestroy(g));
  CHECK(hipStreamDestroy(s));
  CHECK(hipFree(dz));
  CHECK(hipFree(dy));
  CHECK(hipFree(dx));
  printf("graph: OK\n");
  return 0;
}
