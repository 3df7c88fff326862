/*
 * workload_graphs.h - the graph workloads: stream capture (`graph`, `graph_capture`), explicit node
 * construction and updates (`graph_nodes`), conditional nodes (`graph_cond`).
 */
#ifndef HRR_FAKE_CUDA_WORKLOAD_GRAPHS_H
#define HRR_FAKE_CUDA_WORKLOAD_GRAPHS_H
#include "workload_common.h"

/* cuGraphExecDestroy of e, then cuGraphDestroy of g. */
static void exec_graph_destroy(CUgraphExec e, CUgraph g) {
  CK(g_cu.GraphExecDestroy(e), "cuGraphExecDestroy");
  CK(g_cu.GraphDestroy(g), "cuGraphDestroy");
}

/* The `graph` mode: a few launches, a memset and an H2D copy captured from a stream into a
 * graph (GLOBAL capture mode, as cudaStreamBeginCapture's default), instantiated two ways and
 * launched 3 times; then an explicitly built (empty) graph instantiated and launched once. */
static void graph_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  int ver = 0;
  CK(cu->DriverGetVersion(&ver), "cuDriverGetVersion");
  struct kernel_run r;
  kernel_run_open(&r, n);
  float head[64];
  for (int i = 0; i < n; i++) {
    r.b.hx[i] = (float)(i % 89) * 0.5f;
    r.b.hy[i] = (float)(i % 11) - 5.0f;
  }
  for (int i = 0; i < 64; i++) head[i] = (float)i * 0.125f;
  xyz_upload(&r.b, n);
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");

  float a = 1.5f;
  void *axpy_params[] = {&a, &r.b.x, &r.b.y, (void *)&n};
  CUdeviceptr zp = r.b.z + 1024 * sizeof(unsigned);
  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 512;
  void *fill_params[] = {&zp, &fv, &fcount};
  CUgraph g;
  CK(cu->StreamBeginCapture(s, 0), "cuStreamBeginCapture"); /* CU_STREAM_CAPTURE_MODE_GLOBAL */
  CK(cu->MemsetD32Async(r.b.z, 0x11111111u, n, s), "cuMemsetD32Async");
  CK(cu->MemcpyHtoDAsync(r.b.x, head, sizeof head, s), "cuMemcpyHtoDAsync");
  CK(cu->LaunchKernel((CUfunction)r.k_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, axpy_params, NULL), "cuLaunchKernel");
  CK(cu->LaunchKernel((CUfunction)r.k_fill, 2, 1, 1, BLOCK, 1, 1, 0, s, fill_params, NULL), "cuLaunchKernel");
  CK(cu->StreamEndCapture(s, &g), "cuStreamEndCapture");

  CUgraphExec e1, e2;
  CUDA_GRAPH_INSTANTIATE_PARAMS ip;
  memset(&ip, 0, sizeof ip);
  CK(cu->GraphInstantiateWithFlags(&e1, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphInstantiateWithParams(&e2, g, &ip), "cuGraphInstantiateWithParams");
  CK(cu->GraphLaunch(e1, s), "cuGraphLaunch");
  CK(cu->GraphLaunch(e1, s), "cuGraphLaunch");
  CK(cu->GraphLaunch(e2, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->MemcpyDtoH(r.b.hy, r.b.y, n * sizeof(float)), "cuMemcpyDtoH");
  CK(cu->MemcpyDtoH(r.b.hz, r.b.z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "graph_axpy sum=%.6f fnv=%016llx", fsum(r.b.hy, n), fnv1a(r.b.hy, n * sizeof(float)));
  outf(out, "graph_fill sum=%llu fnv=%016llx", usum(r.b.hz, n), fnv1a(r.b.hz, n * sizeof(unsigned)));

  /* an explicitly built graph (no stream capture): empty, so it changes nothing */
  CUgraph eg;
  CUgraphExec ee;
  CK(cu->GraphCreate(&eg, 0), "cuGraphCreate");
  CK(cu->GraphInstantiateV2(&ee, eg, NULL, NULL, 0), "cuGraphInstantiate");
  CK(cu->GraphLaunch(ee, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");

  exec_graph_destroy(ee, eg);
  CK(cu->GraphExecDestroy(e1), "cuGraphExecDestroy");
  exec_graph_destroy(e2, g);
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  kernel_run_close(&r);
}

static int g_host_node_runs;
static void count_host_node(void *arg) { *(int *)arg += 1; }

static void kernel_node(CUDA_KERNEL_NODE_PARAMS *p, CUkernel k, unsigned grid, void **params) {
  memset(p, 0, sizeof *p);
  p->func = (CUfunction)k;
  p->gridDimX = grid;
  p->gridDimY = p->gridDimZ = 1;
  p->blockDimX = BLOCK;
  p->blockDimY = p->blockDimZ = 1;
  p->kernelParams = params;
}
static void linear_copy(CUDA_MEMCPY3D *p, const void *src_host, CUdeviceptr src_dev, void *dst_host,
                        CUdeviceptr dst_dev, size_t bytes) {
  memset(p, 0, sizeof *p);
  p->srcMemoryType = src_host ? 1 : 2;
  p->srcHost = src_host;
  p->srcDevice = src_dev;
  p->dstMemoryType = dst_host ? 1 : 2;
  p->dstHost = dst_host;
  p->dstDevice = dst_dev;
  p->WidthInBytes = bytes;
  p->Height = p->Depth = 1;
}

/* cuInit, device 0's primary context made current, the fake fatbin loaded as a library (kept
 * loaded for the process). */
static CUlibrary setup_library(void) {
  const struct cu_api *cu = &g_cu;
  use_primary_ctx();
  static unsigned char fatbin[512] __attribute__((aligned(16)));
  static struct fatbin_wrapper wrapper;
  wrapper = lib_image(fatbin, sizeof fatbin);
  CUlibrary lib;
  CK(cu->LibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  return lib;
}

/* Program code changing a D2H result inside the graph, after the copy (as simpleCudaGraphs
 * resets its sum): the bytes the device wrote are what replay can check. */
static void reset_first(void *arg) { *(unsigned *)arg = 0xdeadbeefu; }

/* A stream capture with graph memory (cuMemAllocAsync and cuMemFreeAsync inside it) and host
 * copies both ways: each launch of the graph reads `in` and writes `res`, and the host changes
 * `in` between launches (the `graph_capture` mode). */
static void graph_capture_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = 4096;
  CUlibrary lib = setup_library();
  CUkernel k_axpy;
  CK(cu->LibraryGetKernel(&k_axpy, lib, "axpy"), "cuLibraryGetKernel");
  float *in = malloc(n * sizeof(float)), *res = calloc(n, sizeof(float));
  if (!in || !res) die_call("malloc", -1);
  for (int i = 0; i < n; i++) in[i] = (float)(i % 7);
  CUdeviceptr y; /* 2 MiB (one page of the fake's granularity), so the graph memory has pages of its own */
  CK(cu->MemAlloc(&y, 2u << 20), "cuMemAlloc");
  CK(cu->MemcpyHtoD(y, res, n * sizeof(float)), "cuMemcpyHtoD");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CUgraph g;
  CUdeviceptr t;
  float a = 0.5f;
  CK(cu->StreamBeginCapture(s, 0), "cuStreamBeginCapture");
  CK(cu->MemAllocAsync(&t, n * sizeof(float), s), "cuMemAllocAsync");
  CK(cu->MemcpyHtoDAsync(t, in, n * sizeof(float), s), "cuMemcpyHtoDAsync");
  void *params[] = {&a, &t, &y, (void *)&n};
  CK(cu->LaunchKernel((CUfunction)k_axpy, (n + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, s, params, NULL),
     "cuLaunchKernel");
  CK(cu->MemcpyDtoHAsync(res, y, n * sizeof(float), s), "cuMemcpyDtoHAsync");
  CK(cu->LaunchHostFunc(s, reset_first, res), "cuLaunchHostFunc");
  CK(cu->MemFreeAsync(t, s), "cuMemFreeAsync");
  CK(cu->StreamEndCapture(s, &g), "cuStreamEndCapture");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < n; i++) in[i] = (float)((i + 3 * r) % 13);
    CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
    CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
    outf(out, "graph_capture launch=%d sum=%.6f fnv=%016llx", r, fsum(res, n), fnv1a(res, n * sizeof(float)));
  }
  exec_graph_destroy(e, g);

  /* the same built node by node, with memory alloc and free nodes */
  CUgraph g2;
  CUgraphNode n_alloc, n_h2d, n_axpy, n_d2h, n_free;
  CK(cu->GraphCreate(&g2, 0), "cuGraphCreate");
  unsigned char ap[120]; /* CUDA_MEM_ALLOC_NODE_PARAMS: pool properties, access, bytesize, dptr */
  memset(ap, 0, sizeof ap);
  ap[0] = 1;  /* CU_MEM_ALLOCATION_TYPE_PINNED */
  ap[8] = 1;  /* CU_MEM_LOCATION_TYPE_DEVICE, id 0 */
  size_t bytes = n * sizeof(float);
  memcpy(ap + 104, &bytes, 8);
  CK(cu->GraphAddMemAllocNode(&n_alloc, g2, NULL, 0, ap), "cuGraphAddMemAllocNode");
  CUdeviceptr t2;
  memcpy(&t2, ap + 112, 8);
  CUcontext cur;
  CK(cu->CtxGetCurrent(&cur), "cuCtxGetCurrent");
  CUDA_MEMCPY3D cp;
  linear_copy(&cp, in, 0, NULL, t2, bytes);
  CK(cu->GraphAddMemcpyNode(&n_h2d, g2, &n_alloc, 1, &cp, cur), "cuGraphAddMemcpyNode");
  void *p2[] = {&a, &t2, &y, (void *)&n};
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_node(&kp, k_axpy, (n + BLOCK - 1) / BLOCK, p2);
  CK(cu->GraphAddKernelNode(&n_axpy, g2, &n_h2d, 1, &kp), "cuGraphAddKernelNode");
  linear_copy(&cp, NULL, y, res, 0, bytes);
  CK(cu->GraphAddMemcpyNode(&n_d2h, g2, &n_axpy, 1, &cp, cur), "cuGraphAddMemcpyNode");
  CK(cu->GraphAddMemFreeNode(&n_free, g2, &n_d2h, 1, t2), "cuGraphAddMemFreeNode");
  CK(cu->GraphInstantiateWithFlags(&e, g2, 0), "cuGraphInstantiateWithFlags");
  for (int i = 0; i < n; i++) in[i] = (float)(i % 5);
  CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  outf(out, "graph_capture nodes sum=%.6f fnv=%016llx", fsum(res, n), fnv1a(res, n * sizeof(float)));
  exec_graph_destroy(e, g2);
  CK(cu->MemFree(y), "cuMemFree");
  free(in);
  free(res);
}

/* The `graph_nodes` mode: a graph built node by node — an H2D memcpy node from a host buffer
 * the program changes between launches, a memset node (through cuGraphAddNode), an axpy kernel
 * node after both, a child graph (fill_u32 kernel node and an empty node), a host node, an
 * event record node, D2H memcpy nodes (one ordered by cuGraphAddDependencies) — instantiated,
 * uploaded and launched 3 times, with an exec kernel-node update after the first launch and a
 * graph kernel-node update applied by cuGraphExecUpdate after the second. */
static void graph_nodes_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  struct kernel_run r;
  kernel_run_open(&r, n);
  CK(cu->MemsetD8(r.b.z, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CUevent ev;
  CK(cu->EventCreate(&ev, 0), "cuEventCreate");

  CUgraph g, child;
  CK(cu->GraphCreate(&g, 0), "cuGraphCreate");
  CK(cu->GraphCreate(&child, 0), "cuGraphCreate");
  CUgraphNode n_h2d, n_set, n_axpy, n_child, n_host, n_d2h_y, n_d2h_z, n_rec, c_fill, c_empty;
  CUDA_MEMCPY3D cp;
  linear_copy(&cp, r.b.hx, 0, NULL, r.b.x, n * sizeof(float));
  CK(cu->GraphAddMemcpyNode(&n_h2d, g, NULL, 0, &cp, r.pc.ctx), "cuGraphAddMemcpyNode");
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = 2; /* CU_GRAPH_NODE_TYPE_MEMSET */
  np.u.memset.p.dst = r.b.y;
  np.u.memset.p.value = 0x3f800000u; /* 1.0f */
  np.u.memset.p.elementSize = 4;
  np.u.memset.p.width = (size_t)n;
  np.u.memset.p.height = 1;
  np.u.memset.ctx = r.pc.ctx;
  CK(cu->GraphAddNode(&n_set, g, NULL, NULL, 0, &np), "cuGraphAddNode");
  float a = 1.5f;
  void *axpy_params[] = {&a, &r.b.x, &r.b.y, (void *)&n};
  CUDA_KERNEL_NODE_PARAMS kp;
  kernel_node(&kp, r.k_axpy, GRID, axpy_params);
  CUgraphNode axpy_deps[] = {n_h2d, n_set};
  CK(cu->GraphAddKernelNode(&n_axpy, g, axpy_deps, 2, &kp), "cuGraphAddKernelNode");

  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&r.b.z, &fv, &fcount};
  CUDA_KERNEL_NODE_PARAMS fp;
  kernel_node(&fp, r.k_fill, 4, fill_params);
  CK(cu->GraphAddKernelNode(&c_fill, child, NULL, 0, &fp), "cuGraphAddKernelNode");
  CK(cu->GraphAddEmptyNode(&c_empty, child, &c_fill, 1), "cuGraphAddEmptyNode");
  CK(cu->GraphAddChildGraphNode(&n_child, g, NULL, 0, child), "cuGraphAddChildGraphNode");

  CUDA_HOST_NODE_PARAMS hp = {count_host_node, &g_host_node_runs};
  CK(cu->GraphAddHostNode(&n_host, g, &n_axpy, 1, &hp), "cuGraphAddHostNode");
  linear_copy(&cp, NULL, r.b.y, r.b.hy, 0, n * sizeof(float));
  CK(cu->GraphAddMemcpyNode(&n_d2h_y, g, &n_host, 1, &cp, r.pc.ctx), "cuGraphAddMemcpyNode");
  linear_copy(&cp, NULL, r.b.z, r.b.hz, 0, n * sizeof(unsigned));
  CK(cu->GraphAddMemcpyNode(&n_d2h_z, g, NULL, 0, &cp, r.pc.ctx), "cuGraphAddMemcpyNode");
  CK(cu->GraphAddDependencies(g, &n_child, &n_d2h_z, 1), "cuGraphAddDependencies");
  CUgraphNode n_reset;
  CUDA_HOST_NODE_PARAMS rp = {reset_first, r.b.hz};
  CK(cu->GraphAddHostNode(&n_reset, g, &n_d2h_z, 1, &rp), "cuGraphAddHostNode");
  CUgraphNode rec_deps[] = {n_d2h_y, n_reset};
  CK(cu->GraphAddEventRecordNode(&n_rec, g, rec_deps, 2, ev), "cuGraphAddEventRecordNode");

  /* one plain launch first (the same fill the child graph makes) */
  CK(cu->LaunchKernel((CUfunction)r.k_fill, 4, 1, 1, BLOCK, 1, 1, 0, s, fill_params, NULL), "cuLaunchKernel");
  CUgraph g2;
  CK(cu->GraphClone(&g2, g), "cuGraphClone");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphUpload(e, s), "cuGraphUpload");
  for (int launch = 0; launch < 3; launch++) {
    for (int i = 0; i < n; i++) r.b.hx[i] = (float)(i % 89) * 0.5f + (float)launch;
    CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
    CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
    outf(out, "nodes[%d] axpy sum=%.6f fnv=%016llx fill sum=%llu fnv=%016llx", launch, fsum(r.b.hy, n),
         fnv1a(r.b.hy, n * sizeof(float)), usum(r.b.hz, n), fnv1a(r.b.hz, n * sizeof(unsigned)));
    if (launch == 0) { /* the instantiation's axpy node gets a = 2.5 */
      a = 2.5f;
      CK(cu->GraphExecKernelNodeSetParams(e, n_axpy, &kp), "cuGraphExecKernelNodeSetParams");
    } else if (launch == 1) { /* the graph's axpy node gets a = -1, applied by an exec update */
      a = -1.0f;
      fcount = 2048;
      CK(cu->GraphKernelNodeSetParams(n_axpy, &kp), "cuGraphKernelNodeSetParams");
      CK(cu->GraphExecUpdate(e, g, NULL), "cuGraphExecUpdate");
    }
  }
  outf(out, "nodes host_node_runs=%d", g_host_node_runs);

  exec_graph_destroy(e, g2);
  CK(cu->GraphDestroy(g), "cuGraphDestroy");
  CK(cu->GraphDestroy(child), "cuGraphDestroy");
  CK(cu->EventDestroy(ev), "cuEventDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  kernel_run_close(&r);
}

/* The parameters of a conditional IF node of handle h with one body graph. */
static void if_node(CUgraphNodeParams *np, unsigned long long h, CUcontext ctx) {
  memset(np, 0, sizeof *np);
  np->type = 13; /* CU_GRAPH_NODE_TYPE_CONDITIONAL */
  np->u.conditional.handle = h;
  np->u.conditional.type = 0; /* IF */
  np->u.conditional.size = 1;
  np->u.conditional.ctx = ctx;
}

/* The library, current context and fill_u32 kernel of the conditional-node workloads. */
struct cond_run {
  CUlibrary lib;
  CUcontext ctx;
  CUkernel k_fill;
};
static struct cond_run cond_setup(void) {
  struct cond_run c;
  c.lib = setup_library();
  CK(g_cu.CtxGetCurrent(&c.ctx), "cuCtxGetCurrent");
  CK(g_cu.LibraryGetKernel(&c.k_fill, c.lib, "fill_u32"), "cuLibraryGetKernel");
  return c;
}
/* Their end: the library unloaded and device 0's primary context released. */
static void cond_close(const struct cond_run *c) {
  CK(g_cu.LibraryUnload(c->lib), "cuLibraryUnload");
  CK(g_cu.DevicePrimaryCtxRelease(0), "cuDevicePrimaryCtxRelease");
}

/* The `graph_cond` mode: a graph whose only node is a conditional IF node (default value 1,
 * assigned at each launch) with a fill_u32 kernel node in its body; launched once, then `z` is
 * copied back. */
static void graph_cond_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  struct cond_run c = cond_setup();
  unsigned *hz = malloc(n * sizeof(unsigned));
  if (!hz) die_call("malloc", -1);
  CUdeviceptr z;
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemsetD8(z, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CUstream s;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");

  CUgraph g, body = NULL;
  CK(cu->GraphCreate(&g, 0), "cuGraphCreate");
  unsigned long long h;
  CK(cu->GraphConditionalHandleCreate(&h, g, c.ctx, 1, 1), "cuGraphConditionalHandleCreate");
  CUgraphNodeParams np;
  if_node(&np, h, c.ctx);
  CUgraphNode n_cond, b_fill;
  CK(cu->GraphAddNode(&n_cond, g, NULL, NULL, 0, &np), "cuGraphAddNode");
  body = np.u.conditional.phGraph_out[0]; /* the driver's array, as with the real driver */
  unsigned fv = 0x00C0FFEEu;
  unsigned long long fcount = 1024;
  void *fill_params[] = {&z, &fv, &fcount};
  CUDA_KERNEL_NODE_PARAMS fp;
  kernel_node(&fp, c.k_fill, 4, fill_params);
  CK(cu->GraphAddKernelNode(&b_fill, body, NULL, 0, &fp), "cuGraphAddKernelNode");
  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, g, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->MemcpyDtoH(hz, z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "cond fill sum=%llu fnv=%016llx", usum(hz, n), fnv1a(hz, n * sizeof(unsigned)));
  exec_graph_destroy(e, g);
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  CK(cu->MemFree(z), "cuMemFree");
  cond_close(&c);
  free(hz);
}

/* The `graph_cond_capture` mode, the way CUDA's conditional-node samples build a graph: a stream
 * capture's graph and last node read with cuStreamGetCaptureInfo, a conditional handle made
 * for that graph, an IF node (default 1) added to it by hand after the captured fill of `y`,
 * the capture's dependencies moved to that node (cuStreamUpdateCaptureDependencies), the status
 * asked alone, and the node's body filled by a capture into it (cuStreamBeginCaptureToGraph)
 * with a fill of `z`. */
static void graph_cond_capture_workload(struct outbuf *out) {
  const struct cu_api *cu = &g_cu;
  const int n = N_ELEMS;
  struct cond_run c = cond_setup();
  unsigned *hy = malloc(n * sizeof(unsigned)), *hz = malloc(n * sizeof(unsigned));
  if (!hy || !hz) die_call("malloc", -1);
  CUdeviceptr y, z;
  CK(cu->MemAlloc(&y, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemAlloc(&z, n * sizeof(unsigned)), "cuMemAlloc");
  CK(cu->MemsetD8(y, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CK(cu->MemsetD8(z, 0, n * sizeof(unsigned)), "cuMemsetD8");
  CUstream s, sb;
  CK(cu->StreamCreate(&s, 1), "cuStreamCreate");
  CK(cu->StreamCreate(&sb, 1), "cuStreamCreate");

  CK(cu->StreamBeginCapture(s, 0), "cuStreamBeginCapture"); /* GLOBAL */
  int st;
  CUgraph g;
  const CUgraphNode *deps;
  size_t nd;
  CK(cu->StreamGetCaptureInfo(s, &st, NULL, &g, &deps, NULL, &nd), "cuStreamGetCaptureInfo");
  unsigned long long h;
  CK(cu->GraphConditionalHandleCreate(&h, g, c.ctx, 1, 1), "cuGraphConditionalHandleCreate");
  unsigned fy = 0x5EEDu, fz = 0xC0DEu;
  unsigned long long fcount = 1024;
  void *py[] = {&y, &fy, &fcount}, *pz[] = {&z, &fz, &fcount};
  CK(cu->LaunchKernel((CUfunction)c.k_fill, 4, 1, 1, 256, 1, 1, 0, s, py, NULL), "cuLaunchKernel");
  CK(cu->StreamGetCaptureInfo(s, &st, NULL, &g, &deps, NULL, &nd), "cuStreamGetCaptureInfo");
  if (st != 1 || nd != 1) die_call("cuStreamGetCaptureInfo (one node to follow)", -1);
  CUgraphNodeParams np;
  if_node(&np, h, c.ctx);
  CUgraphNode n_cond;
  CK(cu->GraphAddNode(&n_cond, g, deps, NULL, nd, &np), "cuGraphAddNode");
  CUgraph body = np.u.conditional.phGraph_out[0], body_out;
  CK(cu->StreamUpdateCaptureDependencies(s, &n_cond, NULL, 1, 1), "cuStreamUpdateCaptureDependencies");
  /* the status alone, as libraries ask for it */
  CK(cu->StreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL), "cuStreamGetCaptureInfo");
  CK(cu->StreamBeginCaptureToGraph(sb, body, NULL, NULL, 0, 2), "cuStreamBeginCaptureToGraph");
  CK(cu->LaunchKernel((CUfunction)c.k_fill, 4, 1, 1, 256, 1, 1, 0, sb, pz, NULL), "cuLaunchKernel");
  CK(cu->StreamEndCapture(sb, &body_out), "cuStreamEndCapture");
  CUgraph made;
  CK(cu->StreamEndCapture(s, &made), "cuStreamEndCapture");
  if (made != g || body_out != body) die_call("cuStreamEndCapture (the graphs captured into)", -1);

  CUgraphExec e;
  CK(cu->GraphInstantiateWithFlags(&e, made, 0), "cuGraphInstantiateWithFlags");
  CK(cu->GraphLaunch(e, s), "cuGraphLaunch");
  CK(cu->StreamSynchronize(s), "cuStreamSynchronize");
  CK(cu->MemcpyDtoH(hy, y, n * sizeof(unsigned)), "cuMemcpyDtoH");
  CK(cu->MemcpyDtoH(hz, z, n * sizeof(unsigned)), "cuMemcpyDtoH");
  outf(out, "cond capture y sum=%llu z sum=%llu", usum(hy, n), usum(hz, n));
  exec_graph_destroy(e, made);
  CK(cu->StreamDestroy(sb), "cuStreamDestroy");
  CK(cu->StreamDestroy(s), "cuStreamDestroy");
  mem_free_each((CUdeviceptr[]){y, z}, 2);
  cond_close(&c);
  free(hy);
  free(hz);
}

#endif
