#!/usr/bin/env bash
# CPU test of scripts/cuda-samples.sh: its syntax, the --list dry run, the parsing of replay
# JSON, and a whole run (nvcc fallback) over a fake samples checkout whose "nvcc" installs the
# fake CUDA driver's driver_app (tests/fake-cuda) as each sample, captured and replayed for real.
# Then samples-bench.sh's table from the figures of a stopped run (HRR_BENCH_REPORT_ONLY), and a
# whole samples-bench run on stand-ins (how many pairs each sample gets; with a baseline build, the
# order of the two builds alternating), and gpu-capture-diag.sh's
# transpose case on them.
#
#   bash scripts/test-cuda-samples.sh [BIN_DIR]     (default target/debug, after cargo build --workspace)
#
# Exit 0 when every check holds; prints the first failed check otherwise.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "${1:-$repo/target/debug}" && pwd)
script=$repo/scripts/cuda-samples.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

bash -n "$script" || fail "bash -n"

# A list of three samples, two of them present in a fake checkout.
printf '# a comment\n0_Introduction/vectorAdd\n\n0_Introduction/asyncAPI\n1_Utilities/deviceQuery\n' >"$tmp/list.txt"
mkdir -p "$tmp/samples/Common" "$tmp/samples/Samples/0_Introduction/vectorAdd" \
    "$tmp/samples/Samples/0_Introduction/asyncAPI"
echo 'int main() { return 0; }' >"$tmp/samples/Samples/0_Introduction/vectorAdd/vectorAdd.cu"
echo 'int main() { return 0; }' >"$tmp/samples/Samples/0_Introduction/asyncAPI/asyncAPI.cu"
echo 'kernel data' >"$tmp/samples/Samples/0_Introduction/vectorAdd/input.txt"

# A list that is not there is an error that names it, not a run of no samples.
rc=0
err=$(HRR_GPU_ARCH=90 bash "$script" --list --samples-list "$tmp/none.txt" "$tmp/samples" 2>&1) || rc=$?
[ $rc = 2 ] && grep -q "no samples list at $tmp/none.txt" <<<"$err" || fail "missing list: exit $rc: $err"
out=$(HRR_GPU_ARCH=90 bash "$script" --list --samples-list "$tmp/list.txt" "$tmp/samples")
grep -qx $'0_Introduction/vectorAdd\tpresent' <<<"$out" || fail "--list: $out"
grep -qx $'1_Utilities/deviceQuery\tmissing' <<<"$out" || fail "--list: $out"
grep -qx '3 samples, 2 present in '"$tmp/samples" <<<"$out" || fail "--list: $out"
grep -qx 'architecture: 90' <<<"$out" || fail "--list: $out"

# Parsing: a pass with nondeterminism, a mismatch with an error, an error object, no JSON.
p() { printf '%s\n' "$1" >"$tmp/r.json" && bash "$script" --parse-replay "$tmp/r.json"; }
[ "$(p '{"schema":"hrr.replay/1","ok":true,"kernels_launched":7,"d2h_checks":{"pass":6,"exact":6,"within_tol":0,"fail":0,"skipped":0,"skipped_redacted":0,"nondeterministic":1},"error":null,"verdict":"PASS"}')" = \
    $'PASS\t6/0 +1 nondet\t7\t' ] || fail "parse pass: $(p '{}')"
[ "$(p '{"kernels_launched":2,"d2h_checks":{"pass":1,"fail":3,"nondeterministic":0},"error":"event #9 cuMemcpy: a \"b\" | c","verdict":"FAULT"}')" = \
    $'FAULT\t1/3\t2\tevent #9 cuMemcpy: a \\"b\\" / c' ] || fail "parse fault"
[ "$(p '{"kernels_launched":1,"d2h_checks":{"pass":0,"fail":1,"nondeterministic":0},"mismatches":["event #40 cuMemcpyDtoH_v2: 3 of 4 bytes differ, first at offset 0","event #41 x"],"error":null,"verdict":"MISMATCH"}')" = \
    $'MISMATCH\t0/1\t1\tevent #40 cuMemcpyDtoH_v2: 3 of 4 bytes differ, first at offset 0' ] || fail "parse mismatch"
