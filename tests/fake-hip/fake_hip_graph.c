/*
 * fake_hip_graph.c - stream capture and graphs of launches, memsets and device-to-device copies:
 * a stream between hipStreamBeginCapture and hipStreamEndCapture appends its kernel launches
 * (grid, block and argument bytes, copied), memsets and D2D copies to a graph instead of running
 * them; hipGraphInstantiate copies the graph, hipGraphLaunch runs its nodes in order. Copies to
 * or from host memory and synchronisations of a capturing stream are refused
 * (hipErrorStreamCaptureUnsupported), which is all the test programs need.
 */
#include "fake_hip_internal.h"

/* A launch (`f` set), a memset (`count` elements of `width` bytes at `dst`) or, with `src`, a
   copy of `count` bytes. */
struct node {
  struct fh_func *f;
  const void *src;
  dim3 grid, block;
  unsigned char args[256];
  size_t len;
  void *dst;
  unsigned value;
  size_t count;
  int width;
};
struct fh_graph { struct node *nodes; size_t n, cap; int exec; };
typedef struct fh_graph *hipGraph_t, *hipGraphExec_t;
typedef void *hipGraphNode_t;

struct fh_graph *capturing(hipStream_t s) {
  return (uintptr_t)s > 2 && obj_known(s) ? s->capture : NULL;
}

/* A new, zeroed node at the end of `g`. */
static struct node *node_new(struct fh_graph *g) {
  GROW(g->nodes, g->n, g->cap);
  struct node *n = &g->nodes[g->n++];
  memset(n, 0, sizeof *n);
  return n;
}

hipError_t graph_add_launch(struct fh_graph *g, struct fh_func *f, dim3 grid, dim3 block, struct kargs a) {
  if (a.len > sizeof g->nodes->args) return E_INVALID_VALUE;
  struct node *n = node_new(g);
  *n = (struct node){.f = f, .grid = grid, .block = block, .len = a.len};
  memcpy(n->args, a.buf, a.len);
  return E_SUCCESS;
}

hipError_t graph_add_memset(struct fh_graph *g, void *dst, unsigned v, size_t count, int width) {
  *node_new(g) = (struct node){.dst = dst, .value = v, .count = count, .width = width};
  return E_SUCCESS;
}

hipError_t graph_add_copy(struct fh_graph *g, void *dst, const void *src, size_t n) {
  *node_new(g) = (struct node){.dst = dst, .src = src, .count = n};
  return E_SUCCESS;
}

static struct fh_graph *graph_new(int exec) {
  struct fh_graph *g = calloc(1, sizeof *g);
  g->exec = exec;
  obj_add(g);
  return g;
}

static int graph_known(const struct fh_graph *g, int exec) { return g && obj_known(g) && g->exec == exec; }

hipError_t hipStreamBeginCapture(hipStream_t s, int mode) {
  (void)mode;
  lock();
  hipError_t r = E_SUCCESS;
  if ((uintptr_t)s <= 2 || !obj_known(s)) r = E_STREAM_CAPTURE_UNSUPPORTED; /* not the null stream */
  else if (s->capture) r = E_ILLEGAL_STATE;
  else s->capture = graph_new(0);
  unlock();
  RET(r);
}

hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *pg) {
  lock();
  struct fh_graph *g = capturing(s);
  if (g) s->capture = NULL;
  unlock();
  if (!g) RET(E_ILLEGAL_STATE);
  if (pg) *pg = g;
  RET(E_SUCCESS);
}

hipError_t hipStreamIsCapturing(hipStream_t s, int *status) {
  lock();
  int on = capturing(s) != NULL;
  unlock();
  if (status) *status = on; /* hipStreamCaptureStatusActive = 1 */
  RET(E_SUCCESS);
}

static hipError_t instantiate(hipGraphExec_t *pe, hipGraph_t g) {
  if (!pe) return E_INVALID_VALUE;
  lock();
  hipError_t r = E_INVALID_VALUE;
  if (graph_known(g, 0)) {
    struct fh_graph *e = graph_new(1);
    e->nodes = malloc((g->n ? g->n : 1) * sizeof *e->nodes);
    memcpy(e->nodes, g->nodes, g->n * sizeof *e->nodes);
    e->n = e->cap = g->n;
    *pe = e;
    r = E_SUCCESS;
  }
  unlock();
  return r;
}

hipError_t hipGraphInstantiate(hipGraphExec_t *pe, hipGraph_t g, hipGraphNode_t *err, char *log, size_t size) {
  (void)err;
  if (log && size) log[0] = 0;
  RET(instantiate(pe, g));
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *pe, hipGraph_t g, unsigned long long flags) {
  (void)flags;
  RET(instantiate(pe, g));
}

hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
  lock();
  hipError_t r = graph_known(e, 1) && stream_ok(s) && !capturing(s) ? E_SUCCESS : E_INVALID_HANDLE;
  for (size_t i = 0; r == E_SUCCESS && i < e->n; i++) {
    struct node *n = &e->nodes[i];
    if (n->f) r = run_args(n->f, n->grid, n->block, (struct kargs){n->args, n->len});
    else if (n->src) r = copy_now(n->dst, n->src, n->count, K_D2D);
    else r = set_elements(n->dst, n->value, n->count, n->width);
  }
  unlock();
  RET(r);
}

static hipError_t destroy(struct fh_graph *g, int exec) {
  lock();
  int ok = graph_known(g, exec) && obj_del(g);
  unlock();
  if (!ok) return E_INVALID_HANDLE;
  free(g->nodes);
  free(g);
  return E_SUCCESS;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t e) { RET(destroy(e, 1)); }
hipError_t hipGraphDestroy(hipGraph_t g) { RET(destroy(g, 0)); }
