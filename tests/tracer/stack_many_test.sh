#!/usr/bin/env bash
# LOCKSTEP_TRACE_STACK past the tracer's frame lists: tests/tracer/mpi_stack_many.c makes more distinct
# stacks than the lists' table holds, on 2 ranks under `lockstep run`. The frames must all read back,
# symbolized offline, through either form of STACK record (stack_many.py), and the traces must validate
# and check IN LOCKSTEP.
#   stack_many_test.sh WORK LOCKSTEP TRACER PYTHON CALLS MPIRUN [FLAGS...] -- PROGRAM
set -euo pipefail
work=$1 lockstep=$2 tracer=$3 python=$4 calls=$5
shift 5
launcher=()
while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
shift
program=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
LOCKSTEP_TRACE_STACK=8 LOCKSTEP_TRACE_STACK_UNWIND=fp \
  "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 2 "$program" "$calls" \
  >"$work/run.out" 2>"$work/run.err" || { cat "$work/run.err" >&2; exit 1; }
"$lockstep" check --validate "$work/traces"
"$lockstep" show "$work/traces" --format json >"$work/traces.json"
"$python" "$here/stack_many.py" "$work/traces.json" 2 "$calls"
