// Bulk copies through pageable memory, to measure what capture and replay cost per byte.
//   bulk_copies [H2D_MIB=4096] [CHUNK_MIB=64] [D2H_MIB=1024]
// Copies H2D_MIB of host data to the device in CHUNK_MIB blocking copies (every chunk holds
// other bytes: a data loader's batches, not one buffer sent again), cycling through a 1 GiB
// device buffer, then D2H_MIB back. Prints on stderr the times the program measures itself
// (`h2d_s`, `d2h_s`, `copy_s` = both), on stdout a checksum of what came back.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_PROG "bulk_copies"
#include "check.h"

int main(int argc, char **argv) {
    size_t h2d_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
    size_t chunk_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
    size_t d2h_mib = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024;
    const size_t dev_bytes = size_t(1) << 30;
    size_t chunk = chunk_mib << 20;
    if (chunk == 0 || chunk > dev_bytes || (d2h_mib << 20) > dev_bytes) {
        std::fprintf(stderr, "bulk_copies: CHUNK_MIB and D2H_MIB must be 1..1024\n");
        return 2;
    }
    size_t chunks = (h2d_mib << 20) / chunk;
    size_t slots = dev_bytes / chunk;
    uint8_t *dev = nullptr;
    CK(cudaMalloc(&dev, dev_bytes));
    CK(cudaMemset(dev, 0, dev_bytes));
    std::vector<uint64_t> host(chunk / 8);
    for (size_t i = 0; i < host.size(); i++) host[i] = i * 0x9e3779b97f4a7c15ull;
    CK(cudaDeviceSynchronize());

    auto t0 = std::chrono::steady_clock::now();
    for (size_t c = 0; c < chunks; c++) {
        // A new batch: one word in every 4 KiB page differs from the last chunk's.
        for (size_t i = 0; i < host.size(); i += 512) host[i] = c * 1000003ull + i;
        CK(cudaMemcpy(dev + (c % slots) * chunk, host.data(), chunk, cudaMemcpyHostToDevice));
    }
    auto t1 = std::chrono::steady_clock::now();
    size_t back = d2h_mib << 20;
    std::vector<uint8_t> out(chunk);
    uint64_t sum = 0;
    for (size_t off = 0; off < back; off += chunk) {
        size_t n = back - off < chunk ? back - off : chunk;
        CK(cudaMemcpy(out.data(), dev + off, n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i += 4096) sum = sum * 31 + out[i] + out[n - 1 - i % n];
    }
    auto t2 = std::chrono::steady_clock::now();
    CK(cudaFree(dev));
    double h2d = std::chrono::duration<double>(t1 - t0).count();
    double d2h = std::chrono::duration<double>(t2 - t1).count();
    std::fprintf(stderr, "h2d_s %.6f\nd2h_s %.6f\ncopy_s %.6f\n", h2d, d2h, h2d + d2h);
    std::fprintf(stderr, "[bulk_copies] %zu MiB up in %zu MiB chunks: %.2f GB/s; %zu MiB back: %.2f GB/s\n",
                 chunks * chunk_mib, chunk_mib, (double)(chunks * chunk) / h2d / 1e9, d2h_mib,
                 (double)back / d2h / 1e9);
    std::printf("bulk_copies h2d=%zu chunk=%zu d2h=%zu checksum=%016llx\n", h2d_mib, chunk_mib, d2h_mib,
                (unsigned long long)sum);
    return 0;
}
