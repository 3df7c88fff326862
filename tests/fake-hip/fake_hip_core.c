/*
 * fake_hip_core.c - the fake HIP runtime's state (the lock, the last error, tracing), error
 * names, init and versions, devices and their properties, streams, events and host functions.
 */
#include "fake_hip_internal.h"

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread hipError_t t_last;
static int g_trace;

void lock(void) { pthread_mutex_lock(&g_mu); }
void unlock(void) { pthread_mutex_unlock(&g_mu); }

hipError_t ret(const char *name, hipError_t r) {
  if (r != E_SUCCESS) t_last = r;
  if (g_trace) fprintf(stderr, "[fake-hip] %s -> %d\n", name, r);
  return r;
}

uintptr_t round_up(uintptr_t x, uintptr_t a) { return (x + a - 1) / a * a; }


__attribute__((constructor)) static void fh_init(void) {
  const char *t = getenv("FAKE_HIP_TRACE");
  g_trace = t && *t && *t != '0';
}

/* ------------------------------------------------------------------------ */
/* Errors, init, devices                                                    */
/* ------------------------------------------------------------------------ */

static const struct fake_error k_errors[] = {
  {13, "hipErrorInvalidSymbol", "invalid device symbol"},
  {52, "hipErrorMissingConfiguration", "__global__ function call is not configured"},
  {98, "hipErrorInvalidDeviceFunction", "invalid device function"},
  {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
  FAKE_SHARED_ERRORS(FAKE_HIP_ERROR_ROW)
};

static const struct fake_error *error_row(hipError_t e) {
  return fake_error_find(k_errors, sizeof k_errors / sizeof k_errors[0], e);
}
const char *hipGetErrorName(hipError_t e) { return error_row(e) ? error_row(e)->name : "hipErrorUnknown"; }
const char *hipGetErrorString(hipError_t e) { return error_row(e) ? error_row(e)->text : "unknown error"; }
hipError_t hipGetLastError(void) { hipError_t e = t_last; t_last = E_SUCCESS; return e; }
hipError_t hipPeekAtLastError(void) { return t_last; }

hipError_t hipInit(unsigned flags) { RET(flags ? E_INVALID_VALUE : E_SUCCESS); }
hipError_t hipDriverGetVersion(int *v) { if (!v) RET(E_INVALID_VALUE); *v = FH_VERSION; RET(E_SUCCESS); }
hipError_t hipRuntimeGetVersion(int *v) { if (!v) RET(E_INVALID_VALUE); *v = FH_VERSION; RET(E_SUCCESS); }
hipError_t hipGetDeviceCount(int *n) { if (!n) RET(E_INVALID_VALUE); *n = 1; RET(E_SUCCESS); }
hipError_t hipSetDevice(int d) { RET(d == 0 ? E_SUCCESS : E_INVALID_DEVICE); }
hipError_t hipGetDevice(int *d) { if (!d) RET(E_INVALID_VALUE); *d = 0; RET(E_SUCCESS); }
hipError_t hipDeviceGet(int *d, int ordinal) {
  if (!d) RET(E_INVALID_VALUE);
  if (ordinal != 0) RET(E_INVALID_DEVICE);
  *d = 0;
  RET(E_SUCCESS);
}
hipError_t hipDeviceGetName(char *name, int len, int d) {
  if (!name || len <= 0) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  snprintf(name, (size_t)len, "%s", "HRR Fake AMD GPU");
  RET(E_SUCCESS);
}
hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
  if (!bytes) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  *bytes = FH_TOTAL;
  RET(E_SUCCESS);
}
hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
  if (!v) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  switch (attr) {
  case 56: *v = 1024; break; /* hipDeviceAttributeMaxThreadsPerBlock (5.2 numbering) */
  case 87: *v = 64; break;   /* hipDeviceAttributeWarpSize */
  default: *v = 0;
  }
  RET(E_SUCCESS);
}
hipError_t hipGetDeviceProperties(void *prop, int d) {
  if (!prop) RET(E_INVALID_VALUE);
  if (d != 0) RET(E_INVALID_DEVICE);
  unsigned char *p = prop;
  memset(p, 0, PROP_BYTES);
  strcpy((char *)p + PROP_NAME, "HRR Fake AMD GPU");
  size_t total = FH_TOTAL;
  memcpy(p + PROP_TOTAL_MEM, &total, sizeof total);
  int major = 9, minor = 0, arch = 910;
  memcpy(p + PROP_MAJOR, &major, 4);
  memcpy(p + PROP_MINOR, &minor, 4);
  memcpy(p + PROP_GCN_ARCH, &arch, 4);
  strcpy((char *)p + PROP_GCN_ARCH_NAME, "gfx90a:sramecc+:xnack-");
  RET(E_SUCCESS);
}
hipError_t hipSetDeviceFlags(unsigned flags) { (void)flags; RET(E_SUCCESS); }
hipError_t hipDeviceSynchronize(void) { RET(E_SUCCESS); }
hipError_t hipDeviceReset(void) { RET(E_SUCCESS); }

