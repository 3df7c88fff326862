# Shared by the GPU scripts (gpu-bench.sh, gpu-e2e.sh, samples-bench.sh, gpu-capture-diag.sh);
# sourced, not run.

# skip_without_gpu NAME FILE: without a working NVIDIA GPU (nvidia-smi missing or failing), say
# so on stdout and in FILE, and exit 0: nothing was run.
skip_without_gpu() {
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! timeout 60 nvidia-smi -L >/dev/null 2>&1; then
        echo "[$1] SKIP: no NVIDIA GPU here (nvidia-smi missing or failing); nothing was run"
        echo "SKIP: no NVIDIA GPU (nvidia-smi missing or failing)" >"$2"
        exit 0
    fi
}

# usage_unless ARGC WANT SCRIPT: unless ARGC is WANT, print SCRIPT's opening comment (its usage,
# up to its `set -` line) on stderr and exit 2.
usage_unless() {
    if [ "$1" -ne "$2" ]; then
        sed -n '2,/^set -/p' "$3" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
        exit 2
    fi
}

# samples_args SCRIPT ARGS...: the arguments of a script run as `SCRIPT SAMPLES BIN_DIR OUT_DIR`
# (samples-bench.sh, gpu-capture-diag.sh): its usage and exit 2 unless there are three; else
# SAMPLES, BIN and OUT set to their absolute paths (OUT created), exit 2 if one cannot be.
samples_args() {
    local script=$1
    shift
    usage_unless $# 3 "$script"
    SAMPLES=$(cd "$1" && pwd) || exit 2
    BIN=$(cd "$2" && pwd) || exit 2
    OUT=$(mkdir -p "$3" && cd "$3" && pwd) || exit 2
}
