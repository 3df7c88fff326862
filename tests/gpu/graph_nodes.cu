// A CUDA graph built node by node with the driver API (entry points from
// cudaGetDriverEntryPointByVersion, so no -lcuda): an H2D memcpy node from a pinned host buffer
// the program changes between launches, a memset node (through cuGraphAddNode, CUDA 12.5+
// runtimes; cuGraphAddMemsetNode before), an axpy kernel node after both, a child graph (a fill
// kernel node and an empty node), a host node, D2H memcpy nodes (one ordered by
// cuGraphAddDependencies) and an event record node. Instantiated, uploaded and launched 3
// times; after the first launch the instantiation's axpy node gets a new `a`
// (cuGraphExecKernelNodeSetParams), after the second the graph's (cuGraphKernelNodeSetParams),
// applied by cuGraphExecUpdate. Every launch's results are checked against the host's formula.
//   graph_nodes            prints "graph_nodes launches=3 checksum=... ok", exit 0
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK_PROG "graph_nodes"
#include "check.h"
#include "entry_point.h"

__global__ void gn_axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void gn_fill(unsigned *p, unsigned v, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + (unsigned)i;
}

static int g_host_runs = 0;
static void CUDA_CB count_host_node(void *arg) { *(int *)arg += 1; }

// Driver entry points, typed by hand: the version each is asked for fixes its ABI, whatever
// names the headers map to (CUDA 12 and 13 headers differ).
typedef CUresult (*CtxGetCurrent_t)(CUcontext *);
typedef CUresult (*GraphCreate_t)(CUgraph *, unsigned);
typedef CUresult (*AddKernelNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                    const CUDA_KERNEL_NODE_PARAMS *);  // _v2 (12000)
typedef CUresult (*AddMemcpyNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                    const CUDA_MEMCPY3D *, CUcontext);
typedef CUresult (*AddMemsetNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                    const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
typedef CUresult (*AddHostNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                  const CUDA_HOST_NODE_PARAMS *);
typedef CUresult (*AddEmptyNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
typedef CUresult (*AddEventNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUevent);
typedef CUresult (*AddChildNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
typedef CUresult (*AddDependencies_t)(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
typedef CUresult (*KernelNodeSetParams_t)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*ExecKernelNodeSetParams_t)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*ExecUpdate_t)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);  // _v2
typedef CUresult (*Instantiate_t)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*ExecStream_t)(CUgraphExec, CUstream);
typedef CUresult (*Clone_t)(CUgraph *, CUgraph);
typedef CUresult (*GraphDestroy_t)(CUgraph);
typedef CUresult (*ExecDestroy_t)(CUgraphExec);
static CtxGetCurrent_t pCtxGetCurrent;
static GraphCreate_t pGraphCreate;
static AddKernelNode_t pAddKernelNode;
static AddMemcpyNode_t pAddMemcpyNode;
static AddMemsetNode_t pAddMemsetNode;
static AddHostNode_t pAddHostNode;
static AddEmptyNode_t pAddEmptyNode;
static AddEventNode_t pAddEventRecordNode;
static AddChildNode_t pAddChildGraphNode;
static AddDependencies_t pAddDependencies;
static KernelNodeSetParams_t pKernelNodeSetParams;
static ExecKernelNodeSetParams_t pExecKernelNodeSetParams;
static ExecUpdate_t pExecUpdate;
static Instantiate_t pInstantiate;
static ExecStream_t pUpload;
static ExecStream_t pLaunch;
static Clone_t pClone;
static GraphDestroy_t pGraphDestroy;
static ExecDestroy_t pExecDestroy;
#if CUDART_VERSION >= 12050
// cuGraphAddNode_v2 (12030: with edge data).
typedef CUresult (*AddNode_t)(CUgraphNode *, CUgraph, const CUgraphNode *, const void *, size_t,
                              CUgraphNodeParams *);
static AddNode_t pAddNode;
#endif

static CUDA_MEMCPY3D linear_copy(const void *src_host, CUdeviceptr src_dev, void *dst_host,
                                 CUdeviceptr dst_dev, size_t bytes) {
    CUDA_MEMCPY3D c;
    std::memset(&c, 0, sizeof c);
    c.srcMemoryType = src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src_host;
    c.srcDevice = src_dev;
    c.dstMemoryType = dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.dstHost = dst_host;
    c.dstDevice = dst_dev;
    c.WidthInBytes = bytes;
    c.Height = 1;
    c.Depth = 1;
    return c;
}

