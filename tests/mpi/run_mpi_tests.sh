#!/bin/bash
# Runs the MPI tests of src/dist: test_collectives alone (a process not
# started by mpirun is rank 0 of 1) and under mpirun with 1, 2 and 3 ranks,
# then fault_rank_exits with 2 and 3 ranks, which must end non-zero, soon,
# with the DistError in its output.
#
#   tests/mpi/run_mpi_tests.sh BIN_DIR
#
# BIN_DIR holds test_collectives and fault_rank_exits. MPIRUN names the
# launcher (default mpirun, Open MPI's); MPIRUN_FLAGS replaces the default
# flags (--oversubscribe, and --allow-run-as-root when run as root).
set -uo pipefail

bin=${1:?usage: run_mpi_tests.sh BIN_DIR}
mpirun=${MPIRUN:-mpirun}
if [[ -n ${MPIRUN_FLAGS+x} ]]; then
  read -r -a flags <<<"$MPIRUN_FLAGS"
else
  flags=(--oversubscribe)
  [[ $EUID -eq 0 ]] && flags+=(--allow-run-as-root)
fi
# A test that throws instead of finishing gets a short timeout, well inside
# the 60 s the script gives each run.
export ZYNTAX_DIST_TIMEOUT_S=${ZYNTAX_DIST_TIMEOUT_S:-20}

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# test_collectives: without mpirun, then with 1, 2 and 3 ranks.
echo "== test_collectives without mpirun"
if ! timeout 60 "$bin/test_collectives" >"$log/alone.txt" 2>&1; then
  tail -n 40 "$log/alone.txt"
  fail "test_collectives without mpirun"
fi
for n in 1 2 3; do
  echo "== test_collectives with $n ranks"
  if ! timeout 60 "$mpirun" "${flags[@]}" -np "$n" "$bin/test_collectives" >"$log/np$n.txt" 2>&1; then
    tail -n 60 "$log/np$n.txt"
    fail "test_collectives with $n ranks"
  fi
done

# fault_rank_exits: rank 1 leaves; the others time out after 2 s, print the
# error and exit 1, and mpirun ends the job non-zero. 124 is timeout's own
# status: the job hung.
for n in 2 3; do
  echo "== fault_rank_exits with $n ranks"
  start=$(date +%s)
  timeout 60 "$mpirun" "${flags[@]}" -np "$n" "$bin/fault_rank_exits" >"$log/fault$n.txt" 2>&1
  status=$?
  took=$(($(date +%s) - start))
  want="rank 0 of $n: all_reduce of f32[1000] (op sum): no answer from the other ranks within 2 s; a rank may have exited or be in another collective"
  if [[ $status -eq 0 ]]; then
    fail "fault_rank_exits with $n ranks ended with status 0"
  elif [[ $status -eq 124 ]]; then
    fail "fault_rank_exits with $n ranks hung (killed after 60 s)"
  elif ! grep -qF "$want" "$log/fault$n.txt"; then
    fail "fault_rank_exits with $n ranks did not print: $want"
  elif [[ $took -gt 20 ]]; then
    fail "fault_rank_exits with $n ranks took $took s (a 2 s timeout)"
  else
    echo "ok: status $status after $took s"
  fi
  if [[ $status -eq 0 || $status -eq 124 ]] || ! grep -qF "$want" "$log/fault$n.txt"; then
    cat "$log/fault$n.txt"
  fi
done

if [[ $failures -gt 0 ]]; then
  echo "$failures MPI test runs failed"
  exit 1
fi
echo "all MPI test runs passed"
