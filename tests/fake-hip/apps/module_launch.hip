// The module API: hipModuleLoadData (from bytes the program then overwrites and frees) and
// hipModuleLoad (from a file), hipModuleGetFunction, and hipModuleLaunchKernel with
// kernelParams and with an `extra` argument buffer, on the null stream and on a stream; with
// `ext`, also hipExtModuleLaunchKernel and hipHccModuleLaunchKernel (sizes in work-items, as
// Tensile launches, with a start and a stop event).
//   module_launch KERNELS.CO [ext]
#include "common.h"
#include <hip/hip_ext.h>

struct Affine {
  float scale;
  int n;
  double bias;
};

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc(*len);
  if (fread(b, 1, *len, f) != *len) exit(2);
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("usage: module_launch KERNELS.CO\n");
    return 2;
  }
  require_device();
  const int n = 777;
  const size_t bytes = n * sizeof(float);
  const unsigned blocks = (n + 127) / 128;

  size_t len;
  unsigned char *image = read_file(argv[1], &len);
  hipModule_t m1, m2;
  CHECK(hipModuleLoadData(&m1, image));
  memset(image, 0xab, len); // the runtime has its copy; so must the recorder
  free(image);
  hipFunction_t f_affine, f_stride, f_fill;
  CHECK(hipModuleGetFunction(&f_affine, m1, "affine"));
  CHECK(hipModuleGetFunction(&f_stride, m1, "grid_stride"));
  CHECK(hipModuleLoad(&m2, argv[1]));
  CHECK(hipModuleGetFunction(&f_fill, m2, "fill_u32"));

  float *in = (float *)malloc(bytes), *out = (float *)malloc(bytes);
  for (int i = 0; i < n; i++) in[i] = (float)(i % 97) - 40.0f;
  float *din, *dout;
  unsigned *du;
  CHECK(hipMalloc(&din, bytes));
  CHECK(hipMalloc(&dout, bytes));
  CHECK(hipMalloc(&du, n * sizeof(unsigned)));
  CHECK(hipMemcpy(din, in, bytes, hipMemcpyHostToDevice));

  Affine p = {1.5f, n, -2.0};
  void *params[] = {&p, &din, &dout};
  CHECK(hipModuleLaunchKernel(f_affine, blocks, 1, 1, 128, 1, 1, 0, 0, params, NULL));
  CHECK(hipMemcpy(out, dout, bytes, hipMemcpyDeviceToHost));
  show_f32("affine", out, n);

  unsigned char buf[16] = {0};
  memcpy(buf, &dout, 8);
  memcpy(buf + 8, &n, 4);
  size_t size = 12;
  void *extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   HIP_LAUNCH_PARAM_END};
  CHECK(hipModuleLaunchKernel(f_stride, 2, 1, 1, 64, 1, 1, 0, 0, NULL, extra));
  CHECK(hipMemcpy(out, dout, bytes, hipMemcpyDeviceToHost));
  show_f32("grid_stride", out, n);

  hipStream_t s;
  CHECK(hipStreamCreate(&s));
  unsigned v = 1000;
  void *fparams[] = {&du, &v, (void *)&n};
  CHECK(hipModuleLaunchKernel(f_fill, blocks, 1, 1, 128, 1, 1, 0, s, fparams, NULL));
  unsigned *hu = (unsigned *)malloc(n * sizeof(unsigned));
  CHECK(hipMemcpyDtoHAsync(hu, du, n * sizeof(unsigned), s));
  CHECK(hipStreamSynchronize(s));
  show_u32("fill_u32", hu, n);

  if (argc > 2 && !strcmp(argv[2], "ext")) {
    hipEvent_t start, stop;
    CHECK(hipEventCreate(&start));
    CHECK(hipEventCreate(&stop));
    unsigned w = 2000;
    void *eparams[] = {&du, &w, (void *)&n};
    CHECK(hipExtModuleLaunchKernel(f_fill, blocks * 128, 1, 1, 128, 1, 1, 0, s, eparams, NULL, start, stop, 0));
    CHECK(hipMemcpyDtoHAsync(hu, du, n * sizeof(unsigned), s));
    CHECK(hipStreamSynchronize(s));
    show_u32("ext fill_u32", hu, n);
    Affine q = {-0.5f, n, 3.0};
    void *qparams[] = {&q, &din, &dout};
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    CHECK(hipHccModuleLaunchKernel(f_affine, blocks * 128, 1, 1, 128, 1, 1, 0, 0, qparams, NULL, NULL, NULL));
#pragma clang diagnostic pop
    CHECK(hipMemcpy(out, dout, bytes, hipMemcpyDeviceToHost));
    show_f32("hcc affine", out, n);
    CHECK(hipEventDestroy(start));
    CHECK(hipEventDestroy(stop));
  }

  CHECK(hipStreamDestroy(s));
  CHECK(hipModuleUnload(m2));
  CHECK(hipModuleUnload(m1));
  CHECK(hipFree(din));
  CHECK(hipFree(dout));
  CHECK(hipFree(du));
  free(in);
  free(out);
  free(hu);
  printf("module_launch done\n");
  return 0;
}
