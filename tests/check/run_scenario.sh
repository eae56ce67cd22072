#!/usr/bin/env bash
# Runs one 4-rank scenario under `lockstep run`, checks its traces with `lockstep check --format json`
# and compares the findings with what the scenario is about (expect.py).
# usage: run_scenario.sh LOCKSTEP PROGRAM OUTDIR TIMEOUT_S EXPECT_ARGS...
# MPIRUN_FLAGS go to every mpirun; SCENARIO_RUN_FLAGS only to the traced job's; SCENARIO_HTML=1 checks the
# HTML report's post-mortem as well.
set -uo pipefail
lockstep=$1 prog=$2 out=$3 timeout=$4
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086
"$lockstep" run -o "$out/traces" --timeout "$timeout" --grace 1 -- \
  "${MPIRUN:-mpirun}" ${MPIRUN_FLAGS:-} ${SCENARIO_RUN_FLAGS:-} -np "${NP:-4}" "$prog" >"$out.run.log" 2>&1
run_rc=$?
echo "lockstep run exit: $run_rc"
# shellcheck disable=SC2086
"$lockstep" check ${CHECK_FLAGS:-} "$out/traces" --format json -o "$out.json"
rc=$?
echo "lockstep check exit: $rc"
# The path that keeps every call in memory from the start must find exactly what the default streaming
# path found: the same JSON, byte for byte, and the same exit code. So must `check --mpi` with three
# processes, which share the four files out (process 0 analyzes the others' ranks from the models they
# send, and reads their records from them where it looks into a rank). A rank's end state of a job just
# stopped is looked up in /proc and can change from "running" to "killed" between two checks, so a set
# that differs is checked again, back to back, before it counts as a difference.
for attempt in 1 2 3; do
  # shellcheck disable=SC2086
  "$lockstep" check ${CHECK_FLAGS:-} "$out/traces" --format json -o "$out.streamed.json"
  src=$?
  # shellcheck disable=SC2086
  "$lockstep" check ${CHECK_FLAGS:-} --materialize "$out/traces" --format json -o "$out.materialized.json"
  mrc=$?
  # shellcheck disable=SC2086
  "${MPIRUN:-mpirun}" ${MPIRUN_FLAGS:-} -np 3 "$lockstep" check --mpi ${CHECK_FLAGS:-} "$out/traces" --format json \
    -o "$out.mpi.json" >"$out.mpi.log" 2>&1
  prc=$?
  if [ "$mrc" = "$src" ] && [ "$prc" = "$src" ] && cmp -s "$out.streamed.json" "$out.materialized.json" &&
    cmp -s "$out.streamed.json" "$out.mpi.json"; then break; fi
  if [ "$attempt" = 3 ]; then
    echo "FAIL: the checks differ (exit: streaming $src, materializing $mrc, --mpi $prc):"
    diff "$out.streamed.json" "$out.materialized.json" | head -40
    diff "$out.streamed.json" "$out.mpi.json" | head -40
    tail -20 "$out.mpi.log"
    exit 1
  fi
  sleep 1
done
# The text report, printed for the log and checked by expect.py against the JSON's post-mortem.
# shellcheck disable=SC2086
"$lockstep" check ${CHECK_FLAGS:-} "$out/traces" >"$out.txt"
cat "$out.txt"
# SCENARIO_HTML=1: the HTML report too, whose data expect.py reads where it asks about the post-mortem.
html=()
if [ "${SCENARIO_HTML:-0}" = 1 ]; then
  # shellcheck disable=SC2086
  "$lockstep" check ${CHECK_FLAGS:-} "$out/traces" --format html -o "$out.html" >/dev/null
  html=(--html "$out.html")
fi
exec python3 "$here/expect.py" "$out.json" --exit-code "$rc" --run-exit "$run_rc" --schema "$here/../../docs/check-output.schema.json" --text "$out.txt" "${html[@]}" "$@"
