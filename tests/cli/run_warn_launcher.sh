#!/usr/bin/env bash
# `lockstep run` with an `mpirun` that is not Open MPI's (here one that answers --version as MPICH's
# Hydra) cannot pass the tracer's variables with -x: it says so in one line and runs the command as given.
set -euo pipefail
lockstep="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/standin_mpirun.sh"
standin_mpirun "$tmp" "HYDRA build details:"
out=$("$lockstep" run -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1)
echo "$out"
grep -q "warning: $tmp/mpirun is not Open MPI's launcher: LD_PRELOAD and LOCKSTEP_\* are not passed with -x" <<<"$out" ||
  { echo "FAIL: no warning about the launcher"; exit 1; }
grep -q "launcher args: -np 2 true$" <<<"$out" || { echo "FAIL: the command was not run as given"; exit 1; }
# Open MPI's launcher draws no such warning.
standin_mpirun "$tmp"
out=$("$lockstep" run --clean -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1)
echo "$out"
if grep -q "warning" <<<"$out"; then echo "FAIL: a warning for Open MPI's launcher"; exit 1; fi
echo "PASS"
