#!/usr/bin/env bash
# `N tests skipped (why)` from a skip log: one line per skipped test, `<test>\t<why>` (written by
# the tests and tests/containers/run.sh when $HRR_TEST_SKIP_LOG is set). Grouped by why, most
# frequent first: `12 tests skipped (11: hipcc is not installed, ...; 1: ...)`.
set -euo pipefail
log=$1
n=0
[ -f "$log" ] && n=$(wc -l <"$log")
if [ "$n" -eq 0 ]; then
    echo "0 tests skipped"
    exit 0
fi
why=$(cut -f2- "$log" | sort | uniq -c | sort -rn |
    awk '{c=$1; $1=""; sub(/^ /, ""); printf "%s%d: %s", (NR>1 ? "; " : ""), c, $0}')
echo "$n tests skipped ($why)"
