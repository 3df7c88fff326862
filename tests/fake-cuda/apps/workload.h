/*
 * workload.h - the CUDA driver workload shared by driver_app and direct_app: the modes and
 * app_main() (the workloads themselves are in workload_main.h and workload_graphs.h; the
 * `two_devices` one is here).
 *
 * Each app fills a `struct cu_api` its own way (cuGetProcAddress, or dlsym of
 * the versioned export names) and then calls app_main().  Everything that is
 * printed on stdout is a function of the computed data only (never of
 * addresses or timings), so captured, replayed and plain runs can be
 * compared line by line.
 */
#ifndef HRR_FAKE_CUDA_WORKLOAD_H
#define HRR_FAKE_CUDA_WORKLOAD_H
#include "workload_main.h"
#include "workload_graphs.h"

/* The `chain N` mode: N launches in a row on the default stream, each with arguments of its own
 * and their order significant (every 16th, `fill_u32`, overwrites what the `axpy`s before it
 * added; the `axpy`s scale by a factor of their own), then the result copied back. */
/* 128 KiB of straight-line code (8-byte no-ops) that does nothing: run between launches, it
 * evicts the previous launch's code from the first-level instruction cache
 * (FAKE_APP_POLLUTE_CODE). */
static void run_other_code(void) {
#if defined(__x86_64__)
  __asm__ volatile(".rept 16384\n\t.byte 0x0f,0x1f,0x84,0x00,0x00,0x00,0x00,0x00\n\t.endr" ::: "memory");
#endif
}

