#!/usr/bin/env bash
# The test command: installs what the tests need when it can (scripts/test-deps.sh: root + apt),
# builds the workspace (the round-trip tests run the built hrr-capture, libhrr_capture.so and
# hrr-playback against the fake driver in tests/fake-cuda), runs every test, then clippy, and
# ends with `N tests skipped (why)`: every test that cannot run here (no hipcc, no
# docker-registry, ...) prints `SKIPPED: why` and records itself in $HRR_TEST_SKIP_LOG, so the
# count is real and a partial run is visible. The line is printed even when a step fails.
# HRR_TEST_NO_INSTALL=1: install nothing, only say what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-deps.sh

own_log=
if [ -z "${HRR_TEST_SKIP_LOG:-}" ]; then
    own_log=$(mktemp "${TMPDIR:-/tmp}/hrr-test-skips.XXXXXX")
    export HRR_TEST_SKIP_LOG=$own_log
fi
summary() {
    local rc=$?
    if [ $rc -ne 0 ]; then
        echo "scripts/test.sh: FAILED (exit $rc); the count below covers only the tests that ran" >&2
    fi
    bash scripts/skip-summary.sh "$HRR_TEST_SKIP_LOG"
    [ -z "$own_log" ] || rm -f "$own_log"
    exit $rc
}
trap summary EXIT

cargo build --workspace --locked
cargo test --workspace --locked
bash scripts/test-cuda-samples.sh target/debug
cargo clippy --workspace --all-targets --locked -- -D warnings
