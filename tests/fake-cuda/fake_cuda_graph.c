/*
 * fake_cuda_graph.c - CUDA graphs: nodes and their deep copies, dependency order,
 * instantiation and launch, explicit node construction (kernel, memcpy, memset, host, child,
 * event, conditional, memory nodes), setting node parameters, clone and exec update.
 */
#include "fake_cuda_internal.h"

struct fc_node *graph_add(struct fc_graph *g) {
  GROW(g->nodes, g->n, g->cap);
  struct fc_node *nd = &g->nodes[g->n++];
  memset(nd, 0, sizeof *nd);
  return nd;
}
struct fc_node *captured_node(CUstream s, int kind) {
  struct fc_graph *g = stream_graph(s);
  if (!g) return NULL;
  struct fc_node *nd = graph_add(g);
  nd->kind = kind;
  return nd;
}
static void graph_free(struct fc_graph *g);
/* What a node owns (its argument buffer, dependencies, child graph; not its handle). */
static void node_release(struct fc_node *nd) {
  free(nd->pb);
  free(nd->deps);
  if (nd->child) graph_free(nd->child);
  nd->pb = NULL;
  nd->deps = NULL;
  nd->child = NULL;
}
void nodes_free(struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    node_release(&nodes[i]);
    if (nodes[i].h) {
      obj_del(nodes[i].h);
      free(nodes[i].h);
    }
  }
  free(nodes);
}
static void graph_free(struct fc_graph *g) {
  obj_del(g); /* a conditional body is a handle of the program's too */
  nodes_free(g->nodes, g->n);
  free(g);
}
static struct fc_graph *graph_dup(const struct fc_graph *g);
/* Deep copy of a node (without its handle). */
static void node_copy(struct fc_node *d, const struct fc_node *s) {
  *d = *s;
  d->h = NULL;
  if (s->pb) {
    d->pb = malloc(FC_PARAM_BUF);
    if (!d->pb) abort();
    memcpy(d->pb, s->pb, FC_PARAM_BUF);
  }
  if (s->ndeps) {
    d->deps = malloc(s->ndeps * sizeof *d->deps);
    if (!d->deps) abort();
    memcpy(d->deps, s->deps, s->ndeps * sizeof *d->deps);
  }
  if (s->child) d->child = graph_dup(s->child);
}
static struct fc_graph *graph_dup(const struct fc_graph *g) {
  struct fc_graph *d = calloc(1, sizeof *d);
  if (!d) abort();
  for (size_t i = 0; i < g->n; i++) node_copy(graph_add(d), &g->nodes[i]);
  return d;
}
/* Deep copy of nodes[0..n) appended to g (as captured work: no dependencies). */
static void graph_append(struct fc_graph *g, const struct fc_node *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct fc_node *nd = graph_add(g);
    node_copy(nd, &nodes[i]);
    free(nd->deps);
    nd->deps = NULL;
    nd->ndeps = 0;
  }
}
/* order[0..g->n): the nodes in dependency order; E_INVALID_VALUE for a cycle. */
static CUresult graph_order(const struct fc_graph *g, size_t *order) {
  char *done = calloc(g->n ? g->n : 1, 1);
  if (!done) return E_OUT_OF_MEMORY;
  for (size_t k = 0; k < g->n; k++) {
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < g->n && pick == SIZE_MAX; i++) {
      if (done[i]) continue;
      int ready = 1;
      for (size_t j = 0; j < g->nodes[i].ndeps && ready; j++) ready = done[g->nodes[i].deps[j]];
      if (ready) pick = i;
    }
    if (pick == SIZE_MAX) {
      free(done);
      return E_INVALID_VALUE;
    }
    done[pick] = 1;
    order[k] = pick;
  }
  free(done);
  return E_SUCCESS;
}
CUresult i_graph_create(CUgraph *pg, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pg || flags) return E_INVALID_VALUE;
  struct fc_graph *g = calloc(1, sizeof *g);
  if (!g) return E_OUT_OF_MEMORY;
  obj_add(g, T_GRAPH);
  *pg = g;
  return E_SUCCESS;
}
CUresult i_graph_instantiate(CUgraphExec *pe, CUgraph g, cuuint64_t flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pe || flags > 0xf) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  size_t *order = malloc((g->n ? g->n : 1) * sizeof *order);
  if (!order) return E_OUT_OF_MEMORY;
  CUresult e = graph_order(g, order);
  if (e) {
    free(order);
    return e;
  }
  struct fc_gexec *x = calloc(1, sizeof *x);
  if (!x) abort();
  struct fc_graph tmp = {NULL, 0, 0};
  for (size_t k = 0; k < g->n; k++) {
    const struct fc_node *src = &g->nodes[order[k]];
    if (!src->kind) continue; /* destroyed */
    graph_append(&tmp, src, 1);
    tmp.nodes[tmp.n - 1].orig = order[k];
  }
  free(order);
  x->nodes = tmp.nodes;
  x->n = tmp.n;
  x->src = g;
  obj_add(x, T_GEXEC);
  *pe = x;
  return E_SUCCESS;
}
CUresult i_graph_instantiate_params(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
  if (!p) return E_INVALID_VALUE;
  if ((p->flags & 2) && chk_stream(p->hUploadStream)) return E_INVALID_HANDLE; /* UPLOAD */
  CUresult e = i_graph_instantiate(pe, g, p->flags);
  p->hErrNode_out = NULL;
  p->result_out = e ? 1 : 0; /* CUDA_GRAPH_INSTANTIATE_ERROR / _SUCCESS */
  return e;
}

