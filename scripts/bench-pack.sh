#!/usr/bin/env bash
# Benchmark of hrr-pack on a generated archive (default 2048 MiB of blobs: half random, the rest
# smooth fp32, sparse pages and text, a few planted secrets), in the same run as the baseline:
#   pack    hrr-pack pack DIR           vs  tar -c DIR | zstd -T0 -3
#   unpack  hrr-pack unpack FILE        vs  zstd -d | tar -x
#   scan    hrr-pack scan DIR           (MB/s)
#   verify  hrr-pack verify FILE        (MB/s)
# Each timed command runs ROUNDS times (default 3, warm page cache; baseline and hrr-pack
# alternate) and the fastest run counts. Reports wall time,
# throughput, the ratio of hrr-pack's throughput to the baseline's (goal >= 0.9) and peak RSS
# (goal for unpack: < 200 MiB).
#
#   scripts/bench-pack.sh [SIZE_MIB]     # BENCH_DIR=... to choose where the files go
set -euo pipefail

SIZE_MIB="${1:-2048}"
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null || { echo "installing $2 ..." >&2; (apt-get install -y "$2" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "$2" >/dev/null 2>&1; }) || true; }; }
need zstd zstd
[ -x /usr/bin/time ] || need /usr/bin/time time
command -v zstd >/dev/null || { echo "zstd (the command) is needed for the baseline" >&2; exit 1; }

cargo build --release -q -p hrr-pack --bin hrr-pack --example gen_archive
BIN="$PWD/target/release/hrr-pack"
GEN="$PWD/target/release/examples/gen_archive"

WORK="$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/hrr-bench-pack.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export HRR_FINGERPRINT_KEY_FILE="$WORK/fingerprint.key"
cd "$WORK"

echo "generating a ${SIZE_MIB} MiB archive in $WORK ..." >&2
"$GEN" run.hrr "$SIZE_MIB" --secrets >&2
BYTES=$(du -sb run.hrr | cut -f1)

# run NAME CMD...: runs CMD once (output discarded; exit 0 or 3 accepted) and keeps, per NAME,
# the fastest wall time (s) and its max RSS (KiB) in T_<NAME> and R_<NAME>.
run() {
    local name="$1"; shift
    sync
    set +e
    /usr/bin/time -f "%e %M" -o time.txt "$@" >out.txt 2>err.txt
    local rc=$?
    set -e
    if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then cat err.txt >&2; echo "$name failed" >&2; exit 1; fi
    local t r
    read -r t r < <(tail -n 1 time.txt)
    local bt="T_$name"
    if [ -z "${!bt:-}" ] || awk -v a="$t" -v b="${!bt}" 'BEGIN {exit !(a < b)}'; then
        printf -v "T_$name" '%s' "$t"
        printf -v "R_$name" '%s' "$r"
    fi
}

mbps() { awk -v b="$1" -v t="$2" 'BEGIN {printf "%.0f", b / 1e6 / (t > 0 ? t : 1e-9)}'; }
ratio() { awk -v ours="$1" -v base="$2" 'BEGIN {printf "%.2f", base / (ours > 0 ? ours : 1e-9)}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

# The machine is shared and noisy: baseline and hrr-pack alternate, ROUNDS times each.
ROUNDS="${ROUNDS:-3}"
for _ in $(seq "$ROUNDS"); do
    rm -f base.tar.zst; run base_pack sh -c 'tar -cf - run.hrr | zstd -T0 -3 -q -o base.tar.zst'
    rm -f ours.tar.zst; run ours_pack "$BIN" pack run.hrr -o ours.tar.zst
done
for _ in $(seq "$ROUNDS"); do
    rm -rf out-base; mkdir out-base; run base_unpack sh -c 'zstd -d -q -c base.tar.zst | tar -C out-base -xf -'
    rm -rf out-ours; mkdir out-ours; run ours_unpack "$BIN" unpack ours.tar.zst -C out-ours
done
rm -rf out-base out-ours
for _ in $(seq "$ROUNDS"); do
    run verify "$BIN" verify ours.tar.zst
    run scan "$BIN" scan run.hrr --json
    cp out.txt scan.json
    run scan1 "$BIN" scan run.hrr -T 1
done
FOUND=$(sed -n 's/.*"found":\([0-9]*\).*/\1/p' scan.json)
PACKED=$(stat -c %s ours.tar.zst)
BASE_PACKED=$(stat -c %s base.tar.zst)
BASE_PACK=$T_base_pack; OURS_PACK=$T_ours_pack; OURS_PACK_RSS=$R_ours_pack
BASE_UNPACK=$T_base_unpack; OURS_UNPACK=$T_ours_unpack; OURS_UNPACK_RSS=$R_ours_unpack
VERIFY=$T_verify; VERIFY_RSS=$R_verify; SCAN=$T_scan; SCAN_RSS=$R_scan; SCAN1=$T_scan1

echo
echo "hrr-pack benchmark: archive of $BYTES bytes ($((BYTES / 1048576)) MiB), $(nproc) cores"
printf '%-34s %8s s %7s MB/s   ratio %s   max RSS %s MiB\n' \
    "pack   (baseline tar|zstd -T0 -3)" "$BASE_PACK" "$(mbps "$BYTES" "$BASE_PACK")" "-" "-"
printf '%-34s %8s s %7s MB/s   ratio %s   max RSS %s MiB\n' \
    "pack   hrr-pack pack (-T0 -3)" "$OURS_PACK" "$(mbps "$BYTES" "$OURS_PACK")" "$(ratio "$OURS_PACK" "$BASE_PACK")" "$(mib "$OURS_PACK_RSS")"
printf '%-34s %8s s %7s MB/s   ratio %s   max RSS %s MiB\n' \
    "unpack (baseline zstd -d|tar -x)" "$BASE_UNPACK" "$(mbps "$BYTES" "$BASE_UNPACK")" "-" "-"
printf '%-34s %8s s %7s MB/s   ratio %s   max RSS %s MiB\n' \
    "unpack hrr-pack unpack" "$OURS_UNPACK" "$(mbps "$BYTES" "$OURS_UNPACK")" "$(ratio "$OURS_UNPACK" "$BASE_UNPACK")" "$(mib "$OURS_UNPACK_RSS")"
printf '%-34s %8s s %7s MB/s                 max RSS %s MiB\n' \
    "verify hrr-pack verify (pack)" "$VERIFY" "$(mbps "$BYTES" "$VERIFY")" "$(mib "$VERIFY_RSS")"
printf '%-34s %8s s %7s MB/s                 max RSS %s MiB   (%s secrets found)\n' \
    "scan   hrr-pack scan (all cores)" "$SCAN" "$(mbps "$BYTES" "$SCAN")" "$(mib "$SCAN_RSS")" "$FOUND"
printf '%-34s %8s s %7s MB/s\n' "scan   hrr-pack scan -T 1" "$SCAN1" "$(mbps "$BYTES" "$SCAN1")"
echo "packed size: hrr-pack $PACKED bytes, baseline $BASE_PACKED bytes"
