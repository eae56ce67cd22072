#!/usr/bin/env bash
# One rank submits a different tensor name: the stall inspector must warn with the missing ranks, then
# abort every rank with exit status 3 instead of hanging.
# usage: stall.sh PROGRAM MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
prog=$1 mpirun=$2
shift 2
export LOCKSTEP_RT_STALL_WARN=1 LOCKSTEP_RT_STALL_ABORT=4 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(timeout -k 5 45 "$mpirun" "$@" -x LOCKSTEP_RT_STALL_WARN -x LOCKSTEP_RT_STALL_ABORT -np 4 "$prog" stall 2>&1)
rc=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" = 3 ] || fail "exit status $rc, want 3"
grep -q "stall warning: 2 tensor(s) submitted by some ranks only" <<<"$out" || fail "no stall warning"
grep -q "allreduce 'stall/grad': submitted by ranks 0,2,3, missing on rank 1" <<<"$out" || fail "missing ranks not named"
grep -q "allreduce 'stall/other': submitted by rank 1, missing on ranks 0,2,3" <<<"$out" || fail "other side not named"
grep -q "unexpectedly returned" <<<"$out" && fail "a wait returned instead of the job aborting"
for r in 0 2 3; do
  grep -qE "lockstep-rt: rank $r: aborting( every rank)?: stalled for 4 s .*'stall/grad' was never submitted by rank 1" <<<"$out" ||
    fail "rank $r did not print the abort reason"
done
echo "stall test ok"
