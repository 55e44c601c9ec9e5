#!/usr/bin/env bash
# Builds a self-contained bundle for running the GPU tests and benchmarks on
# a machine with an NVIDIA GPU and no package registry: zyntax, its unit
# tests and the GPU benchmark, linked with LLVM's static libraries and a
# static libstdc++ (they need only glibc, zlib, zstd and the CUDA driver
# there), stripped, with the test programs and the scripts that run them,
# in dist/zyntax-gpu.tar.xz (about 33 MiB; unused LLVM code is dropped at link time).
#
#   scripts/gpu_bundle.sh                 # builds build-bundle/ and the tarball
#
# On the GPU machine (with python3, NumPy and PyTorch), one line:
#   tar xf zyntax-gpu.tar.xz -C /tmp && /tmp/zyntax-gpu/run.sh all OUTDIR
# runs the GPU parity suites (`test`), the Vulkan suites on NVIDIA's Vulkan
# driver (`vulkan`), the Python suite on cuda:0 (`python`: the extension is
# built there for its python3) and the benchmarks (`bench`), writing the logs
# and bench results into OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
# The packages the build needs (ZYNTAX_BUNDLE_NO_SETUP=1: already there).
[ -n "${ZYNTAX_BUNDLE_NO_SETUP:-}" ] || scripts/setup.sh >/dev/null

# Without MPI: the GPU machine has no Open MPI to load, and one process is rank 0 of 1.
cmake -S . -B build-bundle -G Ninja -DCMAKE_BUILD_TYPE=Release -DZYNTAX_STATIC_LLVM=ON -DZYNTAX_TESTS=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >/dev/null
cmake --build build-bundle -j"$(nproc)" --target zyntax zyntax_unit_tests zyntax_gpu_bench zyntax_api_tests tiny_lm

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/zyntax-gpu"
mkdir -p "$root/bin" "$root/lib" "$root/tests" "$root/bench" "$root/examples"
for b in zyntax zyntax_gpu_bench tests/zyntax_unit_tests tests/zyntax_api_tests examples/tiny_lm/tiny_lm; do
  strip -o "$root/bin/$(basename "$b")" "build-bundle/$b"
done
strip -o "$root/lib/libzyntax.so.0.1" build-bundle/libzyntax.so.0.1.0
# The Vulkan loader (run.sh uses it where the machine has none).
cp -L "$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/{print $NF; exit}')" "$root/lib/libvulkan.so.1"
cp -r tests/programs "$root/tests/"
cp examples/*.zynml "$root/examples/"
mkdir -p "$root/examples/tiny_lm/data" "$root/tests/api/data"
cp examples/tiny_lm/data/*.txt "$root/examples/tiny_lm/data/"
cp tests/api/*.zynml "$root/tests/api/"
cp tests/api/data/*.zynml "$root/tests/api/data/"
cp bench/compare_gpu.py bench/compare_fusion.py bench/performance_doc.py "$root/bench/"
# What `run.sh python` needs to build the Python extension there, for the
# machine's own python3, against lib/libzyntax.so.0.1: its sources, the
# public headers and DLPack's (Debian's libdlpack-dev), the package, the suite.
mkdir -p "$root/include/dlpack" "$root/python"
cp -r include/zyntax "$root/include/"
cp /usr/include/dlpack/dlpack.h "$root/include/dlpack/"
cp -r python/src python/zyntax python/tests "$root/python/"
find "$root/python" -name __pycache__ -prune -exec rm -rf {} +
cp scripts/gpu_bundle_run.sh "$root/run.sh"
git rev-parse HEAD > "$root/COMMIT" 2>/dev/null || true
mkdir -p dist
# Each program carries its own copy of LLVM: a window that spans them all
# finds the copies (about 33 MiB instead of 72).
tar -C "$stage" -cf - zyntax-gpu | xz -T1 --memlimit-compress=12GiB --lzma2=preset=9,dict=384MiB > dist/zyntax-gpu.tar.xz
ls -l dist/zyntax-gpu.tar.xz
# Nothing but the system's C libraries and the driver (opened at run time):
ldd "$root/bin/zyntax" | grep -v -E "linux-vdso|libc\.so|libm\.so|ld-linux|libz\.so|libzstd\.so" && {
  echo "gpu_bundle: zyntax depends on more than the system libraries" >&2
  exit 1
} || true