[ "$(p '{"kernels_launched":144,"d2h_checks":{"pass":52,"fail":1,"nondeterministic":1},"mismatches":["event #9 x"],"recheck_replays":12,"error":null,"verdict":"MISMATCH"}')" = \
    $'MISMATCH\t52/1 +1 nondet (12 rechecks)\t144\tevent #9 x' ] || fail "parse mismatch after a recheck"
[ "$(p '{"schema":"hrr.error/1","ok":false,"error":"x: no such file","hint":null,"exit_code":1}')" = \
    $'ERROR\t-/-\t-\tx: no such file' ] || fail "parse error object"
[ "$(p 'not json')" = $'NO JSON\t-\t-\t-' ] || fail "parse no json"

# A whole run: "nvcc" installs driver_app as the sample; asyncAPI's build fails.
[ -x "$bin/hrr-capture" ] && [ -e "$bin/libhrr_capture.so" ] || fail "$bin lacks hrr-capture (cargo build --workspace)"
sh "$repo/tests/fake-cuda/build.sh" "$tmp/fake" >/dev/null
cat >"$tmp/nvcc" <<EOS
#!/bin/sh
out=
for a in "\$@"; do case \$a in *asyncAPI.cu) echo "asyncAPI.cu(1): error: fake failure" >&2; exit 1;; esac; done
while [ \$# -gt 0 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$tmp/fake/driver_app" "\$out"
EOS
chmod +x "$tmp/nvcc"
rc=0
LD_LIBRARY_PATH=$tmp/fake HRR_GPU_ARCH=90 NVCC=$tmp/nvcc HRR_SAMPLES_TIMEOUT=60 \
    bash "$script" --no-cmake -j 2 --samples-list "$tmp/list.txt" "$tmp/samples" "$bin" "$tmp/out" \
    >"$tmp/run.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "run exit $rc (1 expected: a sample did not build): $(cat "$tmp/run.log")"
md=$tmp/out/compatibility.md
grep -q '^| Sample | Build | Plain exit | Captured exit | Replay verdict |' "$md" || fail "table header: $(cat "$md")"
grep -Eq '^\| 0_Introduction/vectorAdd \| nvcc \| 0 \| 0 \| PASS \| [1-9][0-9]*/0 \| [1-9][0-9]* \|' "$md" ||
    fail "vectorAdd row: $(cat "$md") $(cat "$tmp/run.log")"
grep -q '^| 0_Introduction/asyncAPI | nvcc | not built | .*fake failure' "$md" || fail "asyncAPI row: $(cat "$md")"
grep -q '^| 1_Utilities/deviceQuery | nvcc | not built | .*not in ' "$md" || fail "deviceQuery row: $(cat "$md")"
grep -q '^3 samples: 1 built (nvcc), 1 exit 0 plain, 1 exit 0 captured, 1 replay PASS/REPRODUCED (sm_90)$' "$md" ||
    fail "totals: $(cat "$md")"
[ -f "$tmp/out/work/0_Introduction_vectorAdd/bin/input.txt" ] || fail "sources not beside the binary"

# A replay that ends without a report says how: TIMEOUT when the step timeout killed it (124),
# else its exit status and last line.
mkdir -p "$tmp/bin2" "$tmp/samples/Samples/0_Introduction/other"
echo 'int main() { return 0; }' >"$tmp/samples/Samples/0_Introduction/other/other.cu"
ln -s "$bin/hrr-capture" "$tmp/bin2/hrr-capture"
ln -s "$bin/libhrr_capture.so" "$tmp/bin2/libhrr_capture.so"
cat >"$tmp/bin2/hrr-playback" <<'EOS'
#!/bin/sh
case "$1" in *vectorAdd*) exit 124 ;; esac
echo "replay stopped here" >&2
exit 3
EOS
chmod +x "$tmp/bin2/hrr-playback"
printf '0_Introduction/vectorAdd\n0_Introduction/other\n' >"$tmp/list2.txt"
LD_LIBRARY_PATH=$tmp/fake HRR_GPU_ARCH=90 NVCC=$tmp/nvcc HRR_SAMPLES_TIMEOUT=60 \
    bash "$script" --no-cmake -j 2 --samples-list "$tmp/list2.txt" "$tmp/samples" "$tmp/bin2" "$tmp/out2" \
    >"$tmp/run2.log" 2>&1 || true
