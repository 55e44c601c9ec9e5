#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and fuzzes them, starting from the
# example programs.
#   scripts/fuzz.sh            reproducible: a fixed seed and number of runs
#                              per target (FUZZ_SEED, FUZZ_RUNS; at most
#                              FUZZ_SECONDS), as the tests run it; the
#                              checker's runs are shared by one worker a core
#   FUZZ_RUNS=-1 FUZZ_SECONDS=600 scripts/fuzz.sh
#                              reproducible, for ten minutes per target
#   scripts/fuzz.sh 600        exploratory: 600 seconds per target, a new seed each time
# Every input that once crashed (fuzz/crashes) runs first and seeds the
# corpus. A crash leaves its input in build-fuzz/crash-* (and the failing
# worker's log, build-fuzz/fuzz_check-W.log, says which seed found it); rerun it with
# build-fuzz/fuzz/fuzz_check build-fuzz/crash-..., and once fixed add it to
# fuzz/crashes (tests/cli/test_fuzz_crashes.py runs them all).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ge 1 ]]; then
  LIMITS=(-max_total_time="$1")
else
  LIMITS=(-seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-30000}" -max_total_time="${FUZZ_SECONDS:-900}")
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZYNTAX_FUZZ=ON -DZYNTAX_TESTS=OFF \
  -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_check fuzz_npy
rm -rf build-fuzz/corpus-check* build-fuzz/corpus-npy*
mkdir -p build-fuzz/corpus-check build-fuzz/corpus-npy
cp examples/*.zynml fuzz/crashes/*.zynml build-fuzz/corpus-check/ 2>/dev/null || true
build-fuzz/fuzz/fuzz_check -rss_limit_mb=4096 fuzz/crashes/*.zynml >build-fuzz/fuzz_crashes.log 2>&1 || {
  tail -60 build-fuzz/fuzz_crashes.log; exit 1; }
find tests/programs tests/errors -name '*.zynml' -exec cp {} build-fuzz/corpus-check/ \; 2>/dev/null || true
cp tests/unit/data/*.npy tests/unit/data/*.npz build-fuzz/corpus-npy/ 2>/dev/null || true

# The checker's fuzzing on every core: worker w has its own seed (FUZZ_SEED
# + w), its share of the runs and its own corpus of what it finds, beside
# the common starting corpus, so that each is reproducible. The .npy
# reader's short run goes alongside.
WORKERS=$(nproc)
check_limits=("${LIMITS[@]}")
if [[ $# -eq 0 ]]; then
  runs=${FUZZ_RUNS:-30000}
  (( runs > 0 )) && runs=$(( (runs + WORKERS - 1) / WORKERS ))
  check_limits=(-runs="$runs" -max_total_time="${FUZZ_SECONDS:-900}")
fi
pids=()
logs=()
for ((w = 0; w < WORKERS; w++)); do
  mkdir -p build-fuzz/corpus-check-$w
  seed=()
  [[ $# -eq 0 ]] && seed=(-seed=$(( ${FUZZ_SEED:-1} + w )))
  build-fuzz/fuzz/fuzz_check -artifact_prefix=build-fuzz/ "${seed[@]}" "${check_limits[@]}" -max_len=65536 -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -dict=fuzz/dict build-fuzz/corpus-check-$w build-fuzz/corpus-check \
    >/dev/null 2>build-fuzz/fuzz_check-$w.log &
  pids+=($!)
  logs+=(build-fuzz/fuzz_check-$w.log)
done
build-fuzz/fuzz/fuzz_npy -artifact_prefix=build-fuzz/ "${LIMITS[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
  -print_final_stats=1 build-fuzz/corpus-npy >/dev/null 2>build-fuzz/fuzz_npy.log &
pids+=($!)
logs+=(build-fuzz/fuzz_npy.log)
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "fuzzing failed: ${logs[$i]}"
    tail -60 "${logs[$i]}"
    failed=1
  fi
done
for log in "${logs[@]}"; do grep -h "^Done" "$log" | sed "s|^|$(basename "$log" .log): |"; done
exit $failed