static void chain_workload(long launches) {
  enum { CHAIN_N = 256 };
  CUlibrary lib = setup_library();
  CUkernel k_axpy, k_fill;
  CK(g_cu.LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  CK(g_cu.LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");
  float hx[CHAIN_N], hy[CHAIN_N];
  for (int i = 0; i < CHAIN_N; i++) {
    hx[i] = (float)(i % 5) + 0.5f;
    hy[i] = 0.0f;
  }
  CUdeviceptr x, y;
  CK(g_cu.MemAlloc(&x, sizeof hx), "cuMemAlloc");
  CK(g_cu.MemAlloc(&y, sizeof hy), "cuMemAlloc");
  CK(g_cu.MemcpyHtoD(x, hx, sizeof hx), "cuMemcpyHtoD");
  CK(g_cu.MemcpyHtoD(y, hy, sizeof hy), "cuMemcpyHtoD");
  for (long i = 0; i < launches; i++) {
    if (i % 16 == 5) {
      float f = (float)i;
      unsigned v;
      unsigned long long count = CHAIN_N;
      memcpy(&v, &f, sizeof v);
      void *p[] = {&y, &v, &count};
      CK(g_cu.LaunchKernel((CUfunction)k_fill, 1, 1, 1, CHAIN_N, 1, 1, 0, NULL, p, NULL), "cuLaunchKernel");
    } else {
      float a = (float)(i % 9) - 4.0f;
      int n = CHAIN_N;
      void *p[] = {&a, &x, &y, &n};
      CK(g_cu.LaunchKernel((CUfunction)k_axpy, 1, 1, 1, CHAIN_N, 1, 1, 0, NULL, p, NULL), "cuLaunchKernel");
    }
  }
  CK(g_cu.MemcpyDtoH(hy, y, sizeof hy), "cuMemcpyDtoH");
  printf("chain %ld sum=%.6f fnv=%016llx\n", launches, fsum(hy, CHAIN_N), fnv1a(hy, sizeof hy));
}

/* The `two_devices` mode (run the fake with FAKE_CUDA_DEVICES=2): the primary contexts of
 * devices 0 and 1, a buffer filled on each (the context made current before each allocation
 * and launch), device 1's tripled by a kernel of a module loaded in device 1's context, peer
 * access enabled from device 0 to 1, a kernel on device 0 adding device 1's buffer into the
 * first half of its own, device 1's buffer copied into the second half of device 0's with
 * cuMemcpyPeer and cuMemcpyPeerAsync, then device 0's buffer copied back. As cudart does,
 * device 1's primary context is made current before the retain that opens it is recorded (taken
 * through the fake's private entry point first). */
static void two_devices_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  CUdevice d0, d1;
  CUcontext c0, c1;
  CK(cu->Init(0), "cuInit");
  CK(cu->DeviceGet(&d0, 0), "cuDeviceGet");
  CK(cu->DeviceGet(&d1, 1), "cuDeviceGet");
  if (cu->PrimaryContextPrivately) CK(cu->CtxSetCurrent(cu->PrimaryContextPrivately(d1)), "cuCtxSetCurrent");
  CK(cu->DevicePrimaryCtxRetain(&c0, d0), "cuDevicePrimaryCtxRetain");
  CK(cu->DevicePrimaryCtxRetain(&c1, d1), "cuDevicePrimaryCtxRetain");
  CK(cu->CtxSetCurrent(c0), "cuCtxSetCurrent");
  CUlibrary lib = setup_library();
  CUkernel k_fill;
  CK(cu->LibraryGetKernel(&k_fill, lib, "fill_u32"), "cuLibraryGetKernel");
  const size_t bytes = n * sizeof(unsigned);
  CUdeviceptr a, b;
  CK(cu->MemAlloc(&a, 2 * bytes), "cuMemAlloc");
  unsigned long long count = 2ull * n;
  unsigned va = 0x0A000000u;
  void *pa[] = {&a, &va, &count};
  const unsigned grid = (2 * n + BLOCK - 1) / BLOCK;
  CK(cu->LaunchKernel((CUfunction)k_fill, grid, 1, 1, BLOCK, 1, 1, 0, NULL, pa, NULL), "cuLaunchKernel");
  CK(cu->CtxSetCurrent(c1), "cuCtxSetCurrent");
  CK(cu->MemAlloc(&b, bytes), "cuMemAlloc");
  unsigned vb = 0x0B000000u;
  unsigned long long nb = n;
  void *pb[] = {&b, &vb, &nb};
  CK(cu->LaunchKernel((CUfunction)k_fill, grid / 2 + 1, 1, 1, BLOCK, 1, 1, 0, NULL, pb, NULL), "cuLaunchKernel");
  /* a module loaded in device 1's context: its functions are that context's */
  CUmodule mod1;
  CUfunction f_axpy1;
  CK(cu->ModuleLoadData(&mod1, k_ptx_text), "cuModuleLoadData");
  CK(cu->ModuleGetFunction(&f_axpy1, mod1, "axpy"), "cuModuleGetFunction");
  float two = 2.0f;
  int ni = n;
  void *pt[] = {&two, &b, &b, &ni};
  CK(cu->LaunchKernel(f_axpy1, grid / 2 + 1, 1, 1, BLOCK, 1, 1, 0, NULL, pt, NULL), "cuLaunchKernel");
  CK(cu->CtxSynchronize(), "cuCtxSynchronize");
  CK(cu->CtxSetCurrent(c0), "cuCtxSetCurrent");
  CK(cu->CtxEnablePeerAccess(c1, 0), "cuCtxEnablePeerAccess");
  /* device 0 reads device 1's buffer directly (peer access) */
  CUkernel k_axpy;
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  float one = 1.0f;
  void *pp[] = {&one, &b, &a, &ni};
  CK(cu->LaunchKernel((CUfunction)k_axpy, grid / 2 + 1, 1, 1, BLOCK, 1, 1, 0, NULL, pp, NULL), "cuLaunchKernel");
  CK(cu->MemcpyPeer(a + bytes, c0, b, c1, bytes / 2), "cuMemcpyPeer");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CK(cu->MemcpyPeerAsync(a + bytes + bytes / 2, c0, b + bytes / 2, c1, bytes / 2, s), "cuMemcpyPeerAsync");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  unsigned *h = malloc(2 * bytes);
  if (!h) die_call("malloc", -1);
  CK(cu->MemcpyDtoH(h, a, 2 * bytes), "cuMemcpyDtoH");
  outf(out, "two devices sum=%llu fnv=%016llx", usum(h, 2 * n), fnv1a(h, 2 * bytes));
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(a), "cuMemFree");
  CK(cu->CtxSetCurrent(c1), "cuCtxSetCurrent");
  CK(cu->MemFree(b), "cuMemFree");
  free(h);
}


static void *thread_main(void *arg) {
  workload(arg);
  return NULL;
}

/* One workload, its output printed at its end; the program's exit status. */
static int run_one(void (*w)(struct outbuf *)) {
  static struct outbuf ob;
  w(&ob);
  outflush(&ob);
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: %s [crash|abort|segv|hang|fault|hidden|reload|noisy [N]|noisy_burst [N]|fork|nocuda|threads [N]|graph|graph_nodes|graph_cond|graph_cond_capture|two_devices|graph_capture|loop N|launches N [WORDS [pinned]]|chain N]\n", g_prog);
  exit(2);
}