/* One side of a CUDA_MEMCPY3D: its base address and whether it is device memory (-1: unified,
 * found from the address as copy_checked does). */
static CUresult graph_run(const struct fc_graph *g);
static CUresult node_run(const struct fc_node *nd) {
  CUresult e = E_SUCCESS;
  switch (nd->kind) {
  case N_KERNEL: return run_kernel(nd->f, nd->pb, nd->threads);
  case N_MEMSET:
    for (size_t r = 0; r < (nd->height ? nd->height : 1) && !e; r++)
      e = memset_run(nd->dst + r * nd->pitch, nd->v, nd->n, nd->width);
    return e;
  case N_COPY: return copy_run(nd->dst, nd->dst_dev, nd->src, nd->src_dev, nd->n);
  case N_COPY3D: return copy3d_run(&nd->cp);
  case N_PLAN: plan_run((const struct plan *)nd->pb); return E_SUCCESS;
  case N_HOST: nd->hfn(nd->hdata); return E_SUCCESS; /* host nodes must not call CUDA */
  case N_EVREC:
    if (obj_is(nd->ev, T_EVENT)) nd->ev->recorded = 1;
    return E_SUCCESS;
  case N_CHILD: return graph_run(nd->child);
  case N_COND: return (nd->cond->flags & 1) && nd->cond->dflt ? graph_run(nd->child) : E_SUCCESS;
  case 0: case N_EMPTY: case N_EVWAIT: return E_SUCCESS;
  default: return E_LAUNCH_FAILED;
  }
}
static CUresult graph_run(const struct fc_graph *g) {
  size_t *order = malloc((g->n ? g->n : 1) * sizeof *order);
  if (!order) return E_OUT_OF_MEMORY;
  CUresult e = graph_order(g, order);
  for (size_t k = 0; k < g->n && !e; k++) e = node_run(&g->nodes[order[k]]);
  free(order);
  return e;
}
CUresult i_graph_launch(CUgraphExec x, CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  CUresult e = chk_stream(s);
  if (e) return e;
  struct fc_graph *g = stream_graph(s);
  if (g) { /* launched into a capture: becomes part of that graph */
    graph_append(g, x->nodes, x->n);
    return E_SUCCESS;
  }
  for (size_t i = 0; i < x->n && !e; i++) e = node_run(&x->nodes[i]);
  return e;
}
CUresult i_graph_upload(CUgraphExec x, CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  return chk_stream(s);
}
CUresult i_graph_destroy(CUgraph g) {
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (g->owned) return E_INVALID_VALUE;
  obj_del(g);
  graph_free(g);
  return E_SUCCESS;
}
CUresult i_graph_exec_destroy(CUgraphExec x) {
  if (!obj_is(x, T_GEXEC)) return E_INVALID_HANDLE;
  obj_del(x);
  nodes_free(x->nodes, x->n);
  free(x);
  return E_SUCCESS;
}

/* ---- explicit construction: a node is filled from its parameters, then added ---- */

