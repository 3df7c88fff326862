/*
 * fake_cuda_streams.c - streams and events: the asynchronous mode (FAKE_CUDA_ASYNC_GBPS)
 * with its host-function worker, waits and queries, the work in flight per stream, stream
 * creation, synchronisation and capture (begin/end, capture info), events.
 */
#include "fake_cuda_internal.h"

/* Kernels run when launched, but like a GPU's, their failures show at the next wait: after
   `spin` (a kernel that never finishes) every wait blocks forever; after `fault` every wait
   returns CUDA_ERROR_ILLEGAL_ADDRESS (sticky, as on a GPU). */
int g_hung;
unsigned long g_launches_since_sync;
CUresult g_sticky;

/* Asynchronous mode (FAKE_CUDA_ASYNC_GBPS=G, for benchmarks and ordering tests): a copy on a
   stream still moves its bytes at once, but keeps the "GPU" busy for n/G ns more (one timeline
   for every stream). Waits sleep until it is idle, queries answer CUDA_ERROR_NOT_READY until
   then, and host functions (cuLaunchHostFunc) run on a worker thread, in order, once the work
   enqueued before them is done; a wait or query is done only when they have returned. (Later
   work on the stream does not wait for a host function here: a simplification.) Unset or 0:
   everything completes at the call, as before. */
static double g_async_gbps = -1; /* < 0: not read yet */
static uint64_t g_busy_until;    /* CLOCK_MONOTONIC ns */
struct fc_hostfn {
  CUhostFn fn;
  void *ud;
  uint64_t due;
  struct fc_hostfn *next;
};
static pthread_mutex_t g_hf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hf_cv = PTHREAD_COND_INITIALIZER;
static struct fc_hostfn *g_hf_head, *g_hf_tail;
static int g_hf_running, g_hf_started;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void sleep_until(uint64_t t) {
  for (uint64_t n = now_ns(); n < t; n = now_ns()) {
    struct timespec d = {(time_t)((t - n) / 1000000000ull), (long)((t - n) % 1000000000ull)};
    nanosleep(&d, NULL);
  }
}
static int async_on(void) {
  if (g_async_gbps < 0) {
    const char *v = getenv("FAKE_CUDA_ASYNC_GBPS");
    g_async_gbps = v && *v ? strtod(v, NULL) : 0;
    if (!(g_async_gbps > 0)) g_async_gbps = 0;
  }
  return g_async_gbps > 0;
}
/* A copy of n bytes on a stream was issued: the GPU is busy that much longer. */
void async_copy(size_t n) {
  if (!async_on()) return;
  uint64_t now = now_ns();
  if (g_busy_until < now) g_busy_until = now;
  g_busy_until += (uint64_t)((double)n / g_async_gbps);
}
static int async_busy(void) {
  if (!async_on()) return 0;
  pthread_mutex_lock(&g_hf_mu);
  int busy = g_hf_head || g_hf_running;
  pthread_mutex_unlock(&g_hf_mu);
  return busy || now_ns() < g_busy_until;
}
static void async_wait(void) {
  if (!async_on()) return;
  /* other threads' calls go on meanwhile, as with the real driver (the export lock, held once
     by the export that waits, is let go while it sleeps) */
  uint64_t until = g_busy_until;
  fc_unlock();
  sleep_until(until);
  fc_lock();
  pthread_mutex_lock(&g_hf_mu);
  while (g_hf_head || g_hf_running) pthread_cond_wait(&g_hf_cv, &g_hf_mu);
  pthread_mutex_unlock(&g_hf_mu);
}
static void *hostfn_worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_hf_mu);
    while (!g_hf_head) pthread_cond_wait(&g_hf_cv, &g_hf_mu);
    struct fc_hostfn *h = g_hf_head;
    g_hf_head = h->next;
    if (!g_hf_head) g_hf_tail = NULL;
    g_hf_running = 1;
    pthread_mutex_unlock(&g_hf_mu);
    sleep_until(h->due);
    h->fn(h->ud);
    free(h);
    pthread_mutex_lock(&g_hf_mu);
    g_hf_running = 0;
    pthread_cond_broadcast(&g_hf_cv);
    pthread_mutex_unlock(&g_hf_mu);
  }
  return NULL;
}
/* Queue a host function behind the work enqueued so far; 0 when not in asynchronous mode. */
int async_hostfn(CUhostFn fn, void *ud) {
  if (!async_on()) return 0;
  struct fc_hostfn *h = calloc(1, sizeof *h);
  if (!h) return 0;
  h->fn = fn;
  h->ud = ud;
  h->due = g_busy_until;
  pthread_mutex_lock(&g_hf_mu);
  if (!g_hf_started) {
    pthread_t t;
    if (pthread_create(&t, NULL, hostfn_worker, NULL) != 0) {
      pthread_mutex_unlock(&g_hf_mu);
      free(h);
      return 0;
    }
    pthread_detach(t);
    g_hf_started = 1;
  }
  if (g_hf_tail) g_hf_tail->next = h;
  else g_hf_head = h;
  g_hf_tail = h;
  pthread_cond_broadcast(&g_hf_cv);
  pthread_mutex_unlock(&g_hf_mu);
  return 1;
}

