#!/usr/bin/env bash
# Offline Debian 12 + ROCm 5.2 base image, built with no registry: debootstrap (minbase) with
# Debian's libamdhip64-5 (the HIP runtime of ROCm 5.2.3 and what it loads), trimmed, imported
# with `docker import`, written as a `docker save` tar — a base for `hrr-pack image --base`.
#
#   bash containers/debian-rocm5/build.sh OUT.tar [TAG]     (root; needs debootstrap and a
#                                                           running docker daemon: DOCKER_HOST)
# Mirror: $DEBIAN_MIRROR, else the first deb.debian.org-style URI in apt's sources.
set -euo pipefail
out=${1:?usage: build.sh OUT.tar [TAG]}
tag=${2:-hrr-test/debian-rocm5:base}
mirror=${DEBIAN_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
    /etc/apt/sources.list.d/*.list 2>/dev/null | grep -E '^(URIs:|deb )' |
    grep -o -E 'https?://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ' || true)}
mirror=${mirror:-http://deb.debian.org/debian}
work=$(mktemp -d "${TMPDIR:-/tmp}/hrr-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
# minbase + the HIP runtime; debootstrap resolves its dependencies.
debootstrap --variant=minbase --include=libamdhip64-5 bookworm "$work/rootfs" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
# Trim what a replay image never needs (keeps the test fast); /capture is never created.
rm -rf "$work"/rootfs/var/cache/apt/* "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/usr/share/doc/* "$work"/rootfs/usr/share/man/* \
    "$work"/rootfs/usr/share/locale/* "$work"/rootfs/var/log/* "$work"/rootfs/dev/*
tar --numeric-owner --sort=name --mtime=@1153704088 -C "$work/rootfs" -cf - . |
    docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'CMD ["/bin/bash"]' - "$tag" >/dev/null
docker save -o "$out" "$tag"
echo "$out: $tag ($(du -h "$out" | cut -f1))"
