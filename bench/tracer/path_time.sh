#!/usr/bin/env bash
# Added CPU time per iteration of each intercepted path (bench/tracer/path_loop.c) for two tracer
# libraries, alternating processes: each process times ROUNDS alternating rounds of its traced loop and
# its PMPI_* twin (thread CPU time) and gives the fastest traced round minus the fastest twin; per
# library, the median of those over PAIRS processes, and the median of the rounds' own differences.
# Fastest rounds rather than medians, so that a machine shared with other work still gives figures.
#   bench/tracer/path_time.sh BUILD_DIR BASE_LIB NEW_LIB [N] [ROUNDS] [PAIRS] [PATHS...]
#   LIB: a liblockstep_trace.so to preload; the trace is a ring (LOCKSTEP_TRACE_RING, 65536 unless set).
#   The path `floor` (the default list's first) is the least a record takes on this machine, written
#   by the loop itself (path_loop.c), with either library preloaded: the paths' yardstick in the same run.
set -euo pipefail
export LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}
build=${1:?build dir}
base=$(realpath "${2:?base library}")
new=$(realpath "${3:?new library}")
n=${4:-200000}
rounds=${5:-15}
pairs=${6:-5}
shift $(($# < 6 ? $# : 6))
paths=("$@")
[ ${#paths[@]} -gt 0 ] ||
  paths=(floor allreduce iallreduce_wait iallreduce_test send_recv sendrecv isend_irecv_waitall)
loop=$(realpath "$build/bench/tracer/bench_path_loop")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for p in "${paths[@]}"; do
  : >"$dir/base" && : >"$dir/new"
  for i in $(seq "$pairs"); do
    for lib in base new; do
      l=$base
      [ "$lib" = new ] && l=$new
      rm -rf "$dir/t"
      LD_PRELOAD=$l LOCKSTEP_TRACE_DIR=$dir/t "$loop" "$p" "$n" "$rounds" >>"$dir/$lib"
    done
  done
  b=$(cut -d' ' -f1 "$dir/base" | median) bm=$(cut -d' ' -f2 "$dir/base" | median)
  w=$(cut -d' ' -f1 "$dir/new" | median) wm=$(cut -d' ' -f2 "$dir/new" | median)
  awk -v p="$p" -v b="$b" -v bm="$bm" -v w="$w" -v wm="$wm" 'BEGIN {
    printf "%-20s base %6.1f ns (rounds %6.1f)  new %6.1f ns (rounds %6.1f)  new/base %.2f\n", p, b, bm, w, wm, (b > 0 ? w / b : 0) }'
done
