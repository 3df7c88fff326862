#!/usr/bin/env bash
# Container test (CI, CPU only, root): the user guide's `docker run` line, word for word, against
# an image built by `hrr-pack image` on an offline Debian 12 + ROCm 5.2 base.
#
#   bash tests/containers/run.sh [BIN_DIR]      (default target/debug; run `cargo build` first)
#
# Starts a private dockerd (its own data/exec roots and socket, no iptables, no bridge; every run
# uses --network=none), builds the base once (containers/debian-rocm5/build.sh; or reuses the
# `docker save` tar named by HRR_TEST_BASE), builds the image twice (identical bytes required),
# loads it, and checks: building on the image itself replaces its layer (same bytes), an existing
# output is refused, the creation time docker shows is the build's; --info on examples/demo.hrr
# mounted read-only equals the host's; the same on a packed archive run as another user (no
# chmod); replay without a GPU names the missing device nodes; --events equals the host's; --repair on the read-only mount fails clearly;
# --version names the HIP runtime found in the image; no /capture, /bin still a link, Cmd is the
# help. /dev/null stands in for /dev/kfd and /dev/dri/*. Skipped, saying so, only when the
# daemon cannot start.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
bin=$(cd "${1:-target/debug}" && pwd)
T0=$SECONDS
# The Dockerfiles (not built here: no registry) keep the rules the image built below is checked for.
for f in Dockerfile containers/*/Dockerfile; do
    if grep -q -i -E '^(ENTRYPOINT|.*mkdir.*/capture|VOLUME)' "$f"; then
        echo "$f: sets ENTRYPOINT/VOLUME or creates /capture" >&2; exit 1
    fi
done
step() { echo "[containers +$((SECONDS - T0))s] $*"; }
fail() { echo "tests/containers: FAIL: $*" >&2; exit 1; }

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || [ -n "${HRR_TEST_BASE:-}" ] || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    step "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/hrr-containers.XXXXXX")
cleanup() {
    if [ -s "$W/d.pid" ]; then
        kill "$(cat "$W/d.pid")" 2>/dev/null || true
        for _ in $(seq 50); do [ -e "$W/d.pid" ] || break; sleep 0.2; done
    fi
    rm -rf "$W" 2>/dev/null || true
}
trap cleanup EXIT
dockerd --data-root="$W/data" --exec-root="$W/exec" --pidfile="$W/d.pid" \
    -H "unix://$W/docker.sock" --iptables=false --ip6tables=false --bridge=none \
    >"$W/dockerd.log" 2>&1 &
export DOCKER_HOST="unix://$W/docker.sock"
for _ in $(seq 100); do docker info >/dev/null 2>&1 && break; sleep 0.2; done
if ! docker info >/dev/null 2>&1; then
    echo "tests/containers: SKIPPED: the docker daemon cannot start here:" >&2
    tail -5 "$W/dockerd.log" >&2
    # Counted by scripts/skip-summary.sh (.ci/run's last line).
    [ -z "${HRR_TEST_SKIP_LOG:-}" ] ||
        printf 'tests/containers/run.sh\tthe docker daemon cannot start here\n' >>"$HRR_TEST_SKIP_LOG"
    exit 0
fi
step "dockerd $(docker version --format '{{.Server.Version}}') up"

# A snapshot of the binaries: a concurrent cargo build must not change them between builds.
mkdir "$W/bin" && cp "$bin/hrr-playback" "$bin/hrr-pack" "$W/bin/" && bin=$W/bin

base=${HRR_TEST_BASE:-}
if [ -z "$base" ]; then
    base="$W/debian-rocm5.tar"
    bash containers/debian-rocm5/build.sh "$base" hrr-test/debian-rocm5:base
fi
step "base ready: $base"

img=hrr-test/playback:ci
"$bin/hrr-pack" image --base "$base" --playback "$bin/hrr-playback" -o "$W/image1.tar" \
    --tag "$img" --json >"$W/image1.json"
"$bin/hrr-pack" image --base "$base" --playback "$bin/hrr-playback" -o "$W/image2.tar" \
    --tag "$img" --json >"$W/image2.json"