CUresult gpu_wait(void) {
  while (g_hung) pause();
  async_wait();
  return g_sticky;
}
/* What a query (cuStreamQuery, cuEventQuery) sees: never done after `spin`. */
CUresult gpu_query(void) { return g_hung || async_busy() ? E_NOT_READY : g_sticky; }
/* ---- work in flight ----
 * Kernels run at launch, but like the real driver's they count as in flight on their stream
 * until a synchronisation, a query of the stream answering done, or a completed event recorded
 * after them, says they are done.
 * Unmapping memory a kernel in flight uses (cuMemUnmap does not wait) faults that kernel: every
 * later wait returns CUDA_ERROR_ILLEGAL_ADDRESS.  NULL and CU_STREAM_LEGACY stand for all. */
struct busy { uintptr_t base; size_t size; const void *s; unsigned long long seq; };
static struct busy *g_busy;
static size_t g_nbusy, g_capbusy;
static unsigned long long g_busy_seq;
void busy_add(uintptr_t base, size_t size, const void *s) {
  GROW(g_busy, g_nbusy, g_capbusy);
  g_busy[g_nbusy++] = (struct busy){base, size, s, ++g_busy_seq};
}
/* Work on s (all streams for NULL/legacy) queued before `before` is done. */
void busy_done(const void *s, unsigned long long before) {
  for (size_t i = g_nbusy; i-- > 0;)
    if (((uintptr_t)s <= 1 || g_busy[i].s == s) && g_busy[i].seq < before) g_busy[i] = g_busy[--g_nbusy];
}
void busy_unmapped(uintptr_t base, size_t size) {
  for (size_t i = 0; i < g_nbusy; i++)
    if (overlaps(base, size, g_busy[i].base, g_busy[i].size)) {
      g_sticky = E_ILLEGAL_ADDRESS;
      return;
    }
}

/* ------------------------------------------------------------------------ */
/* Streams and events (everything runs synchronously)                       */
/* ------------------------------------------------------------------------ */


/* Captures in GLOBAL or THREAD_LOCAL mode now running (both treated as GLOBAL):
 * while any runs, "potentially unsafe" calls (cuMemAlloc, VMM mapping, copies
 * and memsets on the legacy stream) fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
 * as with the real driver.  RELAXED captures forbid nothing. */
int g_strict_captures;

struct fc_graph *stream_graph(CUstream s) {
  return ((uintptr_t)s > 2 && obj_is(s, T_STREAM)) ? s->cap : NULL;
}

/* NULL, CU_STREAM_LEGACY (0x1) and CU_STREAM_PER_THREAD (0x2) are always valid. */
CUresult chk_stream(CUstream s) {
  if ((uintptr_t)s <= 2) return E_SUCCESS;
  return obj_is(s, T_STREAM) ? E_SUCCESS : E_INVALID_HANDLE;
}

