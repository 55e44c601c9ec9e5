#!/usr/bin/env bash
# Builds the CPU benchmarks (installing OpenBLAS, oneDNN and PyTorch from
# Debian if missing; oneDNN's CMake package also asks for OpenCL) and writes
# docs/performance.md from one side-by-side run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
missing=()
for p in libopenblas-dev libdnnl-dev ocl-icd-opencl-dev python3-torch; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DZYNTAX_BENCH=ON -DZYNTAX_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" --target zyntax_cpu_bench
/usr/bin/python3 bench/compare_cpu.py "$@"
