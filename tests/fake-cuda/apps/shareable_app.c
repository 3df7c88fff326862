/*
 * shareable_app - two processes share physical memory through a POSIX file descriptor
 * (cuMemExportToShareableHandle / cuMemImportFromShareableHandle, as NCCL does with the cuMem
 * allocator), for multi-process replay (`hrr-playback ROOT --all`). Linked with -lcuda.
 *
 * The program forks before any CUDA call. The parent creates 2 MiB of physical memory (POSIX
 * descriptor handle type), maps it, fills it with pattern A, exports it and sends the descriptor
 * over a Unix socket (SCM_RIGHTS); the child imports it, maps it at an address of its own,
 * checks pattern A, writes pattern B over the second half and says so; the parent then checks
 * A, then B. A second allocation (pattern C) is exported and imported right after the first, so
 * that a replay pairing imports with the wrong export fails (with FAKE_CUDA_EXPORT_ONE_FILE the
 * fake exports every allocation as a descriptor of one file, as the NVIDIA driver does, and the
 * recorded keys are all the same). Each prints one line; exit 0 when both saw what they should.
 */
#include <sys/socket.h>

#include "two_process.h"

#include "vmm.h"
CUresult cuMemExportToShareableHandle(void *, CUmemGenericAllocationHandle, int, unsigned long long);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *, void *, int);

#define N ((size_t)2 << 20)

/* Map the physical memory h at a fresh address, readable and writable by device 0. */
static CUdeviceptr mapped(CUmemGenericAllocationHandle h) {
  CUdeviceptr va;
  CK(cuMemAddressReserve(&va, N, 0, 0, 0));
  CK(cuMemMap(va, N, 0, h, 0));
  CUmemAccessDesc acc = {{1, 0}, 3};
  CK(cuMemSetAccess(va, N, &acc, 1));
  return va;
}

static int send_fd(int sock, int fd) {
  char byte = 1, control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {&byte, 1};
  struct msghdr msg = {0};
  memset(control, 0, sizeof control);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock) {
  char byte, control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {&byte, 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(sock, &msg, 0) != 1) return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

/* Unmap the memory mapped at va, free its addresses, release h. */
static void unmapped(CUdeviceptr va, CUmemGenericAllocationHandle h) {
  CK(cuMemUnmap(va, N));
  CK(cuMemAddressFree(va, N));
  CK(cuMemRelease(h));
}

/* Import the next descriptor on sock: its memory mapped. */
static CUdeviceptr imported(int sock, CUmemGenericAllocationHandle *h) {
  int fd = recv_fd(sock);
  if (fd < 0) exit(1);
  CK(cuMemImportFromShareableHandle(h, (void *)(long)fd, 1));
  close(fd);
  return mapped(*h);
}

static int child(int sock) {
  who = "child";
  context();
  CUmemGenericAllocationHandle h, h2;
  CUdeviceptr va = imported(sock, &h);
  CUdeviceptr va2 = imported(sock, &h2);
  unsigned char *buf = malloc(N);
  CK(cuMemcpyDtoH_v2(buf, va2, N));
  int ok = 1;
  for (size_t i = 0; i < N; i++) ok &= buf[i] == pattern(i, 2);
  CK(cuMemcpyDtoH_v2(buf, va, N));
  for (size_t i = 0; i < N; i++) ok &= buf[i] == pattern(i, 0);
  for (size_t i = N / 2; i < N; i++) buf[i] = pattern(i, 1);
  CK(cuMemcpyHtoD_v2(va + N / 2, buf + N / 2, N / 2));
  unmapped(va, h);
  unmapped(va2, h2);
  return child_answer(sock, "patterns A and C", ok);
}

int main(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(sv[0]);
    return child(sv[1]);
  }
  close(sv[1]);
  who = "parent";
  context();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = 1;                 /* pinned */
  prop.requestedHandleTypes = 1; /* POSIX file descriptor */
  prop.location.type = 1;        /* device 0 */
  CUmemGenericAllocationHandle h;
  CK(cuMemCreate(&h, N, &prop, 0));
  CUdeviceptr va = mapped(h);
  unsigned char *buf = malloc(N);
  for (size_t i = 0; i < N; i++) buf[i] = pattern(i, 0);
  CK(cuMemcpyHtoD_v2(va, buf, N));
  CUmemGenericAllocationHandle h2;
  CK(cuMemCreate(&h2, N, &prop, 0));
  CUdeviceptr va2 = mapped(h2);
  for (size_t i = 0; i < N; i++) buf[i] = pattern(i, 2);
  CK(cuMemcpyHtoD_v2(va2, buf, N));
  for (CUmemGenericAllocationHandle *e = &h; e; e = e == &h ? &h2 : NULL) {
    int fd = -1;
    CK(cuMemExportToShareableHandle(&fd, *e, 1, 0));
    if (send_fd(sv[0], fd)) return 1;
    close(fd);
  }
  int status;
  int ok = parent_check(sv[0], pid, &status, va, buf, N);
  unmapped(va, h);
  unmapped(va2, h2);
  return parent_verdict(ok, status);
}
