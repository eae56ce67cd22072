#!/usr/bin/env bash
# Calls made before the tracer's own constructor ran: tracer_early_main links a library whose
# constructor starts MPI and communicates (early_init.c), and the dynamic loader runs that constructor
# before a preloaded library's. Two ranks under `lockstep run`: the program's output and exit code must
# be the same as without the tracer, and each trace must hold the library's MPI_Init, its
# MPI_Sendrecv's two records and its MPI_Barrier, then main's STEPS MPI_Allreduce; `lockstep check`
# must find the ranks in lockstep.
#   tests/tracer/early_calls.sh LOCKSTEP LIB PROGRAM MPIRUN [MPIRUN FLAGS...]
set -euo pipefail
lockstep=$1 lib=$2 prog=$3
shift 3
mpirun=("$@")
steps=25
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "early_calls: $*" >&2
  exit 1
}

"${mpirun[@]}" -np 2 "$prog" "$steps" >"$work/plain.out" 2>"$work/plain.err" || fail "untraced: $(cat "$work/plain.err")"
"$lockstep" run -o "$work/traces" --tracer "$lib" -- "${mpirun[@]}" -np 2 "$prog" "$steps" \
  >"$work/traced.out" 2>"$work/traced.err" || fail "traced: $(cat "$work/traced.err")"
sort "$work/plain.out" >"$work/plain.sorted"
sort "$work/traced.out" >"$work/traced.sorted"
cmp -s "$work/plain.sorted" "$work/traced.sorted" || fail "output differs: $(diff "$work/plain.sorted" "$work/traced.sorted")"

for rank in 0 1; do
  files=("$work/traces/rank-$rank".*.lstrace)
  [[ -f ${files[0]} ]] || fail "no trace names rank $rank: $(ls "$work/traces")"
  "$lockstep" show "${files[0]}" >"$work/show.$rank"
  count() { grep -cE "$1" "$work/show.$rank" || true; }
  # The library's calls, each at its line in early_init.c; main's at early_main.c.
  [[ $(count " marker +MPI_Init .*early_init\.c:") == 1 ]] || fail "rank $rank: MPI_Init from the constructor is not recorded"
  [[ $(count "MPI_(Send|Recv) .*early_init\.c:") == 2 ]] || fail "rank $rank: the constructor's MPI_Sendrecv is not a send and a receive"
  [[ $(count "MPI_Barrier .*early_init\.c:") == 1 ]] || fail "rank $rank: the constructor's MPI_Barrier is not recorded"
  [[ $(count "MPI_Allreduce .*early_main\.c:") == "$steps" ]] || fail "rank $rank: not $steps MPI_Allreduce from main"
done
out=$("$lockstep" check "$work/traces") || fail "check: $out"
[[ $out == "lockstep: 2 ranks, "*": IN LOCKSTEP"* ]] || fail "check: $out"
