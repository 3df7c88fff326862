// The driver functions a GPU test program of tests/gpu/ reaches through cudart's entry points
// (no -lcuda): driver_entry_point(f, "cuName", version) sets f to the driver's function of that
// name and ABI version (CUDA 12.5 and later; older cudart gives its default version), or prints
// "<CHECK_PROG>: no driver entry point <name>" and exits 2. Include cuda.h, cuda_runtime.h and
// check.h before this header.
#pragma once
#include <cstdio>
#include <cstdlib>

template <class F> static void driver_entry_point(F &f, const char *name, unsigned version) {
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    void *p = nullptr;
#if CUDART_VERSION >= 12050
    CK(cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q));
#else
    (void)version;
    CK(cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &q));
#endif
    if (q != cudaDriverEntryPointSuccess || !p) {
        std::fprintf(stderr, CHECK_PROG ": no driver entry point %s\n", name);
        std::exit(2);
    }
    f = reinterpret_cast<F>(p);
}
