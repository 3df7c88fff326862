// A multi-threaded program (issue 16's `--multi-thread`), for scripts/gpu-e2e.sh (workload
// `threads`) and scripts/gpu-bench.sh: THREADS host threads, each with a stream and a buffer of
// its own, ITERS times launching a kernel of ~0.1 ms and waiting for its stream, so that the
// threads' kernels and waits overlap; then each copies its buffer back. Prints the buffers'
// sums (a function of the data only) on stdout and "[threads] T threads x I iterations in X s"
// on stderr (the threaded section, timed).
//   threads [THREADS=4] [ITERS=200]
#define CHECK_PROG "threads"
#include <cuda_runtime.h>
#include <pthread.h>
#include <time.h>
#include "check.h"

static const int N = 1 << 14;

__global__ void step(unsigned *p, unsigned k, int spin) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    unsigned v = p[i];
    for (int j = 0; j < spin; j++) v = v * 1664525u + 1013904223u + k;
    p[i] = v;
}

struct work {
    int id, iters;
    unsigned long long sum;
};

static void *run(void *arg) {
    work *w = (work *)arg;
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *d;
    CK(cudaMalloc(&d, N * sizeof(unsigned)));
    CK(cudaMemsetAsync(d, w->id, N * sizeof(unsigned), s));
    for (int it = 0; it < w->iters; it++) {
        step<<<N / 256, 256, 0, s>>>(d, (unsigned)(w->id * 1000 + it), 40000);
        CK(cudaStreamSynchronize(s));
    }
    unsigned *h = (unsigned *)malloc(N * sizeof(unsigned));
    CK(cudaMemcpyAsync(h, d, N * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    w->sum = 0;
    for (int i = 0; i < N; i++) w->sum += h[i];
    free(h);
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4, iters = argc > 2 ? atoi(argv[2]) : 200;
    if (threads < 1 || threads > 64 || iters < 1) {
        fprintf(stderr, "usage: threads [THREADS 1-64] [ITERS]\n");
        return 2;
    }
    CK(cudaFree(0));
    pthread_t t[64];
    work w[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++) {
        w[i] = {i + 1, iters, 0};
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (int i = 0; i < threads; i++) printf("threads thread %d sum=%llu\n", i, w[i].sum);
    double secs = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    fprintf(stderr, "[threads] %d threads x %d iterations in %.6f s\n", threads, iters, secs);
    return 0;
}
