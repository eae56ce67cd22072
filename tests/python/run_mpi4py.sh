#!/usr/bin/env bash
# One mpi4py job under `lockstep run`, then what `lockstep check` and `lockstep show` say about it.
#   run_mpi4py.sh MODE WORK LOCKSTEP TRACER PYTHON SCRIPT MPIRUN [MPIRUN FLAGS...]
#   MODE clean: the job and check exit 0; show names the Python lines of both allreduce calls and of
#               the Sendrecv
#   MODE skip:  rank 1 skips a collective at a Python line: check exits 1 with missing_collective,
#               rank 1 and that line (file:line of the script)
#   MODE native: the clean job with LOCKSTEP_TRACE_PYTHON=0: exit 0 and no Python line in the trace
#   MODE skip_pickled: the same through comm.allreduce: the verdict names rank 1 and the Python line,
#               every finding blames rank 1 only (not rank 0, whose receive from rank 1 never
#               completes, nor the rank that went furthest), the hang analysis points at rank 1, and no
#               record is left at an mpi4py address
# Expected lines are found in the script by their "lockstep-test:" comments, never written here.
set -uo pipefail
mode=$1 work=$2 lockstep=$3 tracer=$4 python=$5 script=$6
shift 6
. "$(dirname "$0")/common.sh"
mpi4py_job_setup "$python" "$work"
name=$(basename "$script")
line_of() { grep -n "lockstep-test: $1\$" "$script" | cut -d: -f1; }
fail() {
  echo "FAIL: $*"
  exit 1
}

# Three ranks for the skips: with two, a rank that skips is a tie the checker does not blame.
# skip_pickled4: the same job on four ranks (rank 0 receives from three senders in turn).
np=2
[[ $mode == skip* ]] && np=3
[[ $mode == skip_pickled4 ]] && np=4 mode=skip_pickled
[[ $mode == native ]] && export LOCKSTEP_TRACE_PYTHON=0
"$lockstep" run -o "$work/traces" --tracer "$tracer" --timeout 60 -- "$@" -np $np "$python" "$script" \
  >"$work/run.out" 2>&1
run_rc=$?
"$lockstep" check "$work/traces" >"$work/check.out" 2>&1
check_rc=$?
"$lockstep" show "$work/traces" >"$work/show.out" 2>&1
cat "$work/check.out"

case "$mode" in
  clean)
    [[ $run_rc == 0 ]] || { cat "$work/run.out"; fail "the job exited $run_rc"; }
    [[ $check_rc == 0 ]] || fail "check exited $check_rc on a clean job"
    for what in allreduce pickled sendrecv; do
      want="$name:$(line_of $what) in step()"
      grep -qF "$want" "$work/show.out" || { cat "$work/show.out"; fail "show does not name $want"; }
    done
    # Every collective and point-to-point record of the job was made from Python code.
    if grep " collective " "$work/show.out" | grep -q "MPI.cpython"; then
      grep " collective " "$work/show.out" | grep "MPI.cpython"
      fail "a collective called from Python is shown at the extension module, not the Python line"
    fi
    ;;
  native)
    [[ $run_rc == 0 ]] || { cat "$work/run.out"; fail "the job exited $run_rc"; }
    [[ $check_rc == 0 ]] || fail "check exited $check_rc on a clean job"
    grep -q " collective " "$work/show.out" || fail "nothing was traced"
    if grep -qF "$name:" "$work/show.out"; then
      grep -F "$name:" "$work/show.out" | head -3
      fail "LOCKSTEP_TRACE_PYTHON=0 still records Python call sites"
    fi
    ;;
  skip)
    [[ $check_rc == 1 ]] || fail "check exited $check_rc, want 1 (findings)"
    want="$name:$(line_of allreduce)"
    grep -q "missing_collective" "$work/check.out" || fail "no missing_collective finding"
    head -1 "$work/check.out" | grep -q "rank 1 " || fail "the verdict does not name rank 1"
    head -1 "$work/check.out" | grep -qF "$want" || fail "the verdict does not name $want"
    ;;
  skip_pickled)
    # mpi4py's comm.allreduce: every record of the skipped call, point-to-point and broadcast on the
    # hidden communicator, carries the Python line, and the hang analysis points at rank 1.
    [[ $check_rc == 1 ]] || fail "check exited $check_rc, want 1 (findings)"
    want="$name:$(line_of allreduce)"
    head -1 "$work/check.out" | grep -qF "$want" || fail "the verdict does not name $want"
    head -1 "$work/check.out" | grep -q "rank 1 " || fail "the verdict does not name rank 1"
    grep -q "look at rank 1:" "$work/check.out" || fail "the hang analysis does not point at rank 1"
    "$lockstep" check --format json -o "$work/check.json" "$work/traces" >/dev/null 2>&1
    "$python" - "$work/check.json" <<'PY' || fail "a finding blames a rank other than rank 1"
import json
import sys
findings = json.load(open(sys.argv[1]))["findings"]
print("culprits:", [(f["kind"], f["culprits"]) for f in findings])
sys.exit(0 if findings and all(f["culprits"] == [1] for f in findings) else 1)
PY
    if grep " collective " "$work/show.out" | grep -q "MPI.cpython"; then
      fail "a record of the pickled allreduce is shown at the extension module, not the Python line"
    fi
    ;;
  *)
    fail "unknown mode $mode"
    ;;
esac
echo "ok: $mode $name"
