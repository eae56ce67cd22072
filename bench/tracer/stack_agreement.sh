#!/usr/bin/env bash
# Whether LOCKSTEP_TRACE_STACK's default unwinding gives a real job the DWARF unwinder's stacks: the job
# runs twice under `lockstep run`, with LOCKSTEP_TRACE_STACK_UNWIND=auto (frame pointers, unwind rules,
# the DWARF unwinder where neither holds) and =dwarf, and stack_agreement.py compares every stack. Each
# process's LOCKSTEP_TRACE_STACK_STATS line shows how its stacks were made. The job must make the same
# calls from the same places in both runs (a deterministic program).
#   bench/tracer/stack_agreement.sh BUILD_DIR FRAMES WORK_DIR -- LAUNCHER...
#   e.g. bench/tracer/stack_agreement.sh build 8 /tmp/sa -- mpirun -np 4 lmp -in in.melt -log none
set -euo pipefail
build=$(realpath "${1:?build dir}")
frames=${2:?frames}
work=${3:?work dir}
shift 3
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || { echo "usage: stack_agreement.sh BUILD_DIR FRAMES WORK_DIR -- LAUNCHER..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
for unwind in auto dwarf; do
  rm -rf "$work/$unwind"
  LOCKSTEP_TRACE_STACK=$frames LOCKSTEP_TRACE_STACK_UNWIND=$unwind LOCKSTEP_TRACE_STACK_STATS=1 \
    "$build/bin/lockstep" run -o "$work/$unwind" -- "$@" >"$work/$unwind.out" 2>"$work/$unwind.err" || {
    cat "$work/$unwind.err" >&2
    exit 1
  }
  echo "$unwind:"
  grep -E '^lockstep: pid [0-9]+: ' "$work/$unwind.err" | sed 's/^/  /' || true
  "$build/bin/lockstep" show "$work/$unwind" --no-symbolize --format json >"$work/$unwind.json"
done
python3 "$here/stack_agreement.py" "$work/auto.json" "$work/dwarf.json"
