/* A CUDA driver-API workload for the HRR end-to-end test.
 *
 *   driver_api KERNELS.cubin [KERNELS.ptx]
 *
 * Loads the cubin built from driver_api_kernels.cu with cuModuleLoadData and
 * exercises what a replay has to get right:
 *   - cuMemAlloc + cuMemcpyHtoD + cuLaunchKernel with kernelParams,
 *   - cuLaunchKernel with the `extra` argument buffer,
 *   - a VMM range (cuMemAddressReserve / cuMemCreate / cuMemMap /
 *     cuMemSetAccess) written by a kernel and read back, then unmapped,
 *   - a kernel that chases raw device pointers the host stored in device memory
 *     (list nodes spread over two cuMemAlloc blocks and the VMM range, and a
 *     table of buffer addresses), so replay must place every allocation at its
 *     recorded address,
 *   - a stream with async copies through page-locked host memory,
 *   - stream memory operations: 32- and 64-bit values written to device memory
 *     in stream order (cuStreamWriteValue32/64) and waited for
 *     (cuStreamWaitValue32/64),
 *   - optionally a PTX module (JIT-compiled by the driver).
 * Every result comes back with a device-to-host copy and is printed as a sum
 * and an FNV-1a hash of its bytes. No address is printed, so the output of a
 * plain run and of a captured run must be identical.
 */
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROG "driver_api"
#define CHECK_ERROR_NAMES 1
#include "check.h"

/* Same layout as HrrNode in driver_api_kernels.cu (16 bytes). */
struct HrrNode {
    unsigned long long next;
    float value;
    int tag;
};

static void *read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "driver_api: cannot read %s\n", path);
        exit(2);
    }
    buf[len] = 0; /* PTX must be NUL-terminated */
    fclose(f);
    if (len_out) *len_out = (size_t)len;
    return buf;
}

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static double fsum(const float *v, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)v[i];
    return s;
}

static void report(const char *what, const float *v, size_t n) {
    printf("driver_api %-6s n=%zu sum=%.17g fnv=%016llx\n", what, n, fsum(v, n),
           (unsigned long long)fnv1a(v, n * sizeof(float)));
}

