#!/usr/bin/env bash
# Sets everything up, then runs every test: unit tests, program tests against
# NumPy, error tests; then the same again built with AddressSanitizer and
# UndefinedBehaviorSanitizer; then the async stress test built with
# ThreadSanitizer; then a short fuzzing run of the parser and checker and of
# the .npy reader.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage says when it starts, so a slow one shows in the log.
stage() { echo "== $1 ($(date -u +%H:%M:%S), ${SECONDS}s in)"; }
scripts/setup.sh
JOBS=$(nproc)

stage "tests"
ctest --test-dir build --output-on-failure -j"$JOBS"

stage "tests with AddressSanitizer and UndefinedBehaviorSanitizer"
# Built with clang, which compiles the instrumented tree in half GCC's time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DZYNTAX_SANITIZE=ON \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19 >/dev/null
cmake --build build-asan -j"$JOBS"
# What the Vulkan driver and layers keep to the end of the process is theirs
# (tests/sanitizers/lsan.supp). The tests that check schedules' numbers on
# large shapes through the reference executor, the PTX corpus and the
# program suite on the reference executor and on Vulkan, the recorded GPU
# plans, flash attention's tile schedules, the WebGPU suites (run in node) and
# the differential fuzzer, the fused and compiled-host reruns of the program suite,
# tiny_lm's 300 training steps (its kernels run here in tiny_lm_gradients)
# run once, above: under the sanitizers they would mostly measure the
# reference executor.
ASAN_SKIP='^Kernels/MslHarness\.|^(programs_msl|programs_rocm|mpi_collectives|mpi_programs|tiny_lm_distributed|tiny_lm_training|programs_reference|programs_vulkan|vulkan_staging|vulkan_minimal_device|ptx_corpus|webgpu_parity|webgpu_module|webgpu_page|fuzz_differential|programs_fusion_off|programs_host_compiled|fusion_random_blocks)$|^Forms/Schedule(Matmul|Conv)\.|^ScheduleGpuMatmul\.WithinRounding|^ScheduleGpuMma\.TheReferences|^ScheduleGpuWgmma\.TheReferences|^ScheduleConvApplies\.ToTheWeightGradient|^GpuPlanGolden\.|^ScheduleGpuTiles\.(EveryNestOfFlashAttentionIsSharedOut|FlashAttentionMatchesTheReferenceAtOddSizes|AttentionProductsOverBfloatBlocksRunOnMatrixUnits|MatrixUnitTilesAreLaidOutForThemAndAssemble)$'
LSAN_OPTIONS=suppressions="$PWD/tests/sanitizers/lsan.supp" \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" -E "$ASAN_SKIP"

stage "async stress test with ThreadSanitizer"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZYNTAX_TSAN=ON \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19 >/dev/null
cmake --build build-tsan -j"$JOBS" --target zyntax_stress
ZYNTAX_CACHE_DIR="$PWD/build-tsan/kernel-cache" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  build-tsan/tests/zyntax_stress 4 100

stage "fuzzing (short run)"
scripts/fuzz.sh
stage "all tests passed"
