#!/usr/bin/env bash
# path_time.sh for a machine whose speed drifts from one minute to the next: PAIRS pairs of processes,
# one traced by BASE_LIB, then one by NEW_LIB, each timing ROUNDS alternating rounds of N iterations of
# the path and its PMPI_* twin (bench/tracer/path_loop.c) and giving its fastest traced round minus its
# fastest twin. Prints per path each library's median and range over its processes, and the median of
# the pairs' NEW / BASE ratios: a drift slower than one pair cancels out of each ratio.
#   bench/tracer/path_pairs.sh BUILD_DIR BASE_LIB NEW_LIB [N] [ROUNDS] [PAIRS] [PATHS...]
#   The trace is a ring (LOCKSTEP_TRACE_RING, 65536 unless set).
set -euo pipefail
export LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}
build=${1:?build dir}
base=$(realpath "${2:?base library}")
new=$(realpath "${3:?new library}")
n=${4:-100000}
rounds=${5:-7}
pairs=${6:-16}
shift $(($# < 6 ? $# : 6))
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(allreduce iallreduce_wait iallreduce_test isend_irecv_waitall)
loop=$(realpath "$build/bench/tracer/bench_path_loop")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
added() {  # added LIB PATH: this process's fastest traced round minus its fastest twin, in ns
  rm -rf "$dir/t"
  LD_PRELOAD=$1 LOCKSTEP_TRACE_DIR=$dir/t "$loop" "$2" "$n" "$rounds" | cut -d' ' -f1
}
for p in "${paths[@]}"; do
  for _ in $(seq "$pairs"); do
    echo "$(added "$base" "$p") $(added "$new" "$p")"
  done | awk -v p="$p" '
    function median(a, k,   i, j, t) {  # sorts a[1..k] in place
      for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    {b[NR] = $1; w[NR] = $2; r[NR] = $1 > 0 ? $2 / $1 : 0}
    END {
      mb = median(b, NR); mw = median(w, NR); mr = median(r, NR)
      printf "%-20s base %6.1f ns (%.1f-%.1f)  new %6.1f ns (%.1f-%.1f)  median pair new/base %.3f  [%d pairs]\n",
             p, mb, b[1], b[NR], mw, w[1], w[NR], mr, NR
    }'
done
