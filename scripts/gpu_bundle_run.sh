#!/usr/bin/env bash
# In the GPU bundle (scripts/gpu_bundle.sh): runs on the GPU machine.
#   run.sh test OUTDIR    the GPU parity suites: every parity case on cuda:0 against the
#                         reference executor, every test program on cuda:0 against NumPy
#   run.sh bench OUTDIR   bench/compare_gpu.py: zyntax beside PyTorch and Triton
#   run.sh all OUTDIR     both
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-all}
out=$(mkdir -p "${2:-/tmp/zyntax-gpu-out}" && cd "${2:-/tmp/zyntax-gpu-out}" && pwd)
export ZYNTAX_CACHE_DIR=/tmp/zyntax-kernel-cache PYTHONUNBUFFERED=1
cd "$here"
status=0
bin/zyntax devices | tee "$out/devices.txt"
if [ "$what" = test ] || [ "$what" = all ]; then
  bin/zyntax_unit_tests --gtest_filter='Kernels/GpuParity.*:CudaRuntime.*:NvptxArch.*:NvptxCompiler.*:SizeClassPool.*' \
    > "$out/unit.txt" 2>&1 || status=1
  tail -n 25 "$out/unit.txt"
  python3 tests/programs/run_programs.py --zyntax bin/zyntax --device cuda:0 -j 8 > "$out/programs.txt" 2>&1 || status=1
  tail -n 25 "$out/programs.txt"
  # The C++ API's ops on every device present (the GPU included), and the tiny LM on the GPU.
  LD_LIBRARY_PATH="$here/lib" bin/zyntax_api_tests --gtest_filter=-TransformerBlock.* > "$out/api.txt" 2>&1 || status=1
  tail -n 5 "$out/api.txt"
  LD_LIBRARY_PATH="$here/lib" bin/tiny_lm --device cuda:0 --data examples/tiny_lm/data/kjv_genesis_exodus.txt --quiet \
    > "$out/tiny_lm.txt" 2>&1 || status=1
  tail -n 3 "$out/tiny_lm.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 bench/compare_gpu.py --bench bin/zyntax_gpu_bench --results "$out" --performance "$out/performance.md" \
    > "$out/bench.txt" 2>&1 || status=1
  tail -n 40 "$out/bench.txt"
fi
exit $status
