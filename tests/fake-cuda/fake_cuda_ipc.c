/*
 * Inter-process memory handles (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle).
 * With $FAKE_CUDA_IPC_DIR set, exporting an allocation moves the 2 MiB chunk that holds it into
 * a file of that folder (contents copied, then the file mapped shared at the same address), and
 * the handle names the file; another process opens the handle by mapping the file at a device
 * address of its own, so both see each other's writes. Without the folder: not supported. An
 * IPC event handle (of an event created INTERPROCESS | DISABLE_TIMING) opens as an event of the
 * opening process that has completed: waiting on it waits for nothing.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "fake_cuda_internal.h"

/* The 64 bytes of a handle. */
struct ipc_handle {
  char magic[8];
  uint64_t offset; /* of the allocation in its chunk */
  uint64_t size;   /* of the allocation */
  char name[40];   /* the chunk's file in $FAKE_CUDA_IPC_DIR */
};
_Static_assert(sizeof(struct ipc_handle) == 64, "CUipcMemHandle is 64 bytes");
static const char k_magic[8] = "FCIPC01";

/* Chunks exported by this process, by base. */
static struct exported { uintptr_t base; char name[40]; } *g_exp;
static size_t g_nexp, g_capexp;
/* Handles opened by this process. */
static struct opened { CUdeviceptr dptr; uintptr_t base; } *g_open;
static size_t g_nopen, g_capopen;
static unsigned g_files;

static int ipc_path(char *out, size_t n, const char *name) {
  const char *dir = getenv("FAKE_CUDA_IPC_DIR");
  return dir && snprintf(out, n, "%s/%s", dir, name) < (int)n;
}

/* Move the chunk [base, base+size) into a new file: its name, or NULL. */
static const char *export_chunk(uintptr_t base, size_t size) {
  for (size_t i = 0; i < g_nexp; i++)
    if (g_exp[i].base == base) return g_exp[i].name;
  GROW(g_exp, g_nexp, g_capexp);
  struct exported *e = &g_exp[g_nexp];
  snprintf(e->name, sizeof e->name, "fcipc-%d-%u", (int)getpid(), g_files++);
  char path[4096];
  if (!ipc_path(path, sizeof path, e->name)) return NULL;
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return NULL;
  int ok = write(fd, (const void *)base, size) == (ssize_t)size &&
           mmap((void *)base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
  close(fd);
  if (!ok) return NULL;
  e->base = base;
  g_nexp++;
  return e->name;
}

CUresult i_ipc_get_mem_handle(void *handle, CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  (void)c;
  if (!handle) return E_INVALID_VALUE;
  if (!getenv("FAKE_CUDA_IPC_DIR")) return E_NOT_SUPPORTED;
  long i = region_find_base(p, R_DEV);
  uintptr_t base;
  size_t size;
  if (i < 0 || !chunk_range(p, &base, &size)) return E_INVALID_VALUE;
  const char *name = export_chunk(base, size);
  if (!name) return E_OUT_OF_MEMORY;
  struct ipc_handle h = {{0}, p - base, g_reg[i].size, {0}};
  memcpy(h.magic, k_magic, sizeof h.magic);
  snprintf(h.name, sizeof h.name, "%s", name);
  memcpy(handle, &h, sizeof h);
  return E_SUCCESS;
}

CUresult i_ipc_open_mem_handle(CUdeviceptr *p, const void *handle, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  struct ipc_handle h;
  memcpy(&h, handle, sizeof h);
  if (!p || flags > 1 || memcmp(h.magic, k_magic, sizeof h.magic) || !memchr(h.name, 0, sizeof h.name))
    return E_INVALID_VALUE;
  if (strncmp(h.name, "fcipc-", 6) || strchr(h.name, '/')) return E_INVALID_VALUE;
  char path[4096];
  if (!ipc_path(path, sizeof path, h.name)) return E_NOT_SUPPORTED;
  int fd = open(path, O_RDWR);
  if (fd < 0) return E_INVALID_VALUE;
  struct stat st;
  uintptr_t base = 0;
  if (fstat(fd, &st) == 0 && h.size && h.offset < (uint64_t)st.st_size &&
      h.size <= (uint64_t)st.st_size - h.offset)
    base = dev_map_file(fd, (size_t)st.st_size);
  close(fd);
  if (!base) return E_INVALID_VALUE;
  *p = base + h.offset;
  region_add(*p, h.size, R_IPC, 3, c, 0, NULL);
  GROW(g_open, g_nopen, g_capopen);
  g_open[g_nopen++] = (struct opened){*p, base};
  return E_SUCCESS;
}

CUresult i_ipc_close_mem_handle(CUdeviceptr p) {
  struct fc_ctx *c;
  NEED_CTX(c);
  (void)c;
  for (size_t i = 0; i < g_nopen; i++)
    if (g_open[i].dptr == p) {
      long r = region_find_base(p, R_IPC);
      if (r >= 0) region_del((size_t)r);
      dev_unmap_file(g_open[i].base);
      g_open[i] = g_open[--g_nopen];
      return E_SUCCESS;
    }
  return E_INVALID_VALUE;
}

CUresult i_ipc_get_event_handle(void *handle, CUevent e) {
  struct fc_ctx *c;
  NEED_CTX(c);
  (void)c;
  struct fc_event *ev = e;
  if (!handle || !obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  if ((ev->flags & 6) != 6) return E_INVALID_VALUE; /* not INTERPROCESS | DISABLE_TIMING */
  struct ipc_handle h = {{0}, 0, 0, {0}};
  memcpy(h.magic, "FCIPCEV", 8);
  snprintf(h.name, sizeof h.name, "event-%d-%p", (int)getpid(), e);
  memcpy(handle, &h, sizeof h);
  return E_SUCCESS;
}

CUresult i_ipc_open_event_handle(CUevent *pe, const void *handle) {
  struct ipc_handle h;
  memcpy(&h, handle, sizeof h);
  if (!pe || memcmp(h.magic, "FCIPCEV", 8)) return E_INVALID_VALUE;
  CUresult r = i_event_create(pe, 6);
  if (r == E_SUCCESS) ((struct fc_event *)*pe)->recorded = 1;
  return r;
}