/* resolve() fills g_cu; it must not initialise CUDA. */
static int app_main(int argc, char **argv, const char *prog, void (*resolve)(void)) {
  g_prog = prog;
  if (argc > 1) {
    if (!strcmp(argv[1], "crash")) g_opts.mode = MODE_CRASH;
    else if (!strcmp(argv[1], "abort")) g_opts.mode = MODE_ABORT;
    else if (!strcmp(argv[1], "segv")) g_opts.mode = MODE_SEGV;
    else if (!strcmp(argv[1], "fork")) g_opts.mode = MODE_FORK;
    else if (!strcmp(argv[1], "nocuda")) g_opts.mode = MODE_NOCUDA;
    else if (!strcmp(argv[1], "threads")) {
      g_opts.mode = MODE_THREADS;
      if (argc > 2) { /* threads N: each thread's workload repeated N times */
        char *end;
        g_opts.loops = strtol(argv[2], &end, 10);
        if (*end || g_opts.loops < 1) usage();
      }
    }
    else if (!strcmp(argv[1], "graph")) g_opts.mode = MODE_GRAPH;
    else if (!strcmp(argv[1], "graph_nodes")) g_opts.mode = MODE_GRAPH_NODES;
    else if (!strcmp(argv[1], "graph_capture")) g_opts.mode = MODE_GRAPH_CAPTURE;
    else if (!strcmp(argv[1], "graph_cond")) g_opts.mode = MODE_GRAPH_COND;
    else if (!strcmp(argv[1], "graph_cond_capture")) g_opts.mode = MODE_GRAPH_COND_CAPTURE;
    else if (!strcmp(argv[1], "two_devices")) g_opts.mode = MODE_TWO_DEVICES;
    else if (!strcmp(argv[1], "hang")) g_opts.mode = MODE_HANG;
    else if (!strcmp(argv[1], "fault")) g_opts.mode = MODE_FAULT;
    else if (!strcmp(argv[1], "hidden")) g_opts.mode = MODE_HIDDEN;
    else if (!strcmp(argv[1], "reload")) g_opts.mode = MODE_RELOAD;
    else if (!strcmp(argv[1], "noisy") || !strcmp(argv[1], "noisy_burst")) {
      g_opts.mode = MODE_NOISY;
      g_opts.noisy_burst = !strcmp(argv[1], "noisy_burst");
      if (argc > 2) {
        char *end;
        g_opts.noisy = strtol(argv[2], &end, 10);
        if (*end || g_opts.noisy < 1) usage();
      }
    }
    else if ((!strcmp(argv[1], "launches") || !strcmp(argv[1], "chain")) && argc > 2) {
      char *end;
      g_opts.mode = !strcmp(argv[1], "chain") ? MODE_CHAIN : MODE_LAUNCHES;
      g_opts.loops = strtol(argv[2], &end, 10);
      if (*end || g_opts.loops < 1) usage();
      if (g_opts.mode == MODE_LAUNCHES && argc > 3) {
        g_opts.arg_words = strtol(argv[3], &end, 10);
        if (*end || g_opts.arg_words < 1 || g_opts.arg_words > 512) usage();
        g_opts.pinned = argc > 4 && !strcmp(argv[4], "pinned");
      }
    } else if (!strcmp(argv[1], "loop") && argc > 2) {
      char *end;
      g_opts.loops = strtol(argv[2], &end, 10);
      if (*end || g_opts.loops < 1) usage();
    } else usage();
  }
  if (g_opts.mode == MODE_NOCUDA) {
    printf("nocuda ok\n");
    return 0;
  }
  resolve();

  if (g_opts.mode == MODE_LAUNCHES) { /* N launches of a kernel that does nothing */
    CUlibrary lib = setup_library();
    CUkernel k;
    CK(g_cu.LibraryGetKernel(&k, lib, "idle"), "cuLibraryGetKernel");
    unsigned long long v = 0;
    void *params[] = {&v};
    /* With WORDS: the arguments as one buffer of device pointers and sizes (as PyTorch's
     * kernels take structs of them), handed over in `extra`; with `pinned`, a mapped pinned
     * region (which capture tracks) exists beside them, unreferenced. */
    static unsigned long long words[512];
    size_t bytes = (size_t)g_opts.arg_words * 8;
    void *extra[] = {(void *)1 /* BUFFER_POINTER */, words, (void *)2 /* BUFFER_SIZE */, &bytes, NULL};
    if (g_opts.arg_words) {
      CUdeviceptr d;
      CK(g_cu.MemAlloc(&d, 1 << 20), "cuMemAlloc");
      for (long i = 0; i < g_opts.arg_words; i++) words[i] = i % 3 ? d + 64 * i : (unsigned long long)i;
    }
    if (g_opts.pinned) {
      void *h;
      if (!g_cu.MemHostAlloc) usage();
      CK(g_cu.MemHostAlloc(&h, 1 << 20, 0x02 /* DEVICEMAP */), "cuMemHostAlloc");
    }
    /* FAKE_APP_POLLUTE_KB=K: K KiB of other memory touched before each launch, as an
     * interpreter's work between a framework's launches evicts what the previous launch left in
     * the caches (the cost a launch's hook then pays in cache misses). */
    const char *pk = getenv("FAKE_APP_POLLUTE_KB");
    size_t pollute = pk ? strtoul(pk, NULL, 10) * 1024 : 0;
    volatile unsigned char *other = pollute ? calloc(pollute, 1) : NULL;
    if (pollute && !other) {
      fprintf(stderr, "%s: FAKE_APP_POLLUTE_KB: out of memory\n", g_prog);
      exit(1);
    }
    /* FAKE_APP_POLLUTE_CODE=1: 128 KiB of other code run before each launch (as a real
     * driver's launch path runs between two of the program's launches), so the first-level
     * instruction cache holds nothing of the previous launch's hook: the cost of the code lines
     * a hook touches, in wall time (scripts/bench-launch-wall.sh). x86-64 only. */
    const char *pc = getenv("FAKE_APP_POLLUTE_CODE");
    int pollute_code = pc && *pc == '1';
    /* FAKE_APP_LOOP_TIME=1: the loop's ns a launch on stderr (scripts/bench-launch-wall.sh) */
    const char *lt = getenv("FAKE_APP_LOOP_TIME");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < g_opts.loops; i++) {
      for (size_t b = 0; b < pollute; b += 64) other[b]++;
      if (pollute_code) run_other_code();
      CK(g_cu.LaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, g_opts.arg_words ? NULL : params,
                           g_opts.arg_words ? extra : NULL), "cuLaunchKernel");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (lt && *lt == '1')
      fprintf(stderr, "loop_ns_per_launch %.1f\n",
              ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)(g_opts.loops ? g_opts.loops : 1));
    CK(g_cu.CtxSynchronize(), "cuCtxSynchronize");
    printf("launches %ld done\n", g_opts.loops);
    return 0;
  }
  if (g_opts.mode == MODE_CHAIN) {
    chain_workload(g_opts.loops);
    return 0;
  }
  if (g_opts.mode == MODE_HIDDEN) return run_one(hidden_workload);
  if (g_opts.mode == MODE_RELOAD) return run_one(reload_workload);
  if (g_opts.mode == MODE_GRAPH) return run_one(graph_workload);
  if (g_opts.mode == MODE_GRAPH_CAPTURE) return run_one(graph_capture_workload);
  if (g_opts.mode == MODE_GRAPH_NODES) return run_one(graph_nodes_workload);
  if (g_opts.mode == MODE_GRAPH_COND_CAPTURE) return run_one(graph_cond_capture_workload);
  if (g_opts.mode == MODE_GRAPH_COND) return run_one(graph_cond_workload);
  if (g_opts.mode == MODE_TWO_DEVICES) return run_one(two_devices_workload);
  if (g_opts.mode == MODE_THREADS) {
    static struct outbuf ob[2];
    pthread_t t[2];
    ob[0].prefix = "[t0] ";
    ob[1].prefix = "[t1] ";
    for (int i = 0; i < 2; i++)
      if (pthread_create(&t[i], NULL, thread_main, &ob[i])) die_call("pthread_create", -1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    outflush(&ob[0]);
    outflush(&ob[1]);
    return 0;
  }
  if (g_opts.mode == MODE_FORK) {
    static struct outbuf ob;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) die_call("fork", -1);
    if (pid == 0) {
      ob.prefix = "[child] ";
      workload(&ob);
      outflush(&ob);
      _exit(0);
    }
    ob.prefix = "[parent] ";
    workload(&ob);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) die_call("waitpid", -1);
    outflush(&ob);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "%s: child failed (status %d)\n", g_prog, st);
      return 1;
    }
    return 0;
  }
  return run_one(workload);
}

#endif