CUresult i_stream_create(CUstream *ps, unsigned flags, int prio) {
  struct fc_ctx *c;
  if (!ps || flags > 1) return E_INVALID_VALUE;
  NEED_CTX(c);
  struct fc_stream *s = calloc(1, sizeof *s);
  if (!s) return E_OUT_OF_MEMORY;
  s->ctx = c;
  s->flags = flags;
  s->prio = prio > 0 ? 0 : (prio < -5 ? -5 : prio);
  obj_add(s, T_STREAM);
  *ps = s;
  return E_SUCCESS;
}
CUresult i_stream_destroy(CUstream s) {
  if (!obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (s->cap) {
    if (s->cap_mode != 2) g_strict_captures--;
    if (!s->cap_into) {
      nodes_free(s->cap->nodes, s->cap->n);
      obj_del(s->cap);
      free(s->cap);
    }
  }
  obj_del(s);
  free(s);
  return E_SUCCESS;
}
CUresult i_stream_sync(CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (stream_graph(s)) return E_STREAM_CAPTURE_UNSUPPORTED;
  busy_done(s, ~0ull);
  g_launches_since_sync = 0;
  return gpu_wait();
}
CUresult i_stream_query(CUstream s) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (!e) e = gpu_query();
  if (!e) busy_done(s, ~0ull); /* done: its work is no longer in flight (as cuEventQuery) */
  return e;
}
CUresult i_stream_wait_event(CUstream s, CUevent ev, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  if (flags > 1) return E_INVALID_VALUE;
  return E_SUCCESS;
}
CUresult i_stream_is_capturing(CUstream s, int *status) {
  struct fc_ctx *c;
  if (!status) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  *status = stream_graph(s) ? 1 : 0; /* CU_STREAM_CAPTURE_STATUS_ACTIVE / _NONE */
  return E_SUCCESS;
}
/* cuStreamGetCaptureInfo (every version: the optional outputs after the id are answered
 * empty): the capture id is the address of the graph being captured into. */
CUresult i_capture_info(CUstream s, int *status, unsigned long long *id, CUgraph *g, const void **deps,
                               size_t *ndeps) {
  struct fc_ctx *c;
  if (!status) return E_INVALID_VALUE;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  struct fc_graph *gr = stream_graph(s);
  *status = gr ? 1 : 0;
  if (id) *id = gr ? (uintptr_t)gr : 0;
  if (g) *g = gr;
  if (gr && gr->n > s->cap_mark) { /* work was captured since the set was last given */
    s->cap_deps[0] = node_handle(gr, gr->n - 1);
    s->ncap_deps = 1;
    s->cap_mark = gr->n;
  }
  if (deps) *deps = gr && s->ncap_deps ? (const void *)s->cap_deps : NULL;
  if (ndeps) *ndeps = gr ? s->ncap_deps : 0;
  return E_SUCCESS;
}
/* Sets (flags 1) or extends (0) the nodes a capture's next work follows: nodes of its graph. */
static CUresult capture_deps(CUstream s, const CUgraphNode *deps, size_t n, unsigned flags) {
  struct fc_graph *gr = stream_graph(s);
  if (flags > 1 || (n && !deps)) return E_INVALID_VALUE;
  if (!flags && s->ncap_deps + n > 8) return E_INVALID_VALUE;
  if (flags) s->ncap_deps = 0;
  if (n > 8) return E_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    if (!obj_is(deps[i], T_GNODE) || deps[i]->g != gr) return E_INVALID_VALUE;
    s->cap_deps[s->ncap_deps++] = deps[i];
  }
  s->cap_mark = gr->n;
  return E_SUCCESS;
}
CUresult i_update_capture_deps(CUstream s, const CUgraphNode *deps, size_t n, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  if (!stream_graph(s)) return E_ILLEGAL_STATE;
  return capture_deps(s, deps, n, flags);
}
CUresult i_begin_capture(CUstream s, int mode) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (mode < 0 || mode > 2) return E_INVALID_VALUE;
  if ((uintptr_t)s <= 2) return E_STREAM_CAPTURE_UNSUPPORTED; /* the NULL/legacy stream cannot capture */
  if (!obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (s->cap) return E_ILLEGAL_STATE;
  s->cap = calloc(1, sizeof *s->cap);
  if (!s->cap) return E_OUT_OF_MEMORY;
  obj_add(s->cap, T_GRAPH); /* a graph already: nodes may be added to it by hand */
  s->cap_into = 0;
  s->ncap_deps = s->cap_mark = 0;
  s->cap_mode = mode;
  if (mode != 2) g_strict_captures++;
  return E_SUCCESS;
}
/* A capture into graph g of the program's, after its nodes deps. */
CUresult i_begin_capture_to_graph(CUstream s, CUgraph g, const CUgraphNode *deps, size_t n, int mode) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (mode < 0 || mode > 2) return E_INVALID_VALUE;
  if ((uintptr_t)s <= 2) return E_STREAM_CAPTURE_UNSUPPORTED;
  if (!obj_is(s, T_STREAM) || !obj_is(g, T_GRAPH)) return E_INVALID_HANDLE;
  if (s->cap) return E_ILLEGAL_STATE;
  s->cap = g;
  s->cap_into = 1;
  s->ncap_deps = 0;
  CUresult e = capture_deps(s, deps, n, 1);
  if (e) {
    s->cap = NULL;
    return e;
  }
  s->cap_mode = mode;
  if (mode != 2) g_strict_captures++;
  return E_SUCCESS;
}
CUresult i_end_capture(CUstream s, CUgraph *pg) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!pg) return E_INVALID_VALUE;
  if ((uintptr_t)s <= 2 || !obj_is(s, T_STREAM)) return E_INVALID_HANDLE;
  if (!s->cap) return E_ILLEGAL_STATE;
  if (s->cap_mode != 2) g_strict_captures--;
  *pg = s->cap;
  s->cap = NULL;
  s->cap_into = 0;
  return E_SUCCESS;
}