md=$tmp/out2/compatibility.md
grep -q '^| 0_Introduction/vectorAdd | nvcc | 0 | 0 | TIMEOUT | - | - | replay ran past 60s' "$md" ||
    fail "timeout row: $(cat "$md") $(cat "$tmp/run2.log")"
grep -q '^| 0_Introduction/other | nvcc | 0 | 0 | NO JSON | - | - | replay exit 3: replay stopped here' "$md" ||
    fail "no-report row: $(cat "$md")"

# samples-bench.sh's table from the figures a stopped run took (HRR_BENCH_REPORT_ONLY, as
# gpu-acceptance.sh asks after a deadline): ratios as medians of pairs, a missing pair left out.
bench=$repo/scripts/samples-bench.sh
bash -n "$bench" || fail "bash -n samples-bench.sh"
mkdir -p "$tmp/bench"
printf 'sample\trep\tmode\tfigure\tvalue\n%s\n%s\n%s\n%s\n%s\n' \
    $'3_CUDA_Features_tf32TensorCoreGemm\t1\tplain\tTFLOPS\t25.0' \
    $'3_CUDA_Features_tf32TensorCoreGemm\t1\tcaptured\tTFLOPS\t24.0' \
    $'3_CUDA_Features_tf32TensorCoreGemm\t2\tplain\tTFLOPS\t20.0' \
    $'3_CUDA_Features_tf32TensorCoreGemm\t2\tcaptured\tTFLOPS\t20.0' \
    $'3_CUDA_Features_tf32TensorCoreGemm\t3\tplain\tTFLOPS\t30.0' >"$tmp/bench/samples-bench.tsv"
HRR_BENCH_REPORT_ONLY=1 HRR_BENCH_ONLY=tf32 bash "$bench" "$tmp/samples" "$bin" "$tmp/bench" >"$tmp/bench.log" 2>&1 ||
    fail "report-only: $(cat "$tmp/bench.log")"
grep -qE '^3_CUDA_Features_tf32TensorCoreGemm +TFLOPS +25\.00 +22\.00 +0\.980 +2: 0\.96-1\.00$' "$tmp/bench/samples-bench.txt" ||
    fail "report-only table: $(cat "$tmp/bench/samples-bench.txt")"
rc=0
HRR_BENCH_REPORT_ONLY=1 bash "$bench" "$tmp/samples" "$bin" "$tmp/none" >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "report-only without figures: exit $rc"

# A whole samples-bench run on stand-ins (an nvidia-smi that lists a GPU, samples that print
# their figure, an hrr-capture that runs its command): the noisy samples get 3 times the pairs.
mkdir -p "$tmp/sb/bin" "$tmp/sb/cap" "$tmp/sb/out/work/6_Performance_transpose/bin" \
    "$tmp/sb/out/work/0_Introduction_matrixMul/bin"
printf '#!/bin/sh\necho "GPU 0: stand-in"\n' >"$tmp/sb/bin/nvidia-smi"
printf '#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n' >"$tmp/sb/cap/hrr-capture"
: >"$tmp/sb/cap/libhrr_capture.so"
printf '#!/bin/sh\necho "transpose optimized         , Throughput = 1500.5 GB/s"\n' \
    >"$tmp/sb/out/work/6_Performance_transpose/bin/transpose"