static CUresult kernel_fill(struct fc_node *nd, const void *fh, const CUDA_KERNEL_NODE_PARAMS *p) {
  struct fc_func *f = func_or_kernel(fh);
  if (!f) return E_INVALID_HANDLE;
  CUresult e = launch_dims(f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                           p->sharedMemBytes);
  if (e) return e;
  unsigned char pb[FC_PARAM_BUF];
  if ((e = launch_args(f, p->kernelParams, p->extra, pb))) return e;
  nd->kind = N_KERNEL;
  nd->f = f;
  nd->threads = (unsigned long long)p->gridDimX * p->blockDimX;
  nd->pb = malloc(FC_PARAM_BUF);
  if (!nd->pb) abort();
  memcpy(nd->pb, pb, FC_PARAM_BUF);
  return E_SUCCESS;
}
/* v2 parameters (func, or kern when func is NULL). */
CUresult kernel_fill_v2(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS *p) {
  if (!p) return E_INVALID_VALUE;
  return kernel_fill(nd, p->func ? (const void *)p->func : (const void *)p->kern, p);
}
CUresult kernel_fill_v1(struct fc_node *nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
  if (!p) return E_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS v2;
  memset(&v2, 0, sizeof v2);
  memcpy(&v2, p, sizeof *p);
  return kernel_fill_v2(nd, &v2);
}
CUresult memcpy_fill(struct fc_node *nd, const CUDA_MEMCPY3D *p) {
  uintptr_t b;
  int d;
  if (!p || !p->WidthInBytes) return E_INVALID_VALUE;
  if (copy3d_side(p->srcMemoryType, p->srcHost, p->srcDevice, &b, &d) || !b) return E_INVALID_VALUE;
  if (copy3d_side(p->dstMemoryType, p->dstHost, p->dstDevice, &b, &d) || !b) return E_INVALID_VALUE;
  nd->kind = N_COPY3D;
  nd->cp = *p;
  return E_SUCCESS;
}
CUresult memset_fill(struct fc_node *nd, const CUDA_MEMSET_NODE_PARAMS *p) {
  if (!p || !p->width || !p->height) return E_INVALID_VALUE;
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return E_INVALID_VALUE;
  if (p->dst % p->elementSize || (p->height > 1 && p->pitch < p->width * p->elementSize)) return E_INVALID_VALUE;
  nd->kind = N_MEMSET;
  nd->dst = p->dst;
  nd->v = p->value;
  nd->n = p->width;
  nd->width = (int)p->elementSize;
  nd->pitch = p->pitch;
  nd->height = p->height;
  return E_SUCCESS;
}
CUresult host_fill(struct fc_node *nd, const CUDA_HOST_NODE_PARAMS *p) {
  if (!p || !p->fn) return E_INVALID_VALUE;
  nd->kind = N_HOST;
  nd->hfn = p->fn;
  nd->hdata = p->userData;
  return E_SUCCESS;
}
CUresult child_fill(struct fc_node *nd, CUgraph child) {
  if (!obj_is(child, T_GRAPH)) return E_INVALID_HANDLE;
  nd->kind = N_CHILD;
  nd->child = graph_dup(child); /* the child graph is cloned, as by the real driver */
  return E_SUCCESS;
}
static CUresult event_fill(struct fc_node *nd, CUevent ev, int kind) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  nd->kind = kind;
  nd->ev = ev;
  return E_SUCCESS;
}
/* A conditional node (IF with one body graph only; WHILE and SWITCH are not implemented). */
static CUresult cond_fill(struct fc_node *nd, const unsigned long long *handle, int type, unsigned size) {
  struct fc_cond *c = (struct fc_cond *)(uintptr_t)*handle;
  if (!obj_is(c, T_COND)) return E_INVALID_VALUE;
  if (type != 0 || size != 1) return E_NOT_SUPPORTED;
  struct fc_graph *body = calloc(1, sizeof *body);
  if (!body) abort();
  body->owned = 1;
  obj_add(body, T_GRAPH);
  nd->kind = N_COND;
  nd->cond = c;
  nd->child = body;
  return E_SUCCESS;
}
CUresult i_cond_handle_create(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx, unsigned dflt,
                                     unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!out || flags > 1) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (!obj_is(ctx, T_CTX)) return E_INVALID_CONTEXT;
  struct fc_cond *h = calloc(1, sizeof *h); /* lives as long as the process (as its graph would) */
  if (!h) abort();
  h->dflt = dflt;
  h->flags = flags;
  obj_add(h, T_COND);
  *out = (CUgraphConditionalHandle)(uintptr_t)h;
  return E_SUCCESS;
}
/* The filled node `nd` (`e`: how filling went) added to g after deps[0..n). */
static CUresult node_add(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, struct fc_node *nd,
                         CUresult e) {
  struct fc_ctx *c;
  CUresult ce = cur_ctx(&c);
  if (!e) e = ce;
  if (!e && !out) e = E_INVALID_VALUE;
  if (!e && !obj_is(g, T_GRAPH)) e = E_INVALID_HANDLE;
  if (!e && n && !deps) e = E_INVALID_VALUE;
  for (size_t i = 0; i < n && !e; i++)
    if (!obj_is(deps[i], T_GNODE) || deps[i]->g != g) e = E_INVALID_VALUE;
  if (e) {
    node_release(nd);
    return e;
  }
  if (n) {
    nd->deps = malloc(n * sizeof *nd->deps);
    if (!nd->deps) abort();
    for (size_t i = 0; i < n; i++) nd->deps[i] = deps[i]->idx;
    nd->ndeps = n;
  }
  struct fc_nodeh *h = malloc(sizeof *h);
  if (!h) abort();
  h->g = g;
  h->idx = g->n;
  nd->h = h;
  *graph_add(g) = *nd;
  obj_add(h, T_GNODE);
  *out = h;
  return E_SUCCESS;
}
/* The generic CUgraphNodeParams. */
CUresult node_add_generic(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                 CUgraphNodeParams *p) {
  struct fc_node nd;
  memset(&nd, 0, sizeof nd);
  CUresult e = E_INVALID_VALUE;
  if (p) switch (p->type) {
    case 0: e = kernel_fill_v2(&nd, &p->u.kernel); break;
    case 1: e = memcpy_fill(&nd, &p->u.memcpy.copyParams); break;
    case 2: e = memset_fill(&nd, &p->u.memset.p); break;
    case 3: e = host_fill(&nd, &p->u.host); break;
    case 4: e = child_fill(&nd, p->u.graph.graph); break;
    case 5: nd.kind = N_EMPTY; e = E_SUCCESS; break;
    case 6: e = event_fill(&nd, p->u.event.event, N_EVWAIT); break;
    case 7: e = event_fill(&nd, p->u.event.event, N_EVREC); break;
    case 13: e = cond_fill(&nd, &p->u.conditional.handle, p->u.conditional.type, p->u.conditional.size); break;
    default: e = E_NOT_SUPPORTED; break; /* memory nodes are not implemented */
    }
  struct fc_graph *body = nd.kind == N_COND ? nd.child : NULL;
  e = node_add(out, g, deps, n, &nd, e);
  if (!e && body) {
    /* as the driver does: phGraph_out is an output, pointed at an array of the driver's that
       lives as long as the node (never freed here) */
    CUgraph *bodies = malloc(sizeof *bodies);
    if (!bodies) abort();
    bodies[0] = body;
    p->u.conditional.phGraph_out = bodies;
  }
  return e;
}
#define NODE_ADD(fill) \
  do { struct fc_node nd; memset(&nd, 0, sizeof nd); CUresult e = (fill); return node_add(out, g, deps, n, &nd, e); } while (0)