static CUDA_KERNEL_NODE_PARAMS kernel_node(CUfunction f, unsigned grid, unsigned block, void **args) {
    CUDA_KERNEL_NODE_PARAMS k;
    std::memset(&k, 0, sizeof k);  // kern and ctx: null
    k.func = f;
    k.gridDimX = grid;
    k.gridDimY = k.gridDimZ = 1;
    k.blockDimX = block;
    k.blockDimY = k.blockDimZ = 1;
    k.kernelParams = args;
    return k;
}

int main() {
    const int n = 1 << 16;
    const unsigned block = 256, grid = (n + block - 1) / block;
    const unsigned long long fill_n = 4096;
    const unsigned fill_v = 0xC0FFEE00u;

    CK(cudaFree(0));  // the primary context
    driver_entry_point(pCtxGetCurrent, "cuCtxGetCurrent", 12000);
    driver_entry_point(pGraphCreate, "cuGraphCreate", 12000);
    driver_entry_point(pAddKernelNode, "cuGraphAddKernelNode", 12000);
    driver_entry_point(pAddMemcpyNode, "cuGraphAddMemcpyNode", 12000);
    driver_entry_point(pAddMemsetNode, "cuGraphAddMemsetNode", 12000);
    driver_entry_point(pAddHostNode, "cuGraphAddHostNode", 12000);
    driver_entry_point(pAddEmptyNode, "cuGraphAddEmptyNode", 12000);
    driver_entry_point(pAddEventRecordNode, "cuGraphAddEventRecordNode", 12000);
    driver_entry_point(pAddChildGraphNode, "cuGraphAddChildGraphNode", 12000);
    driver_entry_point(pAddDependencies, "cuGraphAddDependencies", 12000);
    driver_entry_point(pKernelNodeSetParams, "cuGraphKernelNodeSetParams", 12000);
    driver_entry_point(pExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", 12000);
    driver_entry_point(pExecUpdate, "cuGraphExecUpdate", 12000);
    driver_entry_point(pInstantiate, "cuGraphInstantiateWithFlags", 12000);
    driver_entry_point(pUpload, "cuGraphUpload", 12000);
    driver_entry_point(pLaunch, "cuGraphLaunch", 12000);
    driver_entry_point(pClone, "cuGraphClone", 12000);
    driver_entry_point(pGraphDestroy, "cuGraphDestroy", 12000);
    driver_entry_point(pExecDestroy, "cuGraphExecDestroy", 12000);
#if CUDART_VERSION >= 12050
    driver_entry_point(pAddNode, "cuGraphAddNode", 12030);
#endif
    CUcontext ctx = nullptr;
    CU(pCtxGetCurrent(&ctx));
    CUfunction f_axpy = nullptr, f_fill = nullptr;
    CK(cudaGetFuncBySymbol((cudaFunction_t *)&f_axpy, (const void *)gn_axpy));
    CK(cudaGetFuncBySymbol((cudaFunction_t *)&f_fill, (const void *)gn_fill));

    float *hx = nullptr, *hy = nullptr;
    unsigned *hz = nullptr;
    CK(cudaMallocHost(&hx, n * sizeof(float)));
    CK(cudaMallocHost(&hy, n * sizeof(float)));
    CK(cudaMallocHost(&hz, n * sizeof(unsigned)));
    float *dx = nullptr, *dy = nullptr;
    unsigned *dz = nullptr;
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&dy, n * sizeof(float)));
    CK(cudaMalloc(&dz, n * sizeof(unsigned)));
    CK(cudaMemset(dz, 0, n * sizeof(unsigned)));
    // One plain launch (into a scratch buffer), so `--info`, which lists launched kernels and
    // not graph kernel nodes, names a kernel of this program.
    unsigned *scratch = nullptr;
    CK(cudaMalloc(&scratch, 256 * sizeof(unsigned)));
    gn_fill<<<1, 256>>>(scratch, 7u, 256ull);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUdeviceptr x = (CUdeviceptr)dx, y = (CUdeviceptr)dy, z = (CUdeviceptr)dz;

    CUgraph g = nullptr, child = nullptr, g2 = nullptr;
    CU(pGraphCreate(&g, 0));
    CU(pGraphCreate(&child, 0));
    CUgraphNode n_h2d, n_set, n_axpy, n_child, n_host, n_d2h_y, n_d2h_z, n_rec, c_fill, c_empty;
    CUDA_MEMCPY3D cp = linear_copy(hx, 0, nullptr, x, n * sizeof(float));
    CU(pAddMemcpyNode(&n_h2d, g, nullptr, 0, &cp, ctx));
    CUDA_MEMSET_NODE_PARAMS ms;
    std::memset(&ms, 0, sizeof ms);
    ms.dst = y;
    ms.value = 0x3f800000u;  // 1.0f
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
#if CUDART_VERSION >= 12050
    CUgraphNodeParams np;
    std::memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = ms.dst;
    np.memset.value = ms.value;
    np.memset.elementSize = ms.elementSize;
    np.memset.width = ms.width;
    np.memset.height = ms.height;
    np.memset.ctx = ctx;
    CU(pAddNode(&n_set, g, nullptr, nullptr, 0, &np));