/* ------------------------------------------------------------------------ */
/* Streams and events (everything runs synchronously)                       */
/* ------------------------------------------------------------------------ */

static void **g_obj;
static size_t g_nobj, g_capobj;
static unsigned long long g_clock;

void obj_add(void *p) { GROW(g_obj, g_nobj, g_capobj); g_obj[g_nobj++] = p; }
int obj_del(void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i] == p) { g_obj[i] = g_obj[--g_nobj]; return 1; }
  return 0;
}
int obj_known(const void *p) {
  for (size_t i = 0; i < g_nobj; i++)
    if (g_obj[i] == p) return 1;
  return 0;
}
/* The null stream and hipStreamPerThread (2) are always valid. */
int stream_ok(hipStream_t s) { return (uintptr_t)s <= 2 || obj_known(s); }

static hipError_t stream_new(hipStream_t *ps, unsigned flags, int prio) {
  if (!ps) return E_INVALID_VALUE;
  struct fh_stream *s = calloc(1, sizeof *s);
  s->flags = flags;
  s->priority = prio;
  lock(); obj_add(s); unlock();
  *ps = s;
  return E_SUCCESS;
}
hipError_t hipStreamCreate(hipStream_t *ps) { RET(stream_new(ps, 0, 0)); }
hipError_t hipStreamCreateWithFlags(hipStream_t *ps, unsigned f) { RET(stream_new(ps, f, 0)); }
hipError_t hipStreamCreateWithPriority(hipStream_t *ps, unsigned f, int p) { RET(stream_new(ps, f, p)); }
hipError_t hipStreamDestroy(hipStream_t s) {
  lock(); int ok = s && obj_del(s); unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  free(s);
  RET(E_SUCCESS);
}
hipError_t hipStreamSynchronize(hipStream_t s) {
  lock();
  hipError_t r = !stream_ok(s) ? E_INVALID_HANDLE : capturing(s) ? E_STREAM_CAPTURE_UNSUPPORTED : E_SUCCESS;
  unlock();
  RET(r);
}
hipError_t hipStreamQuery(hipStream_t s) { return hipStreamSynchronize(s); }
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags) {
  (void)flags;
  lock(); int ok = stream_ok(s) && obj_known(e); unlock();
  RET(ok ? E_SUCCESS : E_INVALID_HANDLE);
}
static hipError_t event_new(hipEvent_t *pe, unsigned flags) {
  if (!pe) return E_INVALID_VALUE;
  struct fh_event *e = calloc(1, sizeof *e);
  e->flags = flags;
  lock(); obj_add(e); unlock();
  *pe = e;
  return E_SUCCESS;
}
hipError_t hipEventCreate(hipEvent_t *pe) { RET(event_new(pe, 0)); }
hipError_t hipEventCreateWithFlags(hipEvent_t *pe, unsigned f) { RET(event_new(pe, f)); }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  lock();
  int ok = obj_known(e) && stream_ok(s);
  if (ok) { e->stamp = ++g_clock; e->recorded = 1; }
  unlock();
  RET(ok ? E_SUCCESS : E_INVALID_HANDLE);
}
hipError_t hipEventSynchronize(hipEvent_t e) { lock(); int ok = obj_known(e); unlock(); RET(ok ? E_SUCCESS : E_INVALID_HANDLE); }
hipError_t hipEventQuery(hipEvent_t e) { return hipEventSynchronize(e); }
hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) {
  lock(); int ok = ms && obj_known(a) && obj_known(b) && a->recorded && b->recorded; unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  *ms = (float)(b->stamp - a->stamp) * 0.25f;
  RET(E_SUCCESS);
}
hipError_t hipEventDestroy(hipEvent_t e) {
  lock(); int ok = e && obj_del(e); unlock();
  if (!ok) RET(E_INVALID_HANDLE);
  free(e);
  RET(E_SUCCESS);
}
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *data) {
  if (!fn) RET(E_INVALID_VALUE);
  if (!stream_ok(s)) RET(E_INVALID_HANDLE);
  fn(data);
  RET(E_SUCCESS);
}