cmp "$W/image1.tar" "$W/image2.tar" || fail "two builds of the image differ"
# Built on its own output, the image replaces its hrr-playback layer: the same bytes again.
"$bin/hrr-pack" image --base "$W/image1.tar" --playback "$bin/hrr-playback" -o "$W/image3.tar" \
    --tag "$img" >/dev/null 2>&1 || fail "building on the image itself"
cmp "$W/image1.tar" "$W/image3.tar" || fail "an image built on the image stacked a second layer"
# An existing output is refused without --force.
if "$bin/hrr-pack" image --base "$base" --playback "$bin/hrr-playback" -o "$W/image1.tar" \
    >/dev/null 2>&1; then fail "image -o EXISTING overwrote it"; fi
cmp <(grep -o 'sha256:[0-9a-f]*' "$W/image1.json") <(grep -o 'sha256:[0-9a-f]*' "$W/image2.json") ||
    fail "two builds report different digests"
digest() { sed -n "s/.*\"$1\": *\"\\(sha256:[0-9a-f]*\\)\".*/\\1/p" "$W/image1.json"; }
step "image built twice, identical: manifest $(digest manifest_digest), config $(digest config_digest), tar sha256:$(sha256sum "$W/image1.tar" | cut -c1-64)"

docker load -i "$W/image1.tar" >"$W/load.log" || { cat "$W/load.log" >&2; fail "docker load"; }
loaded_id=$(docker image inspect --format '{{.Id}}' "$img")
[ "$loaded_id" = "$(digest config_digest)" ] || fail "docker loaded $loaded_id, expected $(digest config_digest)"
step "docker load: $img = $loaded_id"
created=$(sed -n 's/.*"created": *"\([^"]*\)".*/\1/p' "$W/image1.json")
[ "$(docker image inspect --format '{{.Created}}' "$img" | cut -c1-19)" = "${created%Z}" ] ||
    fail "docker says the image was created $(docker image inspect --format '{{.Created}}' "$img"), the build said $created"
step "created $created (from the newest input or SOURCE_DATE_EPOCH, not a fixed date)"

# The user's command, word for word, with /dev/null standing in for the GPU device nodes.
cp -r examples/demo.hrr "$W/my_capture.hrr"
chmod -R a+rX "$W/my_capture.hrr"
devices=(--device=/dev/null:/dev/kfd --device=/dev/null:/dev/dri/card0
    --device=/dev/null:/dev/dri/renderD128)
user_run() { # user_run SOURCE ARGS...: docker run ... -v SOURCE:/capture:ro IMAGE ARGS
    local src=$1
    shift
    docker run --rm --network=none "${devices[@]}" -v "$src:/capture:ro" "$img" "$@"
}
host() { "$bin/hrr-playback" "$@"; }

set +e
host "$W/my_capture.hrr" --info >"$W/host-info.txt" 2>&1; host_rc=$?
(cd "$W" && user_run "$PWD/my_capture.hrr" hrr-playback /capture --info) >"$W/ctr-info.txt" 2>&1
ctr_rc=$?
set -e
sed -i "s#$W/my_capture.hrr#/capture#g" "$W/host-info.txt"
diff -u "$W/host-info.txt" "$W/ctr-info.txt" || fail "--info in the container differs from the host's"
[ "$host_rc" = "$ctr_rc" ] || fail "--info exit status: host $host_rc, container $ctr_rc"
grep -q "HRR Archive Root: /capture" "$W/ctr-info.txt" || fail "no archive root in --info"
step "--info on the read-only mount equals the host's (exit $ctr_rc, $(wc -l <"$W/ctr-info.txt") lines)"

host "$W/my_capture.hrr/pid-1180" --events >"$W/host-events.txt"
user_run "$W/my_capture.hrr" hrr-playback /capture/pid-1180 --events >"$W/ctr-events.txt"
sed -i "s#$W/my_capture.hrr#/capture#g" "$W/host-events.txt"
diff -u "$W/host-events.txt" "$W/ctr-events.txt" || fail "--events differ"
step "--events equals the host's ($(wc -l <"$W/ctr-events.txt") lines)"

