#!/usr/bin/env bash
# What a failed D2H check differs in: the recorded bytes and a replay's, side by side.
#
#   bash scripts/mismatch-bytes.sh BIN_DIR ARCHIVE OUT_DIR [SEQ]
#
# BIN_DIR holds hrr-playback; ARCHIVE is a pid-* folder (or an archive of one process). Without
# SEQ, replays ARCHIVE with --json (the recheck included) and takes the first event its
# `mismatches` name; then replays once more without the recheck, writing that event's result
# (the hidden --dump-d2h/--dump-seqs a recheck uses), and leaves in OUT_DIR: replay.json, the
# event's decoded record (event.json), the recorded result (recorded.bin; a digest object when
# the recording kept digests) and the replayed one (replayed.bin), and prints where they differ
# (first offsets, as 8-byte words, and how many bytes). Needs a GPU and python3.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
bin=$1 arch=$2 out=$3 seq=${4:-}
pb=$bin/hrr-playback
mkdir -p "$out"
if [ -z "$seq" ]; then
    "$pb" "$arch" --json > "$out/replay.json" 2> "$out/replay.err" || true
    seq=$(python3 -c 'import json,re,sys
m = json.load(open(sys.argv[1])).get("mismatches") or []
print(re.search(r"#(\d+)", m[0]).group(1) if m else "")' "$out/replay.json")
fi
[ -n "$seq" ] || { echo "no mismatch in $arch (replay.json: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict_line"])' "$out/replay.json"))"; exit 0; }
"$pb" "$arch" --events --json > "$out/events.jsonl"
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
"$pb" "$arch" --no-recheck --no-progress -q --dump-d2h "$dump" --dump-seqs "$seq" > /dev/null 2>&1 || true
cp "$dump"/*-"$seq".bin "$out/replayed.bin" 2>/dev/null || echo "replay wrote no result for event #$seq" >&2
python3 - "$arch" "$out" "$seq" <<'PY'
import glob, json, os, shutil, sys
arch, out, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
ev = next((json.loads(l) for l in open(os.path.join(out, "events.jsonl"))
           if l.startswith("{") and json.loads(l).get("seq") == seq), None)
if ev is None:
    sys.exit(f"event #{seq} not in the archive")
json.dump(ev, open(os.path.join(out, "event.json"), "w"), indent=1)
blob = ev["fields"].get("d2h_blob")
found = [p for p in glob.glob(os.path.join(arch, "**", "blobs", blob[:2], blob + ".blob"), recursive=True)] if blob else []
if not found:
    sys.exit(f"event #{seq} {ev['name']}: its recorded result is not in the archive")
shutil.copy(found[0], os.path.join(out, "recorded.bin"))
rec = open(found[0], "rb").read()
rp = os.path.join(out, "replayed.bin")
got = open(rp, "rb").read() if os.path.exists(rp) else b""
diff = [i for i in range(min(len(rec), len(got))) if rec[i] != got[i]]
print(f"event #{seq} {ev['name']} {json.dumps(ev['fields'])}")
print(f"recorded {len(rec)} bytes, replayed {len(got)} bytes, {len(diff)} differ")
for o in sorted({d // 8 * 8 for d in diff})[:8]:
    print(f"  +{o:#x}: recorded {rec[o:o+8].hex()} replayed {got[o:o+8].hex()}")
PY
