# Shared set-up of the CPU benchmarks against the fake driver (bench-capture-cpu.sh,
# bench-replay-cpu.sh); sourced, not run. After `fake_bench_setup NAME FILE...`: $bin (the build
# measured, BIN or target/release, holding every FILE), $work (a temporary folder removed on
# exit) with the fake driver and its apps in $work/fake, and LD_LIBRARY_PATH pointing there.
# fake_bench_args "$@": rounds ($1, default 20000), reps ($2, default 5) and base ($BASELINE).
fake_bench_args() {
    rounds=${1:-20000}
    reps=${2:-5}
    base=${BASELINE:-}
}

fake_bench_setup() {
    local name=$1 f
    shift
    bin=${BIN:-target/release}
    for f in "$@"; do
        [ -e "$bin/$f" ] || {
            echo "$name: build first: cargo build --release --workspace ($bin/$f is missing)" >&2
            exit 1
        }
    done
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    sh tests/fake-cuda/build.sh "$work/fake"
    export LD_LIBRARY_PATH=$work/fake
}