# A pack is created readable by others (0644 less the umask): a container running as another
# user reads it mounted, with no chmod.
(umask 022 && "$bin/hrr-pack" pack --force "$W/my_capture.hrr" -o "$W/my_capture.hrr.tar.zst" >/dev/null)
set +e
host "$W/my_capture.hrr.tar.zst" --info >"$W/host-pinfo.txt" 2>&1; host_rc=$?
docker run --rm --network=none --user 4242:4242 -v "$W/my_capture.hrr.tar.zst:/capture:ro" \
    "$img" hrr-playback /capture --info >"$W/ctr-pinfo.txt" 2>&1
ctr_rc=$?
set -e
diff -u "$W/host-pinfo.txt" "$W/ctr-pinfo.txt" || fail "--info on the pack differs from the host's"
[ "$host_rc" = "$ctr_rc" ] || fail "pack --info exit status: host $host_rc, container $ctr_rc"
grep -q "HRR Archive Root: my_capture.hrr" "$W/ctr-pinfo.txt" || fail "pack --info: no root"
step "--info on a packed archive mounted read-only, run as another user (--user 4242), equals the host's"

# Replay without the GPU: the hint names what the container lacks and how to pass it.
set +e
docker run --rm --network=none -v "$W/my_capture.hrr:/capture:ro" "$img" \
    hrr-playback /capture/pid-1180 >"$W/nogpu.txt" 2>&1; rc=$?
set -e
[ "$rc" = 1 ] || { cat "$W/nogpu.txt" >&2; fail "replay without a GPU exited $rc"; }
grep -q "hint: --info, --events and --list need no GPU; replay needs one; this container has no /dev/nvidiactl or /dev/nvidia0: run it with --gpus all" "$W/nogpu.txt" ||
    { cat "$W/nogpu.txt" >&2; fail "replay without a GPU: no hint naming the device nodes"; }
step "replay without a GPU says what is missing: $(grep '^hint' "$W/nogpu.txt")"

set +e
user_run "$W/my_capture.hrr" hrr-playback /capture --repair >"$W/repair.txt" 2>&1; rc=$?
set -e
[ "$rc" = 1 ] || { cat "$W/repair.txt" >&2; fail "--repair on a read-only mount exited $rc"; }
grep -q "cannot repair /capture: it is on a read-only file system" "$W/repair.txt" ||
    { cat "$W/repair.txt" >&2; fail "--repair on a read-only mount: unclear error"; }
cmp -s <(cd examples/demo.hrr && find . -type f -exec sha256sum {} + | sort) \
    <(cd "$W/my_capture.hrr" && find . -type f -exec sha256sum {} + | sort) ||
    fail "the archive changed"
step "--repair on the read-only mount fails clearly: $(cat "$W/repair.txt")"

user_run "$W/my_capture.hrr" hrr-playback --version >"$W/version.txt"
grep -q "^HIP runtime: /.*libamdhip64\.so" "$W/version.txt" ||
    { cat "$W/version.txt" >&2; fail "--version names no HIP runtime"; }
step "--version: $(grep '^HIP runtime' "$W/version.txt")"

docker run --rm --network=none "$img" >"$W/cmd.txt" 2>&1 || fail "the default command fails"
grep -q "Usage: hrr-playback" "$W/cmd.txt" || fail "the default command is not the help"
docker run --rm --network=none "$img" sh -c \
    'test -L /bin && test -L /lib && test ! -e /capture && command -v hrr-playback' \
    >"$W/layout.txt" || fail "image layout: /bin or /lib not links, /capture exists, or not on PATH"
step "Cmd is the help, /bin and /lib are still links, no /capture, hrr-playback at $(cat "$W/layout.txt")"
if command -v podman >/dev/null; then
    podman --storage-driver vfs load -i "$W/image1.tar" >/dev/null || fail "podman load"
    step "podman load accepts the image"
fi
echo "tests/containers: PASS in $((SECONDS - T0)) s"
