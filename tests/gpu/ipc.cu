// Two processes share device memory through a CUDA IPC handle, for scripts/gpu-e2e.sh
// (workload `ipc`, replayed with `hrr-playback ROOT --all`). Self-checking: each process prints
// one line, the parent `ipc: PASS`; exit 0, or 1 when a value was wrong.
//
// The program forks before any CUDA call. The parent allocates 3 MiB, fills it with pattern A
// by a kernel, exports it (cudaIpcGetMemHandle) and sends the handle down a pipe. The child
// opens it (cudaIpcOpenMemHandle), counts by a kernel the bytes that are not pattern A, writes
// pattern B over the second half by a kernel, copies the count back, closes the handle and says
// so up another pipe. The parent then copies the whole buffer back and checks A, then B.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_PROG "ipc"
#define CHECK_EXIT 1
#include "check.h"

static const size_t N = 3u << 20;

__host__ __device__ static unsigned char pattern(size_t i, int b) {
    return (unsigned char)(b ? i * 13 + 5 : i * 7 + 1);
}

__global__ void fill(unsigned char *p, size_t from, size_t to, int b) {
    for (size_t i = from + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < to;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = pattern(i, b);
}

__global__ void count_not_a(const unsigned char *p, size_t n, unsigned long long *bad) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        mine += p[i] != pattern(i, 0);
    if (mine) atomicAdd(bad, mine);
}

static int child(int from_parent, int to_parent) {
    cudaIpcMemHandle_t h;
    if (read(from_parent, &h, sizeof h) != (ssize_t)sizeof h) return 1;
    void *p = nullptr;
    CK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    unsigned long long *bad = nullptr, nbad = ~0ull;
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMemset(bad, 0, sizeof *bad));
    count_not_a<<<64, 256>>>((unsigned char *)p, N, bad);
    fill<<<64, 256>>>((unsigned char *)p, N / 2, N, 1);
    CK(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
    CK(cudaDeviceSynchronize());
    CK(cudaIpcCloseMemHandle(p));
    CK(cudaFree(bad));
    std::printf("ipc child: %llu bytes not pattern A\n", nbad);
    std::fflush(stdout);
    char done = nbad == 0 ? 'y' : 'n';
    return write(to_parent, &done, 1) == 1 && nbad == 0 ? 0 : 1;
}

int main() {
    int down[2], up[2];
    if (pipe(down) || pipe(up)) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) return child(down[0], up[1]);
    unsigned char *d = nullptr;
    CK(cudaMalloc(&d, N));
    fill<<<64, 256>>>(d, 0, N, 0);
    CK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, d));
    if (write(down[1], &h, sizeof h) != (ssize_t)sizeof h) return 1;
    char done = 0;
    if (read(up[0], &done, 1) != 1) return 1;
    int status = 0;
    waitpid(pid, &status, 0);
    unsigned char *host = (unsigned char *)std::malloc(N);
    CK(cudaMemcpy(host, d, N, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < N; i++) wrong += host[i] != pattern(i, i >= N / 2);
    CK(cudaFree(d));
    bool ok = done == 'y' && wrong == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::printf("ipc parent: %zu bytes wrong after the child's writes\nipc: %s\n", wrong, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