CUresult i_add_kernel_v1(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                                const CUDA_KERNEL_NODE_PARAMS_v1 *p) { NODE_ADD(kernel_fill_v1(&nd, p)); }
CUresult i_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_KERNEL_NODE_PARAMS *p) { NODE_ADD(kernel_fill_v2(&nd, p)); }
CUresult i_add_memcpy(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_MEMCPY3D *p, CUcontext ctx) {
  NODE_ADD(obj_is(ctx, T_CTX) ? memcpy_fill(&nd, p) : E_INVALID_CONTEXT);
}
CUresult i_add_memset(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                             const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  NODE_ADD(obj_is(ctx, T_CTX) ? memset_fill(&nd, p) : E_INVALID_CONTEXT);
}
CUresult i_add_host(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                           const CUDA_HOST_NODE_PARAMS *p) { NODE_ADD(host_fill(&nd, p)); }
CUresult i_add_empty(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n) {
  NODE_ADD((nd.kind = N_EMPTY, E_SUCCESS));
}
/* Memory alloc/free nodes: the allocation is made when the node is added (its address is the
 * graph's from then on) and kept; both nodes run as empty ones. `p` is a
 * CUDA_MEM_ALLOC_NODE_PARAMS: bytesize at byte 104, dptr (out) at 112. */
