#!/usr/bin/env python3
"""Compare what an archive recorded with what CUPTI saw in the same run.

    python3 scripts/cupti-compare.py COUNT_DIR ARCHIVE

COUNT_DIR holds the CUPTI counter's `pid-<pid>.txt` files ("<call> <count>" lines) of a run that
was captured into ARCHIVE at the same time (CUDA_INJECTION64_PATH + hrr-capture). For every call
the archive's schema says the recorder records, the archive must hold exactly as many events as
CUPTI counted. Calls the recorder itself makes (metadata queries, the stream synchronisation
behind async D2H copies) reach the driver unrecorded, so for those CUPTI may count more.
Prints one line per process and every mismatch; exits 1 on a missing recording.
"""
import json
import os
import struct
import sys
from collections import Counter

# CUPTI subscribes inside cuInit and writes its counts from an atexit handler registered then:
# calls before cuInit returns (cuInit itself, an early cuDriverGetVersion) and unloads in the
# runtime's own exit handlers are invisible to it, so for these the archive may hold more.
CUPTI_BLIND = {"cuInit", "cuDriverGetVersion", "cuLibraryUnload", "cuModuleUnload"}

# Calls the recorder issues itself, unrecorded, on top of the application's.
RECORDER_OWN = {
    "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
    "cuDeviceGetAttribute", "cuDeviceTotalMem", "cuDeviceGetUuid", "cuStreamSynchronize",
}


def base(name):
    for suffix in ("_ptsz", "_ptds"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    head, _, tail = name.rpartition("_v")
    return head if head and tail.isdigit() else name


def archive_counts(pid_dir):
    with open(os.path.join(pid_dir, "events.bin"), "rb") as f:
        data = f.read()
    magic, version, flags = struct.unpack_from("<IHH", data, 0)
    if magic != 0x52524845:
        raise SystemExit(f"{pid_dir}: not an hrr events.bin")
    off = 8
    kind, _, _, _, total = struct.unpack_from("<HQQQI", data, off)
    schema = json.loads(data[off + 32 : off + total])
    names = {c["id"]: c["name"] for c in schema["calls"]}
    off += total
    counts = Counter()
    while off + 32 <= len(data):
        kind, _, _, _, total = struct.unpack_from("<HQQQI", data, off)
        if total < 32 or off + total > len(data) or kind == 0xFFFF:
            break
        if kind in names:
            counts[base(names[kind])] += 1
        off += total
    return counts, {base(n) for n in names.values()}


def cupti_counts(path):
    counts = Counter()
    with open(path) as f:
        for line in f:
            name, _, n = line.rpartition(" ")
            if name:
                counts[base(name.strip())] += int(n)
    return counts


def main():
    count_dir, archive = sys.argv[1], sys.argv[2]
    bad = 0
    for entry in sorted(os.listdir(archive)):
        if not entry.startswith("pid-"):
            continue
        pid_dir = os.path.join(archive, entry)
        cupti_file = os.path.join(count_dir, entry + ".txt")
        if not os.path.exists(cupti_file):
            print(f"{entry}: no CUPTI counts (process made no driver call CUPTI saw)")
            continue
        got, recorded = archive_counts(pid_dir)
        want = cupti_counts(cupti_file)
        missing, extra, ok = [], [], 0
        for call in sorted(recorded):
            a, c = got.get(call, 0), want.get(call, 0)
            if a == c:
                ok += c > 0
            elif a < c and call in RECORDER_OWN:
                ok += 1
            elif a > c and call in CUPTI_BLIND:
                ok += 1
            elif a < c:
                missing.append(f"{call}: CUPTI {c}, archive {a}")
            else:
                extra.append(f"{call}: CUPTI {c}, archive {a}")
        unhooked = sorted(c for c in want if c not in recorded)
        print(f"{entry}: {ok} recorded calls match CUPTI; {len(missing)} under-recorded; "
              f"{len(extra)} over-recorded; {len(unhooked)} calls not recorded by design "
              f"({sum(want[c] for c in unhooked)} calls: queries and pass-through)")
        for m in missing + extra:
            print(f"  MISMATCH {m}")
        bad += len(missing) + len(extra)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
