// One process driving two GPUs (issue 19), for scripts/gpu-e2e.sh (workload `two_devices`):
// a buffer filled on each device, peer access enabled from device 0 to device 1, device 1's
// buffer copied to device 0 with cudaMemcpyPeer and cudaMemcpyPeerAsync, a kernel on device 0
// reading device 1's buffer directly through peer access, a kernel on device 1 scaling its own
// buffer meanwhile; every result copied back and checked against the host's arithmetic.
// Prints one line of sums; exit 0 when every check held, 77 on a machine with fewer than two
// devices.
#define CHECK_PROG "two_devices"
#include <cuda_runtime.h>
#include "check.h"

__global__ void fill(unsigned *p, unsigned base, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + 3u * (unsigned)i;
}
__global__ void add_peer(unsigned *dst, const unsigned *peer, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] += peer[i];
}
__global__ void scale(unsigned *p, unsigned k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= k;
}

int main() {
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        printf("two_devices: needs two devices, this machine has %d\n", count);
        return 77;
    }
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(unsigned);
    const int block = 256, grid = (n + block - 1) / block;
    unsigned *a, *c, *b, *b2;
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&b2, bytes));
    fill<<<grid, block>>>(b, 1000u, n);
    fill<<<grid, block>>>(b2, 5u, n);
    CK(cudaGetLastError());
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&c, 2 * bytes));
    fill<<<grid, block>>>(a, 7u, n);
    int can = 0;
    CK(cudaDeviceCanAccessPeer(&can, 0, 1));
    if (can) CK(cudaDeviceEnablePeerAccess(1, 0));
    CK(cudaSetDevice(1));
    CK(cudaDeviceSynchronize());
    CK(cudaSetDevice(0));
    CK(cudaMemcpyPeer(c, 0, b, 1, bytes));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMemcpyPeerAsync(c + n, 0, b2, 1, bytes, s));
    if (can) {
        add_peer<<<grid, block, 0, s>>>(a, b, n);
    } else {
        add_peer<<<grid, block, 0, s>>>(a, c, n);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaSetDevice(1));
    scale<<<grid, block>>>(b2, 3u, n);
    CK(cudaGetLastError());
    unsigned *hb2 = (unsigned *)malloc(bytes);
    CK(cudaMemcpy(hb2, b2, bytes, cudaMemcpyDeviceToHost));
    CK(cudaSetDevice(0));
    unsigned *ha = (unsigned *)malloc(bytes), *hc = (unsigned *)malloc(2 * bytes);
    CK(cudaMemcpy(ha, a, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hc, c, 2 * bytes, cudaMemcpyDeviceToHost));
    unsigned long long sa = 0, sc = 0, sb = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        unsigned vb = 1000u + 3u * i, vb2 = 5u + 3u * i, va = 7u + 3u * i;
        bad += ha[i] != va + vb;
        bad += hc[i] != vb;
        bad += hc[n + i] != vb2;
        bad += hb2[i] != 3u * vb2;
        sa += ha[i];
        sc += hc[i] + hc[n + i];
        sb += hb2[i];
    }
    printf("two_devices peer=%d a=%llu c=%llu b2=%llu bad=%d\n", can, sa, sc, sb, bad);
    return bad ? 1 : 0;
}
