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

if timeout 120 "$zyntax" run "$here/collectives.zynml" >"$out" 2>&1 && grep -q "rank 0 of 1 ok" "$out"; then
  echo "ok: collectives.zynml alone"
else
  cat "$out"
  fail "collectives.zynml alone"
fi
for n in 2 3; do
  if timeout 120 mpirun "${flags[@]}" -np "$n" "$zyntax" run "$here/device_collectives.zynml" >"$out" 2>&1 &&
     [[ $(grep -o "of $n device ok" "$out" | wc -l) -eq $n ]]; then
    echo "ok: device_collectives.zynml on $n ranks"
  else
    cat "$out"
    fail "device_collectives.zynml on $n ranks"
  fi
  if timeout 120 mpirun "${flags[@]}" -np "$n" "$zyntax" run "$here/collectives.zynml" >"$out" 2>&1 &&
     [[ $(grep -o "of $n ok" "$out" | wc -l) -eq $n ]]; then
    echo "ok: collectives.zynml on $n ranks"
  else
    cat "$out"
    fail "collectives.zynml on $n ranks"
  fi
done
if timeout 120 "$zyntax" run "$here/parallel_ranks.zynml" >"$out" 2>&1 && grep -q "rank 0 of 1 parallel ok" "$out"; then
  echo "ok: parallel_ranks.zynml alone"
else
  cat "$out"
  fail "parallel_ranks.zynml alone"
fi
if PYTHONPATH=$pythonpath timeout 120 /usr/bin/python3 "$here/mpi_dist_check.py" >"$out" 2>&1 && grep -q "python rank 0 of 1 ok" "$out"; then
  echo "ok: zyntax.dist alone"
else
  cat "$out"
  fail "zyntax.dist alone"
fi
for n in 2 3; do
  if timeout 120 mpirun "${flags[@]}" -np "$n" "$zyntax" run "$here/parallel_ranks.zynml" >"$out" 2>&1 &&
     [[ $(grep -o "of $n parallel ok" "$out" | wc -l) -eq $n ]]; then
    echo "ok: parallel_ranks.zynml on $n ranks"
  else
    cat "$out"
    fail "parallel_ranks.zynml on $n ranks"
  fi
  if timeout 120 mpirun "${flags[@]}" -np "$n" -x PYTHONPATH="$pythonpath" /usr/bin/python3 "$here/mpi_dist_check.py" >"$out" 2>&1 &&
     [[ $(grep -o "of $n ok" "$out" | wc -l) -eq $n ]]; then
    echo "ok: zyntax.dist on $n ranks"
  else
    cat "$out"
    fail "zyntax.dist on $n ranks"
  fi
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