printf '#!/bin/sh\necho sample >>"${SB_ORDER:-/dev/null}"\necho "Performance= 4900.0 GFlop/s"\n' >"$tmp/sb/out/work/0_Introduction_matrixMul/bin/matrixMul"
chmod +x "$tmp/sb/bin/nvidia-smi" "$tmp/sb/cap/hrr-capture" "$tmp/sb/out/work"/*/bin/*
PATH="$tmp/sb/bin:$PATH" HRR_BENCH_REPS=2 HRR_BENCH_ONLY='transpose|matrixMul' \
    bash "$bench" "$tmp/sb/out" "$tmp/sb/cap" "$tmp/sb/bench" >"$tmp/sb.log" 2>&1 || fail "stand-in bench: $(cat "$tmp/sb.log")"
grep -qE '^6_Performance_transpose +optimized GB/s +1500\.50 +1500\.50 +1\.000 +6: 1\.00-1\.00$' "$tmp/sb/bench/samples-bench.txt" ||
    fail "stand-in bench, transpose: $(cat "$tmp/sb/bench/samples-bench.txt")"
grep -qE '^0_Introduction_matrixMul +GFlop/s +4900\.00 +4900\.00 +1\.000 +2: 1\.00-1\.00$' "$tmp/sb/bench/samples-bench.txt" ||
    fail "stand-in bench, matrixMul: $(cat "$tmp/sb/bench/samples-bench.txt")"

# With a baseline build, every other pair runs in the opposite order (plain, captured, baseline,
# then baseline, captured, plain): the stand-in captures log their turn, the sample each run.
mkdir -p "$tmp/sb/cap2"
printf '#!/bin/sh\necho captured >>"${SB_ORDER:-/dev/null}"\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n' >"$tmp/sb/cap/hrr-capture"
printf '#!/bin/sh\necho baseline >>"${SB_ORDER:-/dev/null}"\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n' >"$tmp/sb/cap2/hrr-capture"
: >"$tmp/sb/cap2/libhrr_capture.so"
chmod +x "$tmp/sb/cap/hrr-capture" "$tmp/sb/cap2/hrr-capture"
SB_ORDER=$tmp/sb/order PATH="$tmp/sb/bin:$PATH" HRR_BENCH_REPS=3 HRR_BENCH_ONLY=matrixMul HRR_BENCH_BASELINE="$tmp/sb/cap2" \
    bash "$bench" "$tmp/sb/out" "$tmp/sb/cap" "$tmp/sb/bench2" >"$tmp/sb2.log" 2>&1 || fail "stand-in bench with a baseline: $(cat "$tmp/sb2.log")"
odd="sample captured sample baseline sample" even="baseline sample captured sample sample"
[ "$(tr '\n' ' ' <"$tmp/sb/order")" = "$odd $even $odd " ] ||
    fail "stand-in bench with a baseline, order: $(tr '\n' ' ' <"$tmp/sb/order")"
grep -qE '^0_Introduction_matrixMul +GFlop/s +4900\.00 +4900\.00 +1\.000 +3: 1\.00-1\.00 +4900\.00 +1\.000 +3: 1\.00-1\.00$' "$tmp/sb/bench2/samples-bench.txt" ||
    fail "stand-in bench with a baseline: $(cat "$tmp/sb/bench2/samples-bench.txt")"

# gpu-capture-diag.sh's transpose case on the same stand-ins (an nvcc that makes a "transpose"
# printing two variants' times): plain and captured alternated, the first captured run profiled.
printf '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\nprintf "#!/bin/sh\\necho \\"copy, Time = 0.00400 ms\\"\\necho \\"optimized, Time = 0.00450 ms\\"\\necho \\"p=\\$HRR_CAPTURE_PROFILE\\" >&2\\n" >"$2"\nchmod +x "$2"\n' \
    >"$tmp/sb/bin/nvcc"
chmod +x "$tmp/sb/bin/nvcc"
mkdir -p "$tmp/sb/cs/Samples/6_Performance/transpose" "$tmp/sb/cs/Common"
PATH="$tmp/sb/bin:$PATH" HRR_DIAG_ONLY=transpose HRR_DIAG_REPS=1 \
    bash "$repo/scripts/gpu-capture-diag.sh" "$tmp/sb/cs" "$tmp/sb/cap" "$tmp/sb/diag" >"$tmp/diag.log" 2>&1 ||
    fail "stand-in diag: $(cat "$tmp/diag.log")"
grep -q '^\[gpu-capture-diag\] transpose run 1: plain 0.00400 0.00450 captured (profiled) 0.00400 0.00450 $' "$tmp/sb/diag/diag.txt" &&
    grep -q '^\[gpu-capture-diag\] transpose run 3: plain 0.00400 0.00450 captured 0.00400 0.00450 $' "$tmp/sb/diag/diag.txt" &&
    grep -q '^p=1$' "$tmp/sb/diag/transpose-1.profile" && grep -q '^p=0$' "$tmp/sb/diag/transpose-2.profile" ||
    fail "stand-in diag, transpose: $(cat "$tmp/sb/diag/diag.txt")"
echo "cuda-samples.sh, samples-bench.sh (report only, stand-in run), gpu-capture-diag.sh (transpose, stand-in): all checks passed"
