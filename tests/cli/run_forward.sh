#!/usr/bin/env bash
# `lockstep run` under an Open MPI launcher passes every LOCKSTEP_* variable that is set to the ranks
# with -x (remote ranks do not inherit the launcher's environment). A stand-in `mpirun` that answers
# --version like Open MPI's prints the arguments it was given.
set -euo pipefail
lockstep="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/standin_mpirun.sh"
standin_mpirun "$tmp"
out=$(LOCKSTEP_TRACE_P2P=0 LOCKSTEP_TRACE_CUPTI=1 "$lockstep" run -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1 || true)
echo "$out"
for var in LD_PRELOAD LOCKSTEP_TRACE_DIR LOCKSTEP_JOB_ID LOCKSTEP_TRACE_P2P LOCKSTEP_TRACE_CUPTI; do
  grep -q -- "-x $var" <<<"$out" || { echo "FAIL: -x $var not passed to the launcher"; exit 1; }
done
echo "PASS"