static unsigned int blocks_for(int n, int threads) { return (unsigned int)((n + threads - 1) / threads); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s KERNELS.cubin [KERNELS.ptx]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);

    CUdevice dev;
    CUcontext ctx;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    /* ---- module from a cubin image (no size is passed: the driver and the
     * capture both have to size the ELF themselves) ---- */
    void *cubin = read_file(argv[1], NULL);
    CUmodule mod;
    CUfunction f_fill, f_saxpy, f_chase;
    CU(cuModuleLoadData(&mod, cubin));
    CU(cuModuleGetFunction(&f_fill, mod, "hrr_fill"));
    CU(cuModuleGetFunction(&f_saxpy, mod, "hrr_saxpy"));
    CU(cuModuleGetFunction(&f_chase, mod, "hrr_chase"));

    /* ---- 1. fill by kernel, upload by HtoD, saxpy through `extra` ---- */
    const int N = 1 << 16;
    float *h = (float *)malloc(sizeof(float) * N);
    CUdeviceptr d_x, d_y;
    CU(cuMemAlloc(&d_x, sizeof(float) * N));
    CU(cuMemAlloc(&d_y, sizeof(float) * N));
    for (int i = 0; i < N; i++) h[i] = (float)(i % 251) * 0.01f - 1.0f;
    CU(cuMemcpyHtoD(d_y, h, sizeof(float) * N));
    {
        int n = N;
        float seed = 1.5f;
        void *params[] = {&d_x, &n, &seed};
        CU(cuLaunchKernel(f_fill, blocks_for(N, 256), 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    }
    {
        struct SaxpyArgs {
            float a; /* offset 0, then 4 bytes of padding */
            CUdeviceptr x; /* 8 */
            CUdeviceptr y; /* 16 */
            int n;         /* 24 */
        } args;
        memset(&args, 0, sizeof args); /* padding bytes deterministic */
        args.a = 2.0f;
        args.x = d_x;
        args.y = d_y;
        args.n = N;
        /* The buffer size must be the kernel's parameter space (28 bytes), not
         * sizeof the struct (32, with tail padding): the driver refuses the
         * launch with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES otherwise (seen on the
         * H200, driver 580). */
        size_t argsz = offsetof(struct SaxpyArgs, n) + sizeof(int);
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &argsz,
                         CU_LAUNCH_PARAM_END};
        CU(cuLaunchKernel(f_saxpy, blocks_for(N, 256), 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    }
    CU(cuMemcpyDtoH(h, d_y, sizeof(float) * N));
    report("saxpy", h, N);

    /* ---- 2. VMM: reserve two granules, back each with its own physical
     * allocation, make it accessible, fill it with a kernel, read it back ---- */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    size_t gran = 0;
    CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t vsize = 2 * gran;
    CUdeviceptr vbase;
    CUmemGenericAllocationHandle vh0, vh1;
    CU(cuMemAddressReserve(&vbase, vsize, 0, 0, 0));
    CU(cuMemCreate(&vh0, gran, &prop, 0));
    CU(cuMemCreate(&vh1, gran, &prop, 0));
    CU(cuMemMap(vbase, gran, 0, vh0, 0));
    CU(cuMemMap(vbase + gran, gran, 0, vh1, 0));
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(vbase, vsize, &acc, 1));
    const int VN = (int)(vsize / sizeof(float));
    float *hv = (float *)malloc(vsize);
    {
        int n = VN;
        float seed = 0.75f;
        void *params[] = {&vbase, &n, &seed};
        CU(cuLaunchKernel(f_fill, blocks_for(VN, 256), 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    }
    CU(cuMemcpyDtoH(hv, vbase, vsize));
    report("vmm", hv, (size_t)VN);

    /* ---- 3. pointer chasing through addresses stored in device memory ---- */
    enum { NBUF = 3, BUF_LEN = 4096, NNODES = 96, NTHREADS = 1024 };
    CUdeviceptr bufs[NBUF + 1];
    float *hb = (float *)malloc(sizeof(float) * BUF_LEN);
    for (int b = 0; b < NBUF; b++) {
        CU(cuMemAlloc(&bufs[b], sizeof(float) * BUF_LEN));
        if (b % 2 == 0) { /* even: uploaded from the host */
            for (int i = 0; i < BUF_LEN; i++) hb[i] = (float)((i * (b + 3)) % 509) * 0.002f;
            CU(cuMemcpyHtoD(bufs[b], hb, sizeof(float) * BUF_LEN));
        } else { /* odd: written by a kernel */
            int n = BUF_LEN;
            float seed = 0.5f + (float)b;
            void *params[] = {&bufs[b], &n, &seed};
            CU(cuLaunchKernel(f_fill, blocks_for(BUF_LEN, 128), 1, 1, 128, 1, 1, 0, NULL, params, NULL));
        }
    }
    bufs[NBUF] = vbase; /* the VMM range is the last buffer of the table */
    CUdeviceptr d_table;
    CU(cuMemAlloc(&d_table, sizeof(unsigned long long) * (NBUF + 1)));
    {
        unsigned long long table[NBUF + 1];
        for (int b = 0; b <= NBUF; b++) table[b] = (unsigned long long)bufs[b];
        CU(cuMemcpyHtoD(d_table, table, sizeof table));
    }
    /* Nodes live in three pools: two cuMemAlloc blocks and the second granule
     * of the VMM range. Node j is in pool j%3, slot j/3. */
    CUdeviceptr pool[3];
    CU(cuMemAlloc(&pool[0], sizeof(struct HrrNode) * NNODES));
    CU(cuMemAlloc(&pool[1], sizeof(struct HrrNode) * NNODES));
    pool[2] = vbase + gran + 65536;
    {
        struct HrrNode nodes[3][NNODES];
        memset(nodes, 0, sizeof nodes);
        for (int j = 0; j < NNODES; j++) {
            struct HrrNode *nd = &nodes[j % 3][j / 3];
            int k = j + 1;
            nd->next = (k < NNODES) ? (unsigned long long)(pool[k % 3] + (CUdeviceptr)(k / 3) * sizeof(struct HrrNode))
                                    : 0ull;
            nd->value = 0.125f * (float)(j + 1);
            nd->tag = (j * 13) % 97;
        }
        for (int p = 0; p < 3; p++) {
            int count = (NNODES - p + 2) / 3;
            CU(cuMemcpyHtoD(pool[p], nodes[p], sizeof(struct HrrNode) * (size_t)count));
        }
    }
    CUdeviceptr d_out;
    CU(cuMemAlloc(&d_out, sizeof(float) * NTHREADS));
    {
        CUdeviceptr head = pool[0];
        int table_len = NBUF + 1, buf_len = BUF_LEN, nthreads = NTHREADS;
        void *params[] = {&head, &d_table, &table_len, &buf_len, &d_out, &nthreads};
        CU(cuLaunchKernel(f_chase, blocks_for(NTHREADS, 128), 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    }
    {
        float ho[NTHREADS];
        CU(cuMemcpyDtoH(ho, d_out, sizeof ho));
        report("chase", ho, NTHREADS);
    }

    /* ---- 4. a stream, async copies through page-locked memory ---- */
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    float *hp = NULL;
    CU(cuMemAllocHost((void **)&hp, sizeof(float) * N));
    for (int i = 0; i < N; i++) hp[i] = (float)(i % 17) * 0.5f;
    CU(cuMemcpyHtoDAsync(d_x, hp, sizeof(float) * N, s));
    {
        float a = -0.5f;
        int n = N;
        void *params[] = {&a, &d_x, &d_y, &n};
        CU(cuLaunchKernel(f_saxpy, blocks_for(N, 512), 1, 1, 512, 1, 1, 0, s, params, NULL));
    }
    CU(cuMemcpyDtoHAsync(hp, d_y, sizeof(float) * N, s));
    CU(cuStreamSynchronize(s));
    report("stream", hp, N);

    /* ---- 4b. stream memory operations: values written and waited for in stream order ---- */
    {
        CUdeviceptr d_vals;
        uint32_t vals[4];
        CU(cuMemAlloc(&d_vals, sizeof vals));
        CU(cuMemsetD32Async(d_vals, 0, 4, s));
        CU(cuStreamWriteValue32(s, d_vals, 0x600dcafeu, CU_STREAM_WRITE_VALUE_DEFAULT));
        CU(cuStreamWriteValue64(s, d_vals + 8, 0x1122334455667788ull, CU_STREAM_WRITE_VALUE_DEFAULT));
        CU(cuStreamWaitValue32(s, d_vals, 0x600dcafeu, CU_STREAM_WAIT_VALUE_EQ));
        CU(cuStreamWaitValue64(s, d_vals + 8, 0x1122334455667700ull, CU_STREAM_WAIT_VALUE_GEQ));
        CU(cuStreamSynchronize(s));
        CU(cuMemcpyDtoH(vals, d_vals, sizeof vals));
        printf("driver_api values %08x %08x %08x %08x\n", vals[0], vals[1], vals[2], vals[3]);
        CU(cuMemFree(d_vals));
    }

    /* ---- 5. optional: PTX text through cuModuleLoadData (driver JIT) ---- */
    CUmodule pmod = NULL;
    if (argc > 2) {
        void *ptx = read_file(argv[2], NULL);
        CUfunction f_scale;
        CU(cuModuleLoadData(&pmod, ptx));
        CU(cuModuleGetFunction(&f_scale, pmod, "hrr_scale"));
        int n = N;
        float sc = 0.5f;
        void *params[] = {&d_y, &n, &sc};
        CU(cuLaunchKernel(f_scale, blocks_for(N, 256), 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU(cuMemcpyDtoH(h, d_y, sizeof(float) * N));
        report("ptx", h, N);
        free(ptx);
    }

    /* ---- teardown ---- */
    CU(cuCtxSynchronize());
    CU(cuStreamDestroy(s));
    CU(cuMemFreeHost(hp));
    CU(cuMemFree(d_out));
    CU(cuMemFree(pool[0]));
    CU(cuMemFree(pool[1]));
    CU(cuMemFree(d_table));
    for (int b = 0; b < NBUF; b++) CU(cuMemFree(bufs[b]));
    CU(cuMemUnmap(vbase, gran));
    CU(cuMemUnmap(vbase + gran, gran));
    CU(cuMemRelease(vh0));
    CU(cuMemRelease(vh1));
    CU(cuMemAddressFree(vbase, vsize));
    CU(cuMemFree(d_x));
    CU(cuMemFree(d_y));
    if (pmod) CU(cuModuleUnload(pmod));
    CU(cuModuleUnload(mod));
    CU(cuDevicePrimaryCtxRelease(dev));
    printf("driver_api done\n");
    free(h);
    free(hv);
    free(hb);
    free(cubin);
    return 0;
}
