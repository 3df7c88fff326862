# Shared by the GPU scripts (gpu-bench.sh, gpu-e2e.sh); sourced, not run.

# skip_without_gpu NAME FILE: without a working NVIDIA GPU (nvidia-smi missing or failing), say
# so on stdout and in FILE, and exit 0: nothing was run.
skip_without_gpu() {
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! timeout 60 nvidia-smi -L >/dev/null 2>&1; then
        echo "[$1] SKIP: no NVIDIA GPU here (nvidia-smi missing or failing); nothing was run"
        echo "SKIP: no NVIDIA GPU (nvidia-smi missing or failing)" >"$2"
        exit 0
    fi
}
