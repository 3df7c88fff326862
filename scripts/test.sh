#!/usr/bin/env bash
# The test command: builds the workspace (the round-trip tests run the built hrr-capture,
# libhrr_capture.so and hrr-playback against the fake driver in tests/fake-cuda), then runs every
# test, then clippy.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --locked
cargo test --workspace --locked
cargo clippy --workspace --all-targets --locked -- -D warnings
