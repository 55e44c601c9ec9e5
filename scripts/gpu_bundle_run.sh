#!/usr/bin/env bash
# In the GPU bundle (scripts/gpu_bundle.sh): runs on the GPU machine.
#   run.sh test OUTDIR    the GPU parity suites: every parity case on cuda:0 against the
#                         reference executor, every test program on cuda:0 against NumPy
#   run.sh bench OUTDIR   bench/compare_gpu.py: zyntax beside PyTorch and Triton; bench/compare_fusion.py on cuda:0
#   run.sh vulkan OUTDIR  the Vulkan suites on the machine's Vulkan driver (NVIDIA's, where
#                         its ICD or its library is there): parity, f64 math, program suite
#   run.sh python OUTDIR  the Python suite (python/tests) on cpu and cuda:0, torch CUDA tensors
#                         through DLPack included: builds the _zyntax extension for the machine's
#                         python3 against lib/libzyntax.so.0.1 first (needs g++, pybind11, pytest)
#   run.sh hopper OUTDIR  the Hopper products and attention (warpgroup kernels, pairs of blocks
#                         in clusters too) on cuda:0 against the CPU, and their schedules' checks
#   run.sh all OUTDIR     test, vulkan, python and bench
#   run.sh tune OUTDIR    bench/compare_gpu.py --tune: the products' schedules tuned on cuda:0 (the
#                         tuner's search at 4096, up to 30 s each), then the rules' and the tuned
#                         plans beside cuBLAS; not part of all
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
unit_tests() {  # unit_tests FILTER LOG [SECONDS, 120 by default]
  local skip="" attempt rc hung
  for attempt in 1 2 3; do
    timeout "${3:-120}" bin/zyntax_unit_tests --gtest_filter="$1${skip:+-$skip}" >> "$2" 2>&1
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
if [ "$what" = hopper ]; then
  : > "$out/hopper.txt"
  unit_tests 'CudaHopper.*:ScheduleGpuWgmma.*:WgmmaLayout.*' "$out/hopper.txt" 300 || status=1
  grep -E '^\[ hopper|^\[  (PASSED|FAILED) |Failure|error' "$out/hopper.txt" | head -n 80
fi
if [ "$what" = vulkan ] || [ "$what" = all ]; then
  # The Vulkan loader: the machine's, else the bundle's (Debian's). NVIDIA's
  # driver: its ICD file where installed, else one written here for its
  # library (containers often have libGLX_nvidia without the ICD file).
  {
    if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
      export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "== no Vulkan loader on the machine: the bundle's"
    fi
    icd=$(ls /etc/vulkan/icd.d/nvidia*.json /usr/share/vulkan/icd.d/nvidia*.json /usr/local/share/vulkan/icd.d/nvidia*.json 2>/dev/null | head -n 1)
    if [ -n "$icd" ]; then
      echo "== NVIDIA's Vulkan ICD: $icd"
    else
      lib=$(ldconfig -p 2>/dev/null | awk '/libGLX_nvidia\.so\.0 /{print $NF; exit}')
      [ -z "$lib" ] && lib=$(ls /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 2>/dev/null | head -n 1)
      if [ -n "$lib" ]; then
        printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' "$lib" > "$out/nvidia_icd.json"
        export VK_DRIVER_FILES="$out/nvidia_icd.json" VK_ICD_FILENAMES="$out/nvidia_icd.json"
        echo "== no NVIDIA Vulkan ICD file: one written for $lib"
      else
        echo "== no NVIDIA Vulkan ICD and no libGLX_nvidia.so.0: the driver here has no Vulkan"
      fi
    fi
    bin/zyntax devices
  } > "$out/vulkan.txt" 2>&1
  cat "$out/vulkan.txt"
  if grep -q 'vulkan:0' "$out/vulkan.txt"; then
    unit_tests 'Kernels/VulkanParity.*:Vulkan.*:VulkanF64Math.*:Kernels/GlslParity.*' "$out/vulkan.txt" || status=1
    grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/vulkan.txt" | tail -n 20
    python3 tests/programs/run_programs.py --zyntax bin/zyntax --device vulkan:0 -j 8 > "$out/programs_vulkan.txt" 2>&1 || status=1
    tail -n 25 "$out/programs_vulkan.txt"
  fi
fi
if [ "$what" = python ] || [ "$what" = all ]; then
  # The extension for this python3 (the bundle's libzyntax has LLVM and
  # libstdc++ linked in), with the package beside it in a scratch folder.
  # ZYNTAX_TEST_DEVICES: the devices the suite runs its kernels and ops on.
  pydir=$(mktemp -d)
  mkdir -p "$pydir/zyntax"
  cp python/zyntax/*.py "$pydir/zyntax/"
  {
    echo "== $(python3 --version 2>&1), $(g++ --version | head -n 1)"
    # pybind11's pip package says where its headers are; else (Debian's
    # pybind11-dev) they sit beside the system's, with Python's.
    incs=$(python3 -m pybind11 --includes 2>/dev/null ||
           python3 -c 'import sysconfig; print("-I" + sysconfig.get_paths()["include"])')
    ext=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    # Every source of the extension, at once.
    pids=() objs=()
    for cpp in python/src/*.cpp; do
      obj="$pydir/$(basename "$cpp" .cpp).o"
      g++ -std=c++20 -O2 -fPIC -fvisibility=hidden $incs -Iinclude -c "$cpp" -o "$obj" &
      pids+=($!) objs+=("$obj")
    done
    built=1
    for pid in "${pids[@]}"; do wait "$pid" || built=0; done
    [ $built = 1 ] &&
      g++ -shared "${objs[@]}" -o "$pydir/zyntax/_zyntax$ext" \
        "$here/lib/libzyntax.so.0.1" -Wl,-rpath,"$here/lib" &&
      echo "== built $pydir/zyntax/_zyntax$ext" &&
      ZYNTAX_PYTHON_DIR="$pydir" ZYNTAX_TEST_DEVICES="${ZYNTAX_TEST_DEVICES:-cpu,cpu:reference,cuda:0}" \
        timeout 400 python3 -m pytest -q -rs python/tests
  } > "$out/python.txt" 2>&1 || status=1
  tail -n 30 "$out/python.txt"
  rm -rf "$pydir"
fi
if [ "$what" = sanitize ]; then
  for tool in memcheck racecheck; do
    timeout 400 compute-sanitizer --tool $tool --print-limit 20 bin/zyntax_unit_tests \
      --gtest_filter='Kernels/GpuParity.*:GpuSchedules.*' > "$out/$tool.txt" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$out/$tool.txt"
  done
fi
if [ "$what" = tune ]; then
  timeout 420 python3 bench/compare_gpu.py --tune --bench bin/zyntax_gpu_bench --results "$out" --performance "$out/performance.md" \
    > "$out/tune.txt" 2>&1 || status=1
  tail -n 20 "$out/tune.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 bench/compare_gpu.py --bench bin/zyntax_gpu_bench --results "$out" --performance "$out/performance.md" \
    > "$out/bench.txt" 2>&1 || status=1
  tail -n 40 "$out/bench.txt"
  # Chains of blocks fused and not, beside their one-block forms, on the GPU.
  python3 bench/compare_fusion.py --zyntax bin/zyntax --devices cuda:0 --out "$out/fusion.md" > "$out/fusion.txt" 2>&1 || status=1
  tail -n 12 "$out/fusion.txt"
fi
exit $status
