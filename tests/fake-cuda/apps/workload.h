/*
 * workload.h - the CUDA driver workload shared by driver_app and direct_app: the modes and
 * app_main() (the workloads themselves are in workload_main.h and workload_graphs.h).
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

static void *thread_main(void *arg) {
  workload(arg);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: %s [crash|abort|hang|fault|hidden|noisy|fork|nocuda|threads [N]|graph|graph_nodes|graph_cond|graph_capture|loop N|launches N]\n", g_prog);
  exit(2);
}

/* resolve() fills g_cu; it must not initialise CUDA. */
static int app_main(int argc, char **argv, const char *prog, void (*resolve)(void)) {
  g_prog = prog;
  if (argc > 1) {
    if (!strcmp(argv[1], "crash")) g_opts.mode = MODE_CRASH;
    else if (!strcmp(argv[1], "abort")) g_opts.mode = MODE_ABORT;
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
    else if (!strcmp(argv[1], "hang")) g_opts.mode = MODE_HANG;
    else if (!strcmp(argv[1], "fault")) g_opts.mode = MODE_FAULT;
    else if (!strcmp(argv[1], "hidden")) g_opts.mode = MODE_HIDDEN;
    else if (!strcmp(argv[1], "noisy")) g_opts.mode = MODE_NOISY;
    else if (!strcmp(argv[1], "launches") && argc > 2) {
      char *end;
      g_opts.mode = MODE_LAUNCHES;
      g_opts.loops = strtol(argv[2], &end, 10);
      if (*end || g_opts.loops < 1) usage();
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
    for (long i = 0; i < g_opts.loops; i++)
      CK(g_cu.LaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
    CK(g_cu.CtxSynchronize(), "cuCtxSynchronize");
    printf("launches %ld done\n", g_opts.loops);
    return 0;
  }
  if (g_opts.mode == MODE_HIDDEN) {
    static struct outbuf ob;
    hidden_workload(&ob);
    outflush(&ob);
    return 0;
  }
  if (g_opts.mode == MODE_GRAPH || g_opts.mode == MODE_GRAPH_NODES || g_opts.mode == MODE_GRAPH_COND ||
      g_opts.mode == MODE_GRAPH_CAPTURE) {
    static struct outbuf ob;
    if (g_opts.mode == MODE_GRAPH) graph_workload(&ob);
    else if (g_opts.mode == MODE_GRAPH_CAPTURE) graph_capture_workload(&ob);
    else if (g_opts.mode == MODE_GRAPH_NODES) graph_nodes_workload(&ob);
    else graph_cond_workload(&ob);
    outflush(&ob);
    return 0;
  }

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
  static struct outbuf ob;
  workload(&ob);
  outflush(&ob);
  return 0;
}

#endif
