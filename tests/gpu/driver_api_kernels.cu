// Device code for tests/gpu/driver_api.c. Built on its own into a cubin
// (`nvcc -cubin -arch=sm_90`) and into PTX (`nvcc -ptx -arch=sm_90`); the host
// program loads the image with cuModuleLoadData. extern "C" keeps the kernel
// names unmangled, so `hrr-playback --info` shows hrr_fill, hrr_saxpy, ...

// A list node. `next` is a raw device address that the host wrote into device
// memory with cuMemcpyHtoD, so a replay only reads the right data if every
// allocation sits at its recorded address again.
struct HrrNode {
    unsigned long long next;  // device address of the next node, 0 ends the list
    float value;
    int tag;
};

// out[i] = a small deterministic function of i and seed.
extern "C" __global__ void hrr_fill(float *out, int n, float seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int h = (unsigned int)i * 2654435761u ^ (unsigned int)(seed * 1000.0f);
        h ^= h >> 13;
        out[i] = (float)(h & 0xffffu) * (1.0f / 65536.0f) + seed;
    }
}

// y = a*x + y. The host launches this one through cuLaunchKernel's `extra`
// argument buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
extern "C" __global__ void hrr_saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Every thread walks the list from `head` and, at each node, also reads
// through a table of buffer addresses (again raw device addresses uploaded by
// the host). out[t] = weighted sum of what it saw.
extern "C" __global__ void hrr_chase(const HrrNode *head, const unsigned long long *table,
                                     int table_len, int buf_len, float *out, int nthreads) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    float acc = 0.0f;
    int step = 0;
    const HrrNode *node = head;
    while (node != 0 && step < 1024) {
        const float *buf = (const float *)table[(t + step) % table_len];
        acc += node->value * (float)(step + 1) + buf[(t * 7 + node->tag) % buf_len];
        node = (const HrrNode *)node->next;
        ++step;
    }
    out[t] = acc + (float)step;
}

// x[i] = x[i] * s + i. Used from the PTX module (JIT-compiled by the driver).
extern "C" __global__ void hrr_scale(float *x, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s + (float)i;
}