#else
    CU(pAddMemsetNode(&n_set, g, nullptr, 0, &ms, ctx));
#endif
    float a = 1.5f;
    int nn = n;
    void *axpy_args[] = {&a, &x, &y, &nn};
    CUDA_KERNEL_NODE_PARAMS kp = kernel_node(f_axpy, grid, block, axpy_args);
    CUgraphNode axpy_deps[] = {n_h2d, n_set};
    CU(pAddKernelNode(&n_axpy, g, axpy_deps, 2, &kp));

    unsigned fv = fill_v;
    unsigned long long fn = fill_n;
    void *fill_args[] = {&z, &fv, &fn};
    CUDA_KERNEL_NODE_PARAMS fp = kernel_node(f_fill, (unsigned)((fill_n + block - 1) / block), block, fill_args);
    CU(pAddKernelNode(&c_fill, child, nullptr, 0, &fp));
    CU(pAddEmptyNode(&c_empty, child, &c_fill, 1));
    CU(pAddChildGraphNode(&n_child, g, nullptr, 0, child));

    CUDA_HOST_NODE_PARAMS hp;
    hp.fn = count_host_node;
    hp.userData = &g_host_runs;
    CU(pAddHostNode(&n_host, g, &n_axpy, 1, &hp));
    cp = linear_copy(nullptr, y, hy, 0, n * sizeof(float));
    CU(pAddMemcpyNode(&n_d2h_y, g, &n_host, 1, &cp, ctx));
    cp = linear_copy(nullptr, z, hz, 0, n * sizeof(unsigned));
    CU(pAddMemcpyNode(&n_d2h_z, g, nullptr, 0, &cp, ctx));
    CU(pAddDependencies(g, &n_child, &n_d2h_z, 1));
    CUgraphNode rec_deps[] = {n_d2h_y, n_d2h_z};
    CU(pAddEventRecordNode(&n_rec, g, rec_deps, 2, (CUevent)ev));
    CU(pClone(&g2, g));

    CUgraphExec e = nullptr;
    CU(pInstantiate(&e, g, 0));
    CU(pUpload(e, (CUstream)s));
    bool ok = true;
    uint64_t checksum = 0;
    const float as[3] = {1.5f, 2.5f, -1.0f};
    for (int launch = 0; launch < 3; launch++) {
        for (int i = 0; i < n; i++) hx[i] = (float)(i % 89) * 0.5f + (float)launch;
        CU(pLaunch(e, (CUstream)s));
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < n; i++) {
            float want = as[launch] * hx[i] + 1.0f;
            if (hy[i] != want) ok = false;
            unsigned wz = (unsigned long long)i < fill_n ? fill_v + (unsigned)i : 0u;
            if (hz[i] != wz) ok = false;
            uint32_t bits;
            std::memcpy(&bits, &hy[i], 4);
            checksum = checksum * 1000003ull + bits + hz[i];
        }
        if (launch == 0) {  // the instantiation's axpy node: a = 2.5
            a = as[1];
            CU(pExecKernelNodeSetParams(e, n_axpy, &kp));
        } else if (launch == 1) {  // the graph's axpy node: a = -1, applied by an exec update
            a = as[2];
            CU(pKernelNodeSetParams(n_axpy, &kp));
            CUgraphExecUpdateResultInfo info;
            std::memset(&info, 0, sizeof info);
            CU(pExecUpdate(e, g, &info));
        }
    }
    if (g_host_runs != 3) ok = false;

    CU(pExecDestroy(e));
    CU(pGraphDestroy(g2));
    CU(pGraphDestroy(g));
    CU(pGraphDestroy(child));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dz));
    CK(cudaFree(scratch));
    CK(cudaFreeHost(hx));
    CK(cudaFreeHost(hy));
    CK(cudaFreeHost(hz));
    std::printf("graph_nodes launches=3 host_runs=%d checksum=%016llx %s\n", g_host_runs,
                (unsigned long long)checksum, ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
}