CUresult i_event_create(CUevent *pe, unsigned flags) {
  struct fc_ctx *c;
  if (!pe || flags > 7) return E_INVALID_VALUE;
  if ((flags & 4) && !(flags & 2)) return E_INVALID_VALUE; /* INTERPROCESS needs DISABLE_TIMING */
  NEED_CTX(c);
  struct fc_event *ev = calloc(1, sizeof *ev);
  if (!ev) return E_OUT_OF_MEMORY;
  ev->flags = flags;
  obj_add(ev, T_EVENT);
  *pe = ev;
  return E_SUCCESS;
}
CUresult i_event_record(CUevent ev, CUstream s, unsigned flags) {
  struct fc_ctx *c;
  NEED_CTX(c);
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  CUresult e = chk_stream(s);
  if (e) return e;
  if (flags > 1) return E_INVALID_VALUE;
  ev->recorded = 1;
  ev->stream = s;
  ev->seq = g_busy_seq + 1;
  return E_SUCCESS;
}
static void event_done(CUevent ev) {
  if (ev->recorded) busy_done(ev->stream, ev->seq);
}
CUresult i_event_query(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  if (g_hung || async_busy()) return E_NOT_READY;
  event_done(ev);
  return E_SUCCESS;
}
CUresult i_event_sync(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  CUresult e = gpu_wait();
  if (!e) event_done(ev);
  return e;
}
CUresult i_event_elapsed(float *ms, CUevent a, CUevent b) {
  if (!ms) return E_INVALID_VALUE;
  if (!obj_is(a, T_EVENT) || !obj_is(b, T_EVENT)) return E_INVALID_HANDLE;
  if (!a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2)) return E_INVALID_HANDLE;
  *ms = 0.0f;
  return E_SUCCESS;
}
CUresult i_event_destroy(CUevent ev) {
  if (!obj_is(ev, T_EVENT)) return E_INVALID_HANDLE;
  obj_del(ev);
  free(ev);
  return E_SUCCESS;
}

CUresult hostfn_check(CUstream s, CUhostFn fn) {
  struct fc_ctx *c;
  NEED_CTX(c);
  CUresult e = chk_stream(s);
  if (e) return e;
  return fn ? E_SUCCESS : E_INVALID_VALUE;
}
