/*
 * check.h - CK(call) for the test programs that call the driver's exports themselves
 * (copies_app, copy_app, hostmem_app, the two-process apps): a call that returns anything but 0
 * prints "PROG: <the call as written> failed: <its result>" on stderr and the program exits 1.
 * Define CHECK_PROG (an expression giving the program's name) and CUresult before using CK.
 */
#ifndef HRR_FAKE_CUDA_CHECK_H
#define HRR_FAKE_CUDA_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#ifndef CHECK_PROG
#error "define CHECK_PROG (the program's name) before including check.h"
#endif

#define CK(call)                                                            \
  do {                                                                      \
    CUresult r__ = (call);                                                  \
    if (r__) {                                                              \
      fprintf(stderr, "%s: %s failed: %d\n", CHECK_PROG, #call, r__);       \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

#endif
