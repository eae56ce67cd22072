#!/usr/bin/env bash
# End to end: 4 ranks x N (default 100,000) one-int MPI_Allreduce, without and with liblockstep_trace.so,
# alternating, REPS times each; prints the median and the fastest loop time of each and their ratios
# (on a shared machine noise only adds time, so the fastest runs are the steadier comparison).
#   bench/tracer/e2e.sh BUILD_DIR [N] [REPS]
set -euo pipefail
build=${1:?usage: e2e.sh BUILD_DIR [N] [REPS]}
n=${2:-100000}
reps=${3:-3}
prog=$build/bench/tracer/bench_allreduce_loop
tracer=$build/lib/liblockstep_trace.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none -np 4)
work=$(mktemp -d /tmp/lockstep-e2e-XXXXXX)
trap 'rm -rf "$work"' EXIT
plain=() traced=()
for ((i = 0; i < reps; ++i)); do
  plain+=("$("${mpirun[@]}" "$prog" "$n")")
  rm -rf "$work/traces"
  traced+=("$("${mpirun[@]}" -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" "$prog" "$n")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fastest() { printf '%s\n' "$@" | sort -g | head -1; }
p=$(median "${plain[@]}")
t=$(median "${traced[@]}")
pf=$(fastest "${plain[@]}")
tf=$(fastest "${traced[@]}")
echo "untraced runs (s): ${plain[*]}"
echo "traced runs (s):   ${traced[*]}"
awk -v p="$p" -v t="$t" -v n="$n" 'BEGIN {
  printf "4 ranks x %d MPI_Allreduce, medians: untraced %.3f s (%.2f us/call), traced %.3f s (%.2f us/call), ratio %.3f\n",
         n, p, p / n * 1e6, t, t / n * 1e6, t / p }'
awk -v p="$pf" -v t="$tf" 'BEGIN { printf "fastest runs: untraced %.3f s, traced %.3f s, ratio %.3f\n", p, t, t / p }'
