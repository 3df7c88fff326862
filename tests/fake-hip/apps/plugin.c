/* A plugin linked against the HIP runtime and loaded with dlopen(RTLD_LOCAL) by plugin_host,
 * the way Python loads PyTorch's extension libraries: the runtime is then in the plugin's local
 * scope only, not in the global one an LD_PRELOAD library searches with RTLD_NEXT. Plain C
 * with the few HIP declarations it needs, so it builds with cc alone. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef int hipError_t;
hipError_t hipGetDeviceCount(int *count);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipMemcpy(void *dst, const void *src, size_t size, int kind);
hipError_t hipMemset(void *dst, int value, size_t size);
hipError_t hipFree(void *ptr);
/* ROCm 6.1+; declared weak so the plugin also loads on runtimes without it. */
__attribute__((weak)) hipError_t hipGetProcAddress(const char *symbol, void **pfn, int version,
                                                   unsigned long long flags, int *status);

int plugin_run(void) {
  int n = 0;
  hipError_t e = hipGetDeviceCount(&n);
  if (e != 0 || n < 1) {
    printf("plugin: hipGetDeviceCount %d, count %d\n", e, n);
    return 3;
  }
  float h[256], back[256];
  for (int i = 0; i < 256; i++) h[i] = 1.5f * (float)i;
  /* hipMemset the way libraries built for ROCm 6.1+ find entry points, when the runtime can. */
  hipError_t (*memset_fn)(void *, int, size_t) = hipMemset;
  void *p = NULL;
  if (hipGetProcAddress && hipGetProcAddress("hipMemset", &p, 60100000, 0, NULL) == 0 && p)
    memset_fn = (hipError_t(*)(void *, int, size_t))p;
  void *d = NULL;
  if (hipMalloc(&d, sizeof h) || hipMemcpy(d, h, sizeof h, 1) || memset_fn(d, 0, 64) ||
      hipMemcpy(back, d, sizeof back, 2) || hipFree(d)) {
    printf("plugin: a HIP call failed\n");
    return 2;
  }
  uint64_t hash = 0xcbf29ce484222325ULL;
  const unsigned char *b = (const unsigned char *)back;
  for (size_t i = 0; i < sizeof back; i++) hash = (hash ^ b[i]) * 0x100000001b3ULL;
  printf("plugin hash=%016llx\n", (unsigned long long)hash);
  return 0;
}
