// The error checks of the GPU test programs of tests/gpu/: a call that fails prints the
// program's name (CHECK_PROG, defined before this header), where, the call and its error, and
// the program exits with CHECK_EXIT (2 unless the program defines another).
//   CK(call): a CUDA runtime call (cuda_runtime.h included before this header)
//   CU(call): a CUDA driver call (cuda.h included before; CHECK_ERROR_NAMES defined: libcuda is
//             linked, the error is named)
//   CB(call): a cuBLAS call (cublas_v2.h included before)
#pragma once
#include <stdio.h>
#include <stdlib.h>

#ifndef CHECK_PROG
#error "define CHECK_PROG (the program's name) before including check.h"
#endif
#ifndef CHECK_EXIT
#define CHECK_EXIT 2
#endif

#define CHECK_FAIL(fmt, ...)                                                                  \
    do {                                                                                      \
        fprintf(stderr, CHECK_PROG ": %s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);    \
        exit(CHECK_EXIT);                                                                     \
    } while (0)

#ifdef __CUDA_RUNTIME_H__
#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) CHECK_FAIL("%s: %s", #call, cudaGetErrorString(e_));           \
    } while (0)
#endif

#ifdef __cuda_cuda_h__
// The error's name needs libcuda linked (CHECK_ERROR_NAMES defined); a program that reaches
// the driver through cudart's entry points gets the number.
#ifdef CHECK_ERROR_NAMES
#define CHECK_CU_NAME(r, name) cuGetErrorName((r), &(name))
#else
#define CHECK_CU_NAME(r, name) ((void)(r))
#endif
#define CU(call)                                                                              \
    do {                                                                                      \
        CUresult r_ = (call);                                                                 \
        if (r_ != CUDA_SUCCESS) {                                                             \
            const char *name_ = NULL;                                                         \
            CHECK_CU_NAME(r_, name_);                                                         \
            CHECK_FAIL("%s failed: %s (%d)", #call, name_ ? name_ : "CUDA error", (int)r_);   \
        }                                                                                     \
    } while (0)
#endif

#ifdef CUBLAS_V2_H_
#define CB(call)                                                                              \
    do {                                                                                      \
        cublasStatus_t s_ = (call);                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS) CHECK_FAIL("%s: cublas status %d", #call, (int)s_);  \
    } while (0)
#endif
