#!/usr/bin/env bash
# Instructions the tracer adds per iteration of each intercepted path (bench/tracer/path_loop.c),
# counted by callgrind inside the loop functions alone: traced loop minus its PMPI_* twin, same
# process. Deterministic, so it compares builds on a loaded machine where times do not.
#   bench/tracer/path_instructions.sh BUILD_DIR [LIB] [N] [PATHS...]
#   LIB: the liblockstep_trace.so to preload (default BUILD_DIR/lib/liblockstep_trace.so);
#   LOCKSTEP_TRACE_STACK from the environment is passed on. Valgrind cannot follow a growing file's
#   chunk mappings over a long run, so the trace is a ring (LOCKSTEP_TRACE_RING, 65536 unless set);
#   the record path differs from a growing file's only in the slot arithmetic.
set -euo pipefail
export LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}
build=${1:?build dir}
lib=$(realpath "${2:-$build/lib/liblockstep_trace.so}")
n=${3:-20000}
shift $(($# < 3 ? $# : 3))
paths=("$@")
[ ${#paths[@]} -gt 0 ] ||
  paths=(allreduce iallreduce_wait iallreduce_test send_recv sendrecv isend_irecv_waitall annotate rt_collective)
loop=$(realpath "$build/bench/tracer/bench_path_loop")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
count() {  # count PATH FUNCTION: instructions in the counted (second) call of FUNCTION
  rm -rf "$dir/t" "$dir"/cg.*
  LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/t valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect="$2" --dump-after="$2" --callgrind-out-file="$dir/cg.%p" \
    "$loop" "$1" "$n" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; exit 1; }
  # One dump per call of FUNCTION: the warm-up's, then the counted loop's (the highest part number).
  for f in "$dir"/cg.*.*; do echo "${f##*.} $(awk '/^summary:/ {print $2}' "$f")"; done | sort -n | tail -1 |
    awk '{print $2}'
}
for p in "${paths[@]}"; do
  t=$(count "$p" "traced_$p")
  b=$(count "$p" "pmpi_$p")
  awk -v p="$p" -v t="$t" -v b="$b" -v n="$n" \
    'BEGIN {printf "%-20s traced %7.1f  baseline %7.1f  added %6.1f instructions per iteration\n",
                   p, t / n, b / n, (t - b) / n}'
done
