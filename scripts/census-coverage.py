#!/usr/bin/env python3
"""How capture covers the CUDA driver API census (shared/reference/cuda-api-census.md).

    python3 scripts/census-coverage.py CENSUS_MD [--list]

Every call of the census is one of:
  recorded     a row of the call table (crates/hrr-calls/src/cuda/table.rs) exports it (or its
               _v2 variant, the ABI CUPTI names by its base name);
  query        a pure query or host-side computation: it changes no device state and moves no
               data, so capture hands it through (counted as a pass-through call in the manifest)
               and replay needs nothing from it;
  interposed   handled by capture without being recorded (cuGetProcAddress hands out wrappers);
  unsupported  anything else: a state-changing call capture does not record (goal: none).
Prints the totals and, with --list, every call with its class.
"""
import re
import sys
from pathlib import Path

# Calls that read state or compute on the host, and why replay needs nothing from them.
QUERIES = {
    "cuCtxGetCurrent", "cuCtxGetDevice", "cuCtxGetDevice_v2", "cuCtxGetApiVersion",
    "cuCtxGetLimit", "cuCtxGetStreamPriorityRange", "cuDevicePrimaryCtxGetState",
    "cuDeviceGetPCIBusId", "cuModuleGetLoadingMode", "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo_v3", "cuStreamQuery", "cuEventQuery", "cuEventElapsedTime_v2",
    "cuFuncGetAttribute", "cuKernelGetAttribute", "cuPointerGetAttribute",
    "cuPointerGetAttributes", "cuMemGetInfo_v2", "cuMemGetAllocationGranularity",
    "cuOccupancyAvailableDynamicSMemPerBlock", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuOccupancyMaxActiveClusters",
    "cuGraphGetNodes",
}
INTERPOSED = {"cuGetProcAddress", "cuGetProcAddress_v2"}


def table_exports(root: Path) -> set:
    text = (root / "crates/hrr-calls/src/cuda/table.rs").read_text()
    names = set()
    for m in re.finditer(r"^\s*[A-Z]\w*\s*\[([^\]]+)\]", text, re.M):
        names.update(n.strip() for n in m.group(1).split(",") if n.strip())
    return names


def census_calls(md: Path) -> list:
    calls = []
    for line in md.read_text().splitlines():
        m = re.match(r"^\|\s*(cu\w+)\s*\|", line)
        if m:
            calls.append(m.group(1))
    return calls


def classify(call: str, exports: set) -> str:
    if call in exports or f"{call}_v2" in exports:
        return "recorded"
    if call in INTERPOSED:
        return "interposed"
    if call in QUERIES:
        return "query"
    return "unsupported"


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    root = Path(__file__).resolve().parent.parent
    exports = table_exports(root)
    calls = census_calls(Path(args[0]))
    classes = {c: classify(c, exports) for c in calls}
    totals = {k: sum(1 for v in classes.values() if v == k)
              for k in ("recorded", "query", "interposed", "unsupported")}
    print(f"census calls: {len(calls)}; " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    if "--list" in sys.argv:
        for c in calls:
            print(f"  {classes[c]:<12} {c}")
    else:
        for c in calls:
            if classes[c] == "unsupported":
                print(f"  unsupported: {c}")
    return 1 if totals["unsupported"] else 0


if __name__ == "__main__":
    sys.exit(main())
