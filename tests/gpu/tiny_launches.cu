// Many tiny kernel launches, to measure what capture costs per launch.
//   tiny_launches [COUNT [MODE]]     (default 100000, MODE runtime)
// MODE `runtime` launches with <<<>>>; `driver` with cuLaunchKernel (reached through cudart's
// entry points: the floor of a replay, which launches that way); `graph` captures the launches
// into a CUDA graph first and times the graph's launch (what a GPU spends on them when no host
// issues them one by one); `graphs` builds graphs of CHUNK launches node by node, instantiates
// and launches each, all timed (what replaying runs of launches as graphs would cost). Besides the loop's time (to the final synchronisation), the time
// the host took to enqueue them goes to stderr (`enqueue_s`): far below the loop's, the GPU
// is what bounds it.
// Each launch adds k*(t+1) to counter[t] for its 32 threads; integer
// arithmetic, so the result is exact and checked against the host's formula.
// The launch loop's own wall time goes to stderr (stdout stays deterministic).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK_PROG "tiny_launches"
#include "check.h"

__global__ void tiny_kernel(unsigned int *counter, unsigned int k) {
    counter[threadIdx.x] += k * (threadIdx.x + 1u);
}

int main(int argc, char **argv) {
    long count = argc > 1 ? std::atol(argv[1]) : 100000;
    if (count < 1) count = 1;
    unsigned int *d = nullptr;
    CK(cudaMalloc(&d, 32 * sizeof(unsigned int)));
    CK(cudaMemset(d, 0, 32 * sizeof(unsigned int)));
    CK(cudaDeviceSynchronize());
    const char *mode = argc > 2 ? argv[2] : "runtime";
    cudaGraphExec_t exec = nullptr;
    if (!std::strcmp(mode, "graph")) {
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (long i = 0; i < count; i++) tiny_kernel<<<1, 32, 0, s>>>(d, (unsigned int)(i & 0xffff));
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphDestroy(g));
    }
    typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, CUstream, void **, void **);
    LaunchFn launch = nullptr;
    CUfunction f = nullptr;
    if (!std::strcmp(mode, "driver")) {
        cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void **)&launch, 12000, cudaEnableDefault, &q));
        CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)tiny_kernel));
    }
    auto t0 = std::chrono::steady_clock::now();
    if (exec) {
        CK(cudaGraphLaunch(exec, 0));
    } else if (!std::strcmp(mode, "graphs")) {
        const long chunk = argc > 3 ? std::atol(argv[3]) : 1024;
        std::vector<unsigned int> ks(chunk);
        for (long base = 0; base < count; base += chunk) {
            cudaGraph_t g;
            CK(cudaGraphCreate(&g, 0));
            cudaGraphNode_t prev = nullptr;
            for (long i = base; i < count && i < base + chunk; i++) {
                ks[i - base] = (unsigned int)(i & 0xffff);
                void *args[] = {&d, &ks[i - base]};
                cudaKernelNodeParams p = {};
                p.func = (void *)tiny_kernel;
                p.gridDim = dim3(1);
                p.blockDim = dim3(32);
                p.kernelParams = args;
                cudaGraphNode_t n;
                CK(cudaGraphAddKernelNode(&n, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
                prev = n;
            }
            cudaGraphExec_t e;
            CK(cudaGraphInstantiate(&e, g, 0));
            CK(cudaGraphLaunch(e, 0));
            CK(cudaGraphExecDestroy(e));
            CK(cudaGraphDestroy(g));
        }
    } else if (launch) {
        for (long i = 0; i < count; i++) {
            unsigned int k = (unsigned int)(i & 0xffff);
            void *args[] = {&d, &k};
            if (launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS) {
                std::fprintf(stderr, "tiny_launches: cuLaunchKernel failed\n");
                return 2;
            }
        }
    } else {
        for (long i = 0; i < count; i++) tiny_kernel<<<1, 32>>>(d, (unsigned int)(i & 0xffff));
    }
    auto te = std::chrono::steady_clock::now();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    auto t1 = std::chrono::steady_clock::now();
    if (exec) CK(cudaGraphExecDestroy(exec));
    unsigned int h[32];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));

    unsigned int ksum = 0;  // sum of k over all launches, mod 2^32
    for (long i = 0; i < count; i++) ksum += (unsigned int)(i & 0xffff);
    uint64_t checksum = 0;
    bool ok = true;
    for (unsigned int t = 0; t < 32; t++) {
        if (h[t] != ksum * (t + 1u)) ok = false;
        checksum = checksum * 1000003ull + h[t];
    }
    double secs = std::chrono::duration<double>(t1 - t0).count();
    std::fprintf(stderr, "[tiny_launches] %ld launches in %.6f s (%.3f us/launch, %s)\n", count, secs,
                 secs * 1e6 / (double)count, mode);
    std::fprintf(stderr, "loop_s %.6f\nenqueue_s %.6f\n", secs, std::chrono::duration<double>(te - t0).count());
    std::printf("tiny_launches count=%ld checksum=%016llx %s\n", count, (unsigned long long)checksum,
                ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
}
