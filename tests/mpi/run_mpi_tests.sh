#!/bin/bash
# Runs the MPI tests of src/dist: test_collectives alone (a process not
# started by mpirun is rank 0 of 1) and under mpirun with 1, 2 and 3 ranks,
# then fault_rank_exits with 2 ranks, which must end non-zero, soon, with the
# DistError in its output.
#
# The fault runs with 2 ranks only: with 3 or more, Open MPI 4.1's mpirun
# itself at times hangs (in PMIx_server_finalize) or crashes while it ends a
# job in which one rank finished normally and another then exited non-zero,
# whatever the ranks run (plain MPI programs do the same).
#
#   tests/mpi/run_mpi_tests.sh BIN_DIR
#
# BIN_DIR holds test_collectives, api_collectives and fault_rank_exits. MPIRUN names the
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
if ! timeout -k 10 60 "$bin/test_collectives" >"$log/alone.txt" 2>&1; then
  tail -n 40 "$log/alone.txt"
  fail "test_collectives without mpirun"
fi
for n in 1 2 3; do
  echo "== test_collectives with $n ranks"
  if ! timeout -k 10 60 "$mpirun" "${flags[@]}" -np "$n" "$bin/test_collectives" >"$log/np$n.txt" 2>&1; then
    tail -n 60 "$log/np$n.txt"
    fail "test_collectives with $n ranks"
  fi
done

# api_collectives (the C++ API's Communicator and GradientAverager): alone
# and with 2 and 3 ranks, one "ok" line a rank.
for n in 0 2 3; do
  if [[ $n -eq 0 ]]; then
    echo "== api_collectives without mpirun"
    timeout -k 10 60 "$bin/api_collectives" >"$log/api$n.txt" 2>&1
    want=1
  else
    echo "== api_collectives with $n ranks"
    timeout -k 10 60 "$mpirun" "${flags[@]}" -np "$n" "$bin/api_collectives" >"$log/api$n.txt" 2>&1
    want=$n
  fi
  status=$?
  if [[ $status -ne 0 || $(grep -o "api rank [0-9]* of [0-9]* ok" "$log/api$n.txt" | wc -l) -ne $want ]]; then
    tail -n 40 "$log/api$n.txt"
    fail "api_collectives with $n ranks (status $status)"
  fi
done

# fault_rank_exits: rank 1 leaves; rank 0 times out after 2 s, prints the
# error and exits 1, and mpirun ends the job non-zero. 124 and 137 are
# timeout's own statuses: the job hung.
echo "== fault_rank_exits with 2 ranks"
failures_before=$failures
start=$(date +%s)
timeout -k 10 60 "$mpirun" "${flags[@]}" -np 2 "$bin/fault_rank_exits" >"$log/fault.txt" 2>&1
status=$?
took=$(($(date +%s) - start))
want="rank 0 of 2: all_reduce of f32[1000] (op sum): no answer from the other ranks within 2 s;"
want+=" a rank may have exited or be in another collective"
if [[ $status -eq 0 ]]; then
  fail "fault_rank_exits ended with status 0"
elif [[ $status -eq 124 || $status -eq 137 ]]; then
  fail "fault_rank_exits hung (killed after 60 s)"
elif ! grep -qF "$want" "$log/fault.txt"; then
  fail "fault_rank_exits did not print: $want"
elif [[ $took -gt 20 ]]; then
  fail "fault_rank_exits took $took s (a 2 s timeout)"
else
  echo "ok: status $status after $took s"
fi
if [[ $failures -gt $failures_before ]]; then
  cat "$log/fault.txt"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures MPI test runs failed"
  exit 1
fi
echo "all MPI test runs passed"
