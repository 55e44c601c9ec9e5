#!/usr/bin/env bash
# In the GPU bundle (scripts/gpu_bundle.sh): runs on the GPU machine.
#   run.sh test OUTDIR    the GPU parity suites: every parity case on cuda:0 against the
#                         reference executor, every test program on cuda:0 against NumPy
#   run.sh bench OUTDIR   bench/compare_gpu.py: zyntax beside PyTorch and Triton
#   run.sh all OUTDIR     both
#   run.sh sanitize OUTDIR the GPU parity suites under compute-sanitizer's memcheck and racecheck
#                         (racecheck also reports shared loads LLVM hoists above a guard, whose
#                         values no thread uses: flash attention's maps that one thread runs)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-all}
out=$(mkdir -p "${2:-/tmp/zyntax-gpu-out}" && cd "${2:-/tmp/zyntax-gpu-out}" && pwd)
export ZYNTAX_CACHE_DIR=/tmp/zyntax-kernel-cache PYTHONUNBUFFERED=1
cd "$here"
status=0
bin/zyntax devices | tee "$out/devices.txt"
# A kernel that never finishes (a barrier some threads miss) would stall the
# whole run: each suite runs under a time limit, and a test still running
# when it strikes is named and left out, and the suite goes on from there
# (the tests that passed are not run again).
unit_tests() {  # unit_tests FILTER LOG
  local skip="" attempt rc hung
  for attempt in 1 2 3; do
    timeout 120 bin/zyntax_unit_tests --gtest_filter="$1${skip:+-$skip}" >> "$2" 2>&1
    rc=$?
    [ $rc -ne 124 ] && return $rc
    hung=$(grep '^\[ RUN      \]' "$2" | tail -n 1 | awk '{print $4}')
    echo "== $hung did not finish within the time limit: going on without it" | tee -a "$2"
    skip=$(sed -nE 's/^\[ +(OK|SKIPPED|FAILED) +\] ([^ ]+) \([0-9]+ ms\)$/\2/p' "$2" | sort -u | paste -sd: -)
    skip="${skip:+$skip:}$hung"
  done
  echo "== three tests did not finish: the rest of the suite was not run" | tee -a "$2"
  return 1
}
if [ "$what" = test ] || [ "$what" = all ]; then
  : > "$out/unit.txt"
  unit_tests 'Kernels/GpuParity.*:GpuSchedules.*:CudaRuntime.*:NvptxArch.*:NvptxCompiler.*:SizeClassPool.*' "$out/unit.txt" || status=1
  tail -n 25 "$out/unit.txt"
  python3 tests/programs/run_programs.py --zyntax bin/zyntax --device cuda:0 -j 8 > "$out/programs.txt" 2>&1 || status=1
  tail -n 25 "$out/programs.txt"
  # The C++ API's ops on every device present (the GPU included), and the tiny LM on the GPU.
  LD_LIBRARY_PATH="$here/lib" timeout 240 bin/zyntax_api_tests --gtest_filter=-TransformerBlock.* > "$out/api.txt" 2>&1 || status=1
  tail -n 5 "$out/api.txt"
  LD_LIBRARY_PATH="$here/lib" timeout 240 bin/tiny_lm --device cuda:0 --data examples/tiny_lm/data/kjv_genesis_exodus.txt --quiet \
    > "$out/tiny_lm.txt" 2>&1 || status=1
  tail -n 3 "$out/tiny_lm.txt"
fi
if [ "$what" = sanitize ]; then
  for tool in memcheck racecheck; do
    timeout 400 compute-sanitizer --tool $tool --print-limit 20 bin/zyntax_unit_tests \
      --gtest_filter='Kernels/GpuParity.*:GpuSchedules.*' > "$out/$tool.txt" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$out/$tool.txt"
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 bench/compare_gpu.py --bench bin/zyntax_gpu_bench --results "$out" --performance "$out/performance.md" \
    > "$out/bench.txt" 2>&1 || status=1
  tail -n 40 "$out/bench.txt"
fi
exit $status
