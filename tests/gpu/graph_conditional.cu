// Conditional graph nodes (CUDA 12.4+ runtime API): one graph holding
//   - a kernel node that sets an IF node's condition from device memory
//     (cudaGraphSetConditional on the handle, passed as a kernel argument),
//   - that IF node, whose body fills `z` with 7,
//   - a WHILE node (default value 1) whose body increments a counter and clears the condition
//     once it reaches 5, so the body runs 5 times per launch.
// Launched twice: the first time the flag is 1 (the IF body runs), then the flag is set to 0
// and `z` cleared (the IF body does not run). Each launch's `z` and the counter are copied
// back and checked against what the host expects.
//   graph_conditional      prints "graph_conditional launches=2 while=10 if_ran=1,0 ok", exit 0
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_PROG "graph_conditional"
#include "check.h"

__global__ void gc_set_if(cudaGraphConditionalHandle h, const unsigned *flag) {
    if (threadIdx.x == 0) cudaGraphSetConditional(h, *flag);
}
__global__ void gc_fill(unsigned *z, unsigned v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = v;
}
__global__ void gc_step(cudaGraphConditionalHandle h, unsigned *counter, unsigned stop) {
    if (threadIdx.x == 0) {
        unsigned c = ++*counter;
        if (c % stop == 0) cudaGraphSetConditional(h, 0);
    }
}

// cudaGraphAddNode: CUDA 13 headers take the edge data (`_v2` of 12.x) in the same name.
static cudaError_t add_node(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                            size_t n, cudaGraphNodeParams *p) {
#if CUDART_VERSION >= 13000
    return cudaGraphAddNode(node, g, deps, nullptr, n, p);
#else
    return cudaGraphAddNode(node, g, deps, n, p);
#endif
}

// A kernel node of `g` after `deps` (n of them) running `fn` with `args`.
static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                   void *fn, void **args, unsigned blocks, unsigned threads) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = fn;
    p.kernel.gridDim = dim3(blocks);
    p.kernel.blockDim = dim3(threads);
    p.kernel.kernelParams = args;
    cudaGraphNode_t node;
    CK(add_node(&node, g, deps, n, &p));
    return node;
}

// A conditional node of `g` after `deps`: its body graph.
static cudaGraph_t cond_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                             cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
                             cudaGraphNode_t *node) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = 1;
    CK(add_node(node, g, deps, n, &p));
    return p.conditional.phGraph_out[0];
}

int main() {
    const int n = 1 << 16;
    unsigned *z, *flag, *counter;
    CK(cudaMalloc(&z, n * sizeof(unsigned)));
    CK(cudaMalloc(&flag, sizeof(unsigned)));
    CK(cudaMalloc(&counter, sizeof(unsigned)));
    CK(cudaMemset(z, 0, n * sizeof(unsigned)));
    CK(cudaMemset(counter, 0, sizeof(unsigned)));
    unsigned one = 1;
    CK(cudaMemcpy(flag, &one, sizeof one, cudaMemcpyHostToDevice));

    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h_if, h_while;
    CK(cudaGraphConditionalHandleCreate(&h_if, g, 0, 0));
    CK(cudaGraphConditionalHandleCreate(&h_while, g, 1, cudaGraphCondAssignDefault));

    void *set_args[] = {&h_if, &flag};
    cudaGraphNode_t set = kernel_node(g, nullptr, 0, (void *)gc_set_if, set_args, 1, 32);
    cudaGraphNode_t if_node, while_node;
    cudaGraph_t if_body = cond_node(g, &set, 1, h_if, cudaGraphCondTypeIf, &if_node);
    unsigned seven = 7;
    int count = n;
    void *fill_args[] = {&z, &seven, &count};
    kernel_node(if_body, nullptr, 0, (void *)gc_fill, fill_args, (n + 255) / 256, 256);
    cudaGraph_t while_body = cond_node(g, &if_node, 1, h_while, cudaGraphCondTypeWhile,
                                       &while_node);
    unsigned stop = 5;
    void *step_args[] = {&h_while, &counter, &stop};
    kernel_node(while_body, nullptr, 0, (void *)gc_step, step_args, 1, 32);

    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *hz = (unsigned *)malloc(n * sizeof(unsigned));
    if (!hz) CHECK_FAIL("%s", "malloc failed");
    int if_ran[2];
    unsigned hc = 0;
    for (int launch = 0; launch < 2; launch++) {
        CK(cudaGraphLaunch(e, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(hz, z, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&hc, counter, sizeof hc, cudaMemcpyDeviceToHost));
        unsigned want = launch == 0 ? 7 : 0;
        for (int i = 0; i < n; i++)
            if (hz[i] != want)
                CHECK_FAIL("launch %d: z[%d] = %u, expected %u", launch, i, hz[i], want);
        if (hc != 5u * (launch + 1))
            CHECK_FAIL("launch %d: counter %u, expected %u", launch, hc, 5u * (launch + 1));
        if_ran[launch] = hz[0] == 7;
        // the next launch: the IF condition off, z cleared
        unsigned zero = 0;
        CK(cudaMemcpy(flag, &zero, sizeof zero, cudaMemcpyHostToDevice));
        CK(cudaMemset(z, 0, n * sizeof(unsigned)));
    }
    printf("graph_conditional launches=2 while=%u if_ran=%d,%d ok\n", hc, if_ran[0], if_ran[1]);
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(z));
    CK(cudaFree(flag));
    CK(cudaFree(counter));
    free(hz);
    return 0;
}
