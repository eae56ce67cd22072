#!/usr/bin/env bash
# Runs one example variant on 4 ranks and checks its exit status and one line of its output: the buggy
# variants must stop with an error that names the rank at fault, the fixed ones must finish.
# usage: example.sh WANT_RC PATTERN PROGRAM VARIANT MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
want_rc=$1 pattern=$2 prog=$3 variant=$4 mpirun=$5
shift 5
export LOCKSTEP_RT_STALL_WARN=1 LOCKSTEP_RT_STALL_ABORT=3 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(timeout -k 5 45 "$mpirun" "$@" -x LOCKSTEP_RT_STALL_WARN -x LOCKSTEP_RT_STALL_ABORT -np 4 "$prog" --variant="$variant" 2>&1)
rc=$?
echo "$out"
[ "$rc" = "$want_rc" ] || { echo "FAIL: exit status $rc, want $want_rc"; exit 1; }
grep -qE "$pattern" <<<"$out" || { echo "FAIL: no line matches '$pattern'"; exit 1; }
echo "example test ok"
