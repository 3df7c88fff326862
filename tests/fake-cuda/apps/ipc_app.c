/*
 * ipc_app - two processes share device memory through an IPC handle (multi-process replay,
 * `hrr-playback ROOT --all`). Linked with -lcuda; needs $FAKE_CUDA_IPC_DIR on the fake driver.
 *
 * The program forks before any CUDA call. The parent allocates 3 MiB, fills it with pattern A,
 * records an interprocess event behind the copy, exports both (cuIpcGetMemHandle,
 * cuIpcGetEventHandle) and sends the handles down a pipe; the child opens both, makes its stream
 * wait for the event, copies it back and checks pattern A, overwrites the second half with pattern B, synchronises, closes
 * the handle and says so up another pipe; the parent then copies the whole buffer back and
 * checks A then B. Each prints one line; exit 0 when both saw what they should.
 */
#include "two_process.h"

CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuIpcGetMemHandle(CUipcMemHandle *, CUdeviceptr);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *, CUipcMemHandle, unsigned);
CUresult cuIpcCloseMemHandle(CUdeviceptr);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned);
CUresult cuIpcGetEventHandle(CUipcMemHandle *, CUevent);
CUresult cuIpcOpenEventHandle(CUevent *, CUipcMemHandle);

#define N (3u << 20)

static int child(int from_parent, int to_parent) {
  who = "child";
  CUipcMemHandle h[2];
  if (read(from_parent, h, sizeof h) != (ssize_t)sizeof h) return 1;
  context();
  CUdeviceptr d;
  CUevent filled;
  CK(cuIpcOpenMemHandle_v2(&d, h[0], 1));
  CK(cuIpcOpenEventHandle(&filled, h[1]));
  CK(cuStreamWaitEvent(NULL, filled, 0));
  unsigned char *buf = malloc(N);
  CK(cuMemcpyDtoH_v2(buf, d, N));
  int ok = 1;
  for (size_t i = 0; i < N; i++) ok &= buf[i] == pattern(i, 0);
  for (size_t i = N / 2; i < N; i++) buf[i] = pattern(i, 1);
  CK(cuMemcpyHtoD_v2(d + N / 2, buf + N / 2, N / 2));
  CK(cuCtxSynchronize());
  CK(cuIpcCloseMemHandle(d));
  CK(cuEventDestroy_v2(filled));
  return child_answer(to_parent, "pattern A", ok);
}

int main(void) {
  int down[2], up[2];
  if (pipe(down) || pipe(up)) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) return child(down[0], up[1]);
  who = "parent";
  context();
  CUdeviceptr d;
  CK(cuMemAlloc_v2(&d, N));
  unsigned char *buf = malloc(N);
  for (size_t i = 0; i < N; i++) buf[i] = pattern(i, 0);
  CK(cuMemcpyHtoD_v2(d, buf, N));
  CUevent filled;
  CK(cuEventCreate(&filled, 6)); /* INTERPROCESS | DISABLE_TIMING */
  CK(cuEventRecord(filled, NULL));
  CUipcMemHandle h[2];
  CK(cuIpcGetMemHandle(&h[0], d));
  CK(cuIpcGetEventHandle(&h[1], filled));
  if (write(down[1], h, sizeof h) != (ssize_t)sizeof h) return 1;
  int status;
  int ok = parent_check(up[0], pid, &status, d, buf, N);
  CK(cuMemFree_v2(d));
  return parent_verdict(ok, status);
}