static CUresult mem_alloc_fill(struct fc_node *nd, unsigned char *p) {
  if (!p) return E_INVALID_VALUE;
  size_t bytes;
  memcpy(&bytes, p + 104, 8);
  CUdeviceptr d;
  CUresult e = i_mem_alloc(&d, bytes, NULL, 0);
  if (e) return e;
  memcpy(p + 112, &d, 8);
  nd->kind = N_EMPTY;
  return E_SUCCESS;
}
CUresult i_add_mem_alloc(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, unsigned char *p) {
  NODE_ADD(mem_alloc_fill(&nd, p));
}
CUresult i_add_mem_free(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d) {
  NODE_ADD((nd.kind = N_EMPTY, d ? E_SUCCESS : E_INVALID_VALUE));
}
CUresult i_add_event(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUevent ev, int kind) {
  NODE_ADD(event_fill(&nd, ev, kind));
}
CUresult i_add_child(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child) {
  NODE_ADD(child_fill(&nd, child));
}
CUresult i_add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (n && (!from || !to)) return E_INVALID_VALUE;
  for (size_t i = 0; i < n; i++)
    if (!obj_is(from[i], T_GNODE) || !obj_is(to[i], T_GNODE) || from[i]->g != g || to[i]->g != g ||
        from[i] == to[i])
      return E_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    struct fc_node *t = &g->nodes[to[i]->idx];
    size_t cap = t->ndeps;
    GROW(t->deps, t->ndeps, cap);
    t->deps[t->ndeps++] = from[i]->idx;
  }
  return E_SUCCESS;
}
/* Replace what `dst` does by `nd`'s parameters (same kind; its dependencies, handle and origin
 * stay). */
CUresult node_set(struct fc_node *dst, struct fc_node *nd, CUresult e) {
  if (!e && dst->kind != nd->kind) e = E_INVALID_VALUE;
  if (e) {
    node_release(nd);
    return e;
  }
  size_t *deps = dst->deps, ndeps = dst->ndeps, orig = dst->orig;
  struct fc_nodeh *h = dst->h;
  dst->deps = NULL;
  node_release(dst);
  *dst = *nd;
  dst->deps = deps;
  dst->ndeps = ndeps;
  dst->orig = orig;
  dst->h = h;
  return E_SUCCESS;
}
/* The handle of node idx of g, made when the node has none (a captured node). */
struct fc_nodeh *node_handle(struct fc_graph *g, size_t idx) {
  struct fc_node *nd = &g->nodes[idx];
  if (!nd->h) {
    nd->h = malloc(sizeof *nd->h);
    if (!nd->h) abort();
    nd->h->g = g;
    nd->h->idx = idx;
    obj_add(nd->h, T_GNODE);
  }
  return nd->h;
}
/* The graph node of handle h. */
struct fc_node *graph_node(CUgraphNode h) {
  return obj_is(h, T_GNODE) && obj_is(h->g, T_GRAPH) ? &h->g->nodes[h->idx] : NULL;
}
/* The node of exec x instantiated from graph node h. */
struct fc_node *exec_node(CUgraphExec x, CUgraphNode h) {
  if (!obj_is(x, T_GEXEC) || !obj_is(h, T_GNODE) || h->g != x->src) return NULL;
  for (size_t i = 0; i < x->n; i++)
    if (x->nodes[i].orig == h->idx) return &x->nodes[i];
  return NULL;
}
CUresult i_graph_destroy_node(CUgraphNode h) {
  struct fc_node *nd = graph_node(h);
  if (!nd) return E_INVALID_VALUE;
  node_release(nd);
  nd->kind = 0; /* runs as nothing; what depended on it still follows its dependencies */
  nd->h = NULL;
  obj_del(h);
  free(h);
  return E_SUCCESS;
}
CUresult i_graph_clone(CUgraph *out, CUgraph g) {
  if (!out) return E_INVALID_VALUE;
  if (!obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  struct fc_graph *c = graph_dup(g);
  obj_add(c, T_GRAPH);
  *out = c;
  return E_SUCCESS;
}
/* cuGraphExecUpdate: the exec takes g's parameters when g has the same nodes (kinds, in order). */
CUresult i_graph_exec_update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  if (!obj_is(x, T_GEXEC) || !obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  CUgraphExec y;
  CUresult e = i_graph_instantiate(&y, g, 0);
  if (e) return e;
  int same = y->n == x->n;
  for (size_t i = 0; i < x->n && same; i++) same = x->nodes[i].kind == y->nodes[i].kind;
  if (info) {
    memset(info, 0, sizeof *info);
    info->result = same ? 0 : 3;
  }
  if (same)
    for (size_t i = 0; i < x->n; i++) {
      y->nodes[i].orig = x->nodes[i].orig;
      struct fc_node t = x->nodes[i];
      x->nodes[i] = y->nodes[i];
      y->nodes[i] = t;
    }
  i_graph_exec_destroy(y);
  return same ? E_SUCCESS : E_GRAPH_EXEC_UPDATE_FAILURE;
}
