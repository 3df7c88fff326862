/*
 * workload_main.h - the default workload (devices, contexts, code, memory, VMM, streams, events,
 * launches in every form) and the `hidden` mode (kernels reached through the export table and
 * enumeration).
 */
#ifndef HRR_FAKE_CUDA_WORKLOAD_MAIN_H
#define HRR_FAKE_CUDA_WORKLOAD_MAIN_H
#include "workload_common.h"

static void workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  const long loops = g_opts.loops;
  CUdevice dev;
  CUcontext ctx, cur;
  int ver = 0, count = 0, major = 0, minor = 0, sms = 0, lmode = 0;
  size_t total = 0;
  char name[64];

  /* Like cudart: the version is asked before cuInit (a recorder opens its archive then). */
  CK(cu->DriverGetVersion(&ver), "cuDriverGetVersion");
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGetCount(&count), "cuDeviceGetCount");
  CK(cu->DeviceGet(&dev, app_device()), "cuDeviceGet");
  CK(cu->DeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  CK(cu->DeviceGetAttribute(&major, 75, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceGetAttribute(&minor, 76, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceGetAttribute(&sms, 16, dev), "cuDeviceGetAttribute");
  CK(cu->DeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  CK(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
  CK(cu->CtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur != ctx) die_call("cuCtxGetCurrent (wrong context)", -1);
  CK(cu->ModuleGetLoadingMode(&lmode), "cuModuleGetLoadingMode");
  /* a context limit (the device-side malloc heap), as programs using device `new` set it */
  size_t heap = 0;
  CK(cu->CtxSetLimit(2, (size_t)64 << 20), "cuCtxSetLimit");
  CK(cu->CtxGetLimit(&heap, 2), "cuCtxGetLimit");
  if (heap != (size_t)64 << 20) die_call("cuCtxGetLimit (limit not set)", -1);
  CK(cu->CtxSetCacheConfig(1 /* PREFER_SHARED */), "cuCtxSetCacheConfig");
  outf(out, "device name=\"%s\" cc=%d.%d sms=%d mem=%zu driver=%d count=%d", name, major, minor, sms, total, ver,
       count);

  /* code: a library from a fatbin wrapper (what cudart does), and a PTX module */
  unsigned char fatbin[512] __attribute__((aligned(16)));
  struct fatbin_wrapper wrapper = lib_image(fatbin, sizeof fatbin);
  CUlibrary lib;
  CUkernel k_axpy, k_fill, k_gather, k_addg;
  CUfunction f_axpy, f_fill, f_gather, f_mod_axpy;
  CUmodule mod, lmod;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_gather, lib, "gather"), "cuLibraryGetKernel");
  CK(cu->LibraryGetKernel(&k_addg, lib, "add_global"), "cuLibraryGetKernel");
  CK(cu->KernelGetFunction(&f_axpy, k_axpy), "cuKernelGetFunction");
  CK(cu->KernelGetFunction(&f_fill, k_fill), "cuKernelGetFunction");
  CK(cu->KernelGetFunction(&f_gather, k_gather), "cuKernelGetFunction");
  CK(cu->ModuleLoadData(&mod, large_ptx_text()), "cuModuleLoadData");
  CK(cu->ModuleGetFunction(&f_mod_axpy, mod, "axpy"), "cuModuleGetFunction");
  (void)f_axpy;

  /* x, y */
  float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float)), *hr = malloc(n * sizeof(float));
  if (!hx || !hy || !hr) die_call("malloc", -1);
  for (int i = 0; i < n; i++) {
    hx[i] = (float)(i % 97) * 0.25f;
    hy[i] = (float)(i % 13) - 6.0f;
  }
  CUdeviceptr x, y;
  CK(cu->MemAlloc(&x, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(x, hx, n * sizeof(float)), "cuMemcpyHtoD");
  CK(cu->MemcpyHtoD(y, hy, n * sizeof(float)), "cuMemcpyHtoD");

  /* axpy, kernelParams form, on the CUkernel handle (as cudart launches) */
  float a = 2.0f;
  void *axpy_params[] = {&a, &x, &y, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel((CUfunction)k_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, axpy_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "axpy_kparams sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  if (g_opts.mode == MODE_HANG || g_opts.mode == MODE_FAULT) {
    /* A kernel that never finishes (or faults), then the wait that shows it. */
    CUkernel k_bad;
    const char *bad = g_opts.mode == MODE_HANG ? "spin" : "fault";
    CK(cu->LibraryGetKernel(&k_bad, lib, bad), "cuLibraryGetKernel");
    CK(cu->LaunchKernel((CUfunction)k_bad, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
    outf(out, "launched %s", bad);
    outflush(out);
    CK(cu->CtxSynchronize(), "cuCtxSynchronize");
  }
  if (g_opts.mode == MODE_NOISY) {
    /* A kernel whose output is half the program's own nondeterminism (the fake's `noisy`
       writes a value new at every launch into the second half), copied back. */
    CUkernel k_noisy;
    CUdeviceptr nz;
    unsigned hn[256];
    unsigned long long nn = 256;
    CK(cu->LibraryGetKernel(&k_noisy, lib, "noisy"), "cuLibraryGetKernel");
    CK(cu->MemAlloc(&nz, sizeof hn), "cuMemAlloc");
    void *noisy_params[] = {&nz, &nn};
    if (g_opts.noisy_burst) {
      /* `noisy_burst N`: N launches back to back, each into a buffer of its own, then each
         read back (a launch after the first finds the device busy unless replay drains it) */
      enum { MAX_BURST = 16 };
      CUdeviceptr outs[MAX_BURST];
      long count = g_opts.noisy > MAX_BURST ? MAX_BURST : (g_opts.noisy > 1 ? g_opts.noisy : 1);
      for (long i = 0; i < count; i++) {
        CK(cu->MemAlloc(&outs[i], sizeof hn), "cuMemAlloc");
        void *params[] = {&outs[i], &nn};
        CK(cu->LaunchKernel((CUfunction)k_noisy, 1, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
      }
      for (long i = 0; i < count; i++) {
        CK(cu->MemcpyDtoH(hn, outs[i], sizeof hn), "cuMemcpyDtoH");
        CK(cu->MemFree(outs[i]), "cuMemFree");
      }
    }
    /* `noisy N`: N times, each result read back into the same host buffer (one copy repeated) */
    for (long i = 0; i < (g_opts.noisy > 1 && !g_opts.noisy_burst ? g_opts.noisy : 1); i++) {
      CK(cu->LaunchKernel((CUfunction)k_noisy, 1, 1, 1, 256, 1, 1, 0, NULL, noisy_params, NULL), "cuLaunchKernel");
      CK(cu->MemcpyDtoH(hn, nz, sizeof hn), "cuMemcpyDtoH");
    }
    outf(out, "noisy first=%u last=%u", hn[1], hn[255]);
    CK(cu->MemFree(nz), "cuMemFree");
  }
  if (g_opts.mode == MODE_CRASH || g_opts.mode == MODE_ABORT || g_opts.mode == MODE_SEGV) {
    outflush(out);
    if (g_opts.mode == MODE_CRASH) kill(getpid(), SIGKILL);
    if (g_opts.mode == MODE_SEGV) { /* the program's own bug: a store through a null pointer */
      volatile int *volatile nowhere = NULL;
      *nowhere = 1;
    }
    abort();
  }

  /* axpy again, `extra` packed-buffer form, on the module's CUfunction */
  unsigned char pbuf[32];
  float a2 = 0.5f;
  memset(pbuf, 0, sizeof pbuf);
  memcpy(pbuf + 0, &a2, 4);
  memcpy(pbuf + 8, &x, 8);
  memcpy(pbuf + 16, &y, 8);
  memcpy(pbuf + 24, &n, 4);
  size_t pbuf_size = sizeof pbuf;
  void *extra[] = {(void *)1, pbuf, (void *)2, &pbuf_size, (void *)0};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernelAlt(f_mod_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, NULL, extra), "cuLaunchKernel(extra)");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "axpy_extra sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  /* a stream: memset, async H2D from pinned memory, fill_u32 via cuLaunchKernelEx, async D2H */
  CUstream s;
  CUevent e0, e1;
  CUdeviceptr z;
  unsigned *hz;
  int hostfn_calls = 0;
  float ms = -1.0f;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CK(cu->EventCreate(&e0, 0), "cuEventCreate");
  CK(cu->EventCreate(&e1, 0), "cuEventCreate");
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemAllocHost((void **)&hz, n * sizeof(unsigned)), "cuMemAllocHost");
  for (int i = 0; i < n; i++) hz[i] = (unsigned)i * 3u + 1u;
  CK(cu->EventRecord(e0, s), "cuEventRecord");
  CK(cu->MemsetD32Async(z, 0xDEADBEEFu, n, s), "cuMemsetD32Async");
  CK(cu->MemcpyHtoDAsync(z, hz, 1024 * sizeof(unsigned), s), "cuMemcpyHtoDAsync");
  CUdeviceptr zp = z + 2048 * sizeof(unsigned);
  unsigned fv = 0x01020304u;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&zp, &fv, &fcount};
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = 8; /* CU_LAUNCH_ATTRIBUTE_PRIORITY */
  attr.value.priority = 0;
  CUlaunchConfig cfg = {4, 1, 1, BLOCK, 1, 1, 0, s, &attr, 1};
  for (long l = 0; l < loops; l++) CK(cu->LaunchKernelEx(&cfg, f_fill, fill_params, NULL), "cuLaunchKernelEx");
  CK(cu->MemcpyDtoHAsync(hz, z, n * sizeof(unsigned), s), "cuMemcpyDtoHAsync");
  CK(cu->EventRecord(e1, s), "cuEventRecord");
  CK(cu->LaunchHostFunc(s, host_cb, &hostfn_calls), "cuLaunchHostFunc");
  CK(cu->StreamWaitEvent(s, e1, 0), "cuStreamWaitEvent");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->EventSynchronize(e1), "cuEventSynchronize");
  CK(cu->EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  outf(out, "stream_fill sum=%llu fnv=%016llx hostfn=%d", usum(hz, n), fnv1a(hz, n * sizeof(unsigned)),
       hostfn_calls);

  /* gather: a table of device pointers, stored in device memory, chased by the kernel */
  CUdeviceptr table, gout;
  CUdeviceptr *ht = malloc(n * sizeof(CUdeviceptr));
  if (!ht) die_call("malloc", -1);
  for (int i = 0; i < n; i++) ht[i] = y + (CUdeviceptr)((((unsigned)i * 7u) + 3u) % (unsigned)n) * sizeof(float);
  CK(cu->MemAlloc(&table, n * sizeof(CUdeviceptr)), "cuMemAlloc");
  CK(cu->MemAlloc(&gout, n * sizeof(float)), "cuMemAlloc");
  CK(cu->MemcpyHtoD(table, ht, n * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
  void *gather_params[] = {&table, &gout, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel(f_gather, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, gather_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, gout, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "gather sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  /* a __device__ global: find it two ways, set it, use it */
  CUdeviceptr gb, gb2;
  size_t gbs = 0, gbs2 = 0;
  CK(cu->LibraryGetModule(&lmod, lib), "cuLibraryGetModule");
  CK(cu->ModuleGetGlobal(&gb, &gbs, lmod, "g_bias"), "cuModuleGetGlobal");
  CK(cu->LibraryGetGlobal(&gb2, &gbs2, lib, "g_bias"), "cuLibraryGetGlobal");
  if (gb != gb2 || gbs != 4 || gbs2 != 4) die_call("cuLibraryGetGlobal (mismatch)", -1);
  float bias = 1.5f;
  CK(cu->MemcpyHtoD(gb, &bias, sizeof bias), "cuMemcpyHtoD");
  void *addg_params[] = {&y, (void *)&n};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel((CUfunction)k_addg, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, addg_params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(hr, y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "add_global sum=%.6f fnv=%016llx", fsum(hr, n), fnv1a(hr, n * sizeof(float)));

  unsigned mt_dev = 0, mt_host = 0;
  CK(cu->PointerGetAttribute(&mt_dev, 2, x), "cuPointerGetAttribute");
  CK(cu->PointerGetAttribute(&mt_host, 2, (CUdeviceptr)(uintptr_t)hz), "cuPointerGetAttribute");
  outf(out, "ptr_attr x=%u pinned=%u", mt_dev, mt_host);

  /* VMM: reserve 4 MiB, back the first 2 MiB, use it, tear it down */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
  prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
  prop.location.id = dev;
  size_t gran = 0;
  CK(cu->MemGetAllocationGranularity(&gran, &prop, 0), "cuMemGetAllocationGranularity");
  CUdeviceptr va;
  CUmemGenericAllocationHandle mh;
  CK(cu->MemAddressReserve(&va, 2 * gran, 0, 0, 0), "cuMemAddressReserve");
  CK(cu->MemCreate(&mh, gran, &prop, 0), "cuMemCreate");
  CK(cu->MemMap(va, gran, 0, mh, 0), "cuMemMap");
  CUmemAccessDesc acc = {{1, dev}, 3};
  CK(cu->MemSetAccess(va, gran, &acc, 1), "cuMemSetAccess");
  CK(cu->MemsetD8(va, 0x5a, gran), "cuMemsetD8");
  CUdeviceptr vp = va + 4096;
  unsigned vv = 7;
  unsigned long long vcount = 1000;
  void *vfill_params[] = {&vp, &vv, &vcount};
  for (long l = 0; l < loops; l++)
    CK(cu->LaunchKernel(f_fill, 4, 1, 1, BLOCK, 1, 1, 0, NULL, vfill_params, NULL), "cuLaunchKernel");
  size_t vbytes = 64 * 1024;
  unsigned *hv = malloc(vbytes);
  if (!hv) die_call("malloc", -1);
  CK(cu->MemcpyDtoH(hv, va, vbytes), "cuMemcpyDtoH");
  outf(out, "vmm gran=%zu sum=%llu fnv=%016llx", gran, usum(hv, vbytes / 4), fnv1a(hv, vbytes));
  CK(cu->MemUnmap(va, gran), "cuMemUnmap");
  CK(cu->MemRelease(mh), "cuMemRelease");
  CK(cu->MemAddressFree(va, 2 * gran), "cuMemAddressFree");

  /* teardown */
  CK(cu->CtxSynchronize(), "cuCtxSynchronize");
  CK(cu->EventDestroy(e0), "cuEventDestroy");
  CK(cu->EventDestroy(e1), "cuEventDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  mem_free_each((CUdeviceptr[]){x, y, z, table, gout}, 5);
  CK(cu->MemFreeHost(hz), "cuMemFreeHost");
  CK(cu->ModuleUnload(mod), "cuModuleUnload");
  CK(cu->LibraryUnload(lib), "cuLibraryUnload");
  CK(cu->DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  free(hx);
  free(hy);
  free(hr);
  free(ht);
  free(hv);
}

/* The `hidden` mode: kernels reached without a recorded look-up, as a math library does.
 * cuFFT gets its functions through the driver's private export table (cuGetExportTable, which
 * capture passes through unrecorded): here `axpy` comes from the fake's export table; then a
 * module's functions and a library's kernels are enumerated and `fill_u32` launched from each. */
static void hidden_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  use_primary_ctx();

  unsigned char fatbin[512] __attribute__((aligned(16)));
  struct fatbin_wrapper wrapper = lib_image(fatbin, sizeof fatbin);
  CUmodule mod;
  CUlibrary lib;
  CK(cu->ModuleLoadData(&mod, fatbin), "cuModuleLoadData");
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  const void *table = NULL;
  CUuuid id = {{0}};
  CK(cu->GetExportTable(&table, &id), "cuGetExportTable");
  typedef CUresult (*hidden_fn)(CUfunction *, CUmodule, const char *);
  hidden_fn get_function = (hidden_fn)((void *const *)table)[1];
  CUfunction f_axpy;
  CK(get_function(&f_axpy, mod, "axpy"), "export table get_function");
  /* as cuFFT does: an attribute set on the function before its first launch */
  CK(cu->FuncSetAttribute(f_axpy, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, 1024), "cuFuncSetAttribute");

  struct xyz b;
  xyz_alloc(&b, n, 2 * n);
  for (int i = 0; i < n; i++) {
    b.hx[i] = (float)(i % 41) * 0.5f;
    b.hy[i] = (float)(i % 7) - 3.0f;
  }
  xyz_upload(&b, n);
  float a = 3.0f;
  void *axpy_params[] = {&a, &b.x, &b.y, (void *)&n};
  CK(cu->LaunchKernel(f_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, axpy_params, NULL), "cuLaunchKernel");
  CUfunction fns[2];
  CUkernel ks[2];
  CK(cu->ModuleEnumerateFunctions(fns, 2, mod), "cuModuleEnumerateFunctions");
  CK(cu->LibraryEnumerateKernels(ks, 2, lib), "cuLibraryEnumerateKernels");
  /* fns[1] and ks[1] are `fill_u32` (the fatbin's second entry) */
  CUdeviceptr z2 = b.z + n * sizeof(unsigned);
  unsigned v1 = 0xA5A5A5A5u, v2 = 0x5A5A0001u;
  unsigned long long count = (unsigned long long)n;
  void *fill1[] = {&b.z, &v1, &count};
  void *fill2[] = {&z2, &v2, &count};
  CK(cu->LaunchKernel(fns[1], GRID, 1, 1, BLOCK, 1, 1, 0, NULL, fill1, NULL), "cuLaunchKernel");
  CK(cu->LaunchKernel((CUfunction)ks[1], GRID, 1, 1, BLOCK, 1, 1, 0, NULL, fill2, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(b.hy, b.y, n * sizeof(float)), "cuMemcpyDtoH");
  CK(cu->MemcpyDtoH(b.hz, b.z, 2 * n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "hidden axpy sum=%.6f fnv=%016llx", fsum(b.hy, n), fnv1a(b.hy, n * sizeof(float)));
  outf(out, "hidden fill sum=%llu fnv=%016llx", usum(b.hz, 2 * n), fnv1a(b.hz, 2 * n * sizeof(unsigned)));
  free(b.hx);
  free(b.hy);
  free(b.hz);
}

/* The `reload` mode: `axpy` of a module built from PTX launched, the module unloaded, then
 * `axpy` of a fatbin module launched: the fake hands the second function out at the freed
 * first one's address (it reuses freed function blocks, as drivers reuse handles), so capture must not take what it
 * knew of that address for the new function (its code object is the fatbin's). Then the same
 * address once more, for another kernel reached as cuFFT reaches its kernels. */
static void reload_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  use_primary_ctx();
  struct xyz b;
  xyz_alloc(&b, n, n);
  for (int i = 0; i < n; i++) {
    b.hx[i] = (float)(i % 13);
    b.hy[i] = 1.0f;
  }
  xyz_upload(&b, n);
  float a = 2.0f;
  void *params[] = {&a, &b.x, &b.y, (void *)&n};
  CUmodule first, second;
  CUfunction f1, f2;
  CK(cu->ModuleLoadData(&first, k_ptx_text), "cuModuleLoadData");
  CK(cu->ModuleGetFunction(&f1, first, "axpy"), "cuModuleGetFunction");
  CK(cu->LaunchKernel(f1, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
  CK(cu->ModuleUnload(first), "cuModuleUnload");
  unsigned char fatbin[512] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin, sizeof fatbin, k_lib_text)) die_call("make_fatbin", -1);
  CK(cu->ModuleLoadData(&second, fatbin), "cuModuleLoadData");
  CK(cu->ModuleGetFunction(&f2, second, "axpy"), "cuModuleGetFunction");
  CK(cu->LaunchKernel(f2, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(b.hy, b.y, n * sizeof(float)), "cuMemcpyDtoH");
  outf(out, "reload same_handle=%d sum=%.3f", f1 == f2, fsum(b.hy, n));
  CK(cu->ModuleUnload(second), "cuModuleUnload");
  /* Third, as cuFFT does: a module whose first function is `fill_u32`, that function reached
   * through the export table (no recorded look-up) at the address `axpy` had, an attribute
   * set on it, then launched. */
  static const char third_text[] = "// hrr fake-cuda fatbin payload\n.entry fill_u32\n.entry axpy\n";
  unsigned char fatbin3[256] __attribute__((aligned(16)));
  if (!make_fatbin(fatbin3, sizeof fatbin3, third_text)) die_call("make_fatbin", -1);
  CUmodule third;
  CUfunction f3;
  CK(cu->ModuleLoadData(&third, fatbin3), "cuModuleLoadData");
  const void *table = NULL;
  CUuuid id = {{0}};
  CK(cu->GetExportTable(&table, &id), "cuGetExportTable");
  typedef CUresult (*hidden_fn)(CUfunction *, CUmodule, const char *);
  CK(((hidden_fn)((void *const *)table)[1])(&f3, third, "fill_u32"), "export table get_function");
  CK(cu->FuncSetAttribute(f3, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, 1024), "cuFuncSetAttribute");
  unsigned v = 0xC0DE0003u;
  unsigned long long count = (unsigned long long)n;
  void *fill[] = {&b.z, &v, &count};
  CK(cu->LaunchKernel(f3, GRID, 1, 1, BLOCK, 1, 1, 0, NULL, fill, NULL), "cuLaunchKernel");
  CK(cu->MemcpyDtoH(b.hz, b.z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "reload hidden same_handle=%d fill sum=%llu", f3 == f1, usum(b.hz, n));
  CK(cu->ModuleUnload(third), "cuModuleUnload");
  free(b.hx);
  free(b.hy);
  free(b.hz);
}

#endif
