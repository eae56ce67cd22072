#!/usr/bin/env bash
# `lockstep run` with an `mpirun` that is not Open MPI's (here one that answers --version as MPICH's
# Hydra) cannot pass the tracer's variables with -x: it says so in one line and runs the command as given.
set -euo pipefail
lockstep="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/mpirun" <<'SH'
#!/bin/sh
if [ "$1" = "--version" ]; then echo "HYDRA build details:"; exit 0; fi
echo "launcher args: $*"
SH
chmod +x "$tmp/mpirun"
out=$("$lockstep" run -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1)
echo "$out"
grep -q "warning: $tmp/mpirun is not Open MPI's launcher: LD_PRELOAD and LOCKSTEP_\* are not passed with -x" <<<"$out" ||
  { echo "FAIL: no warning about the launcher"; exit 1; }
grep -q "launcher args: -np 2 true$" <<<"$out" || { echo "FAIL: the command was not run as given"; exit 1; }
# Open MPI's launcher draws no such warning.
sed -i 's/HYDRA build details:/mpirun (Open MPI) 4.1.4/' "$tmp/mpirun"
out=$("$lockstep" run --clean -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1)
echo "$out"
if grep -q "warning" <<<"$out"; then echo "FAIL: a warning for Open MPI's launcher"; exit 1; fi
echo "PASS"
