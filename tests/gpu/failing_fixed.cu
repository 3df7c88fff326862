// The fix of failing.cu's gather_bad, for `hrr-playback --replace-kernel` (scripts/gpu-e2e.sh):
// the same kernel (same name and parameters, so the same mangled name,
// _Z10gather_badPKfPKiPfi) with its index bounds-checked. Built as a cubin by build.sh
// (target `failing`): `hrr-playback fault.hrr --replace-kernel gather_bad=failing_fixed.cubin`
// then replays the faulting capture to PASS (the recorded fault no longer happens).
__global__ void gather_bad(const float *src, const int *idx, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = idx[i];
        out[i] = (j >= 0 && j < n) ? src[j] : 0.0f;
    }
}
