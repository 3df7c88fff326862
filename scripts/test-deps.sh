#!/usr/bin/env bash
# What the tests need beyond Rust, installed when this runs as root with apt (a fresh Debian 12
# CI machine, as .ci/run does), else named with the command that installs it:
#   - a C compiler (the fake drivers and the C test programs), timeout;
#   - hipcc, libamdhip64 (Debian's ROCm 5.2, about 350 MiB): the HIP round trips build real
#     programs with hipcc (crates/hrr-playback/tests/hip_roundtrip.rs);
#   - docker-registry, htpasswd (apache2-utils), openssl: the push/pull tests start a registry on
#     127.0.0.1 (crates/hrr-pack/tests/registry.rs).
# Tests whose tool is still missing print `SKIPPED: <why>` and pass; scripts/test.sh counts them.
# HRR_TEST_NO_INSTALL=1 only reports. Sourced or run; never fails because a package could not
# be installed (the tests say what they skip).
set -uo pipefail

pkgs=()
command -v cc >/dev/null || pkgs+=(gcc libc6-dev)
command -v timeout >/dev/null || pkgs+=(coreutils)
command -v hipcc >/dev/null || pkgs+=(hipcc libamdhip64-5 libamdhip64-dev rocminfo)
{ command -v docker-registry >/dev/null || command -v registry >/dev/null; } || pkgs+=(docker-registry)
command -v htpasswd >/dev/null || pkgs+=(apache2-utils)
command -v openssl >/dev/null || pkgs+=(openssl)

if [ ${#pkgs[@]} -eq 0 ]; then
    exit 0
fi
if [ "${HRR_TEST_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test-deps: installing ${pkgs[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    if apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; then
        exit 0
    fi
    # One package that cannot be had must not keep the others out.
    for p in "${pkgs[@]}"; do
        apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
            echo "test-deps: $p could not be installed; the tests that need it will say SKIPPED" >&2
    done
else
    why="not root with apt"
    [ "${HRR_TEST_NO_INSTALL:-0}" = 1 ] && why="HRR_TEST_NO_INSTALL=1"
    echo "test-deps: missing ${pkgs[*]} ($why); the tests that need them will say SKIPPED." >&2
    echo "test-deps: to run them: sudo apt-get install --no-install-recommends ${pkgs[*]}" >&2
fi
exit 0
