#!/bin/bash
# Programs over ranks: tests/mpi/collectives.zynml and parallel_ranks.zynml
# (ZynML's collectives and `@parallel(..., ranks)`), and mpi_dist_check.py
# (zyntax.dist), alone (rank 0 of 1) and under mpirun with 2 and 3 ranks;
# tests/mpi/mismatch.zynml, whose ranks disagree on a tensor's shape, must
# fail on every rank with an error naming the shapes, and mpirun must end
# non-zero.
#
#   tests/mpi/run_mpi_programs.sh ZYNTAX PYTHON_PACKAGE_DIR
set -uo pipefail
zyntax=${1:?usage: run_mpi_programs.sh ZYNTAX PYTHON_PACKAGE_DIR}
pythonpath=${2:?usage: run_mpi_programs.sh ZYNTAX PYTHON_PACKAGE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
flags=(--oversubscribe)
[[ $EUID -eq 0 ]] && flags+=(--allow-run-as-root)
export ZYNTAX_DIST_TIMEOUT_S=${ZYNTAX_DIST_TIMEOUT_S:-20}
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# expect_ranks NAME RANKS WORDS COMMAND...: COMMAND (under mpirun with RANKS
# ranks; alone for 1) succeeds and every rank prints "of RANKS WORDS".
# Counted as matches, not lines: mpirun may interleave the ranks' lines.
expect_ranks() {
  local name=$1 n=$2 words=$3
  shift 3
  local run=("$@")
  [[ $n -gt 1 ]] && run=(mpirun "${flags[@]}" -np "$n" -x PYTHONPATH "$@")
  if PYTHONPATH=$pythonpath timeout -k 10 120 "${run[@]}" >"$out" 2>&1 && [[ $(grep -o "of $n $words" "$out" | wc -l) -eq $n ]]; then
    echo "ok: $name on $n rank(s)"
  else
    cat "$out"
    fail "$name on $n rank(s)"
  fi
}

for n in 1 2 3; do
  expect_ranks collectives.zynml "$n" ok "$zyntax" run "$here/collectives.zynml"
  expect_ranks parallel_ranks.zynml "$n" "parallel ok" "$zyntax" run "$here/parallel_ranks.zynml"
  expect_ranks zyntax.dist "$n" ok /usr/bin/python3 "$here/mpi_dist_check.py"
  [[ $n -gt 1 ]] && expect_ranks device_collectives.zynml "$n" "device ok" "$zyntax" run "$here/device_collectives.zynml"
done
timeout 120 mpirun "${flags[@]}" -np 2 "$zyntax" run "$here/mismatch.zynml" >"$out" 2>&1
status=$?
if [[ $status -ne 0 && $status -ne 124 ]] && grep -q "mismatch.zynml:3:.*error: .*rank 0 has f32\[4\], rank 1 has f32\[5\]" "$out"; then
  echo "ok: mismatched shapes are an error (status $status)"
else
  cat "$out"
  fail "mismatch.zynml on 2 ranks: status $status"
fi
if [[ $failures -gt 0 ]]; then
  echo "$failures MPI program runs failed"
  exit 1
fi
echo "all MPI program runs passed"
