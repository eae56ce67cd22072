#!/usr/bin/env bash
# `lockstep run --stall` prints the checker's hang diagnosis live (the run seam), and the verdict at
# the end: the deadlock scenario must be named as a deadlock_cycle while the job still hangs.
# usage: run_stall.sh LOCKSTEP PROGRAM OUTDIR
set -uo pipefail
lockstep=$1 prog=$2 out=$3
rm -rf "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086
"$lockstep" run -o "$out" --stall 2 --timeout 6 --grace 1 -- "${MPIRUN:-mpirun}" ${MPIRUN_FLAGS:-} -np 4 "$prog" >"$out.log" 2>&1
cat "$out.log"
live=$(sed -n '/no rank has progressed/,/timeout after/p' "$out.log")
grep -q "blocked in MPI_Allreduce #0" <<<"$live" || { echo "FAIL: no live per-rank diagnosis"; exit 1; }
grep -q "deadlock_cycle: deadlock: ranks 0,1 wait for each other" <<<"$live" || { echo "FAIL: no live deadlock"; exit 1; }
grep -q "^lockstep: 4 ranks, .*2 findings: deadlock" "$out.log" || { echo "FAIL: no check verdict after the job"; exit 1; }
grep -q "hang: the job hung" "$out.log" || { echo "FAIL: the job hung and no hang finding says so"; exit 1; }
echo ok
