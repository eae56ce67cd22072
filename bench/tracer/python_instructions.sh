#!/usr/bin/env bash
# Instructions inside MPI_Allreduce per comm.Allreduce from a Python loop (mpi4py, one double on
# COMM_SELF), counted by callgrind from the wrapper's entry to its return: the tracer preloaded but off
# (baseline: the wrapper passes through to PMPI_Allreduce) against tracing on, where the call site is
# read from the Python frame. Deterministic, unlike times on a loaded machine.
#   bench/tracer/python_instructions.sh BUILD_DIR [LIB] [CALLS]
set -euo pipefail
build=${1:?build dir}
lib=$(realpath "${2:-$build/lib/liblockstep_trace.so}")
n=${3:-5000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count() {  # count traced|untraced
  local env=(LD_PRELOAD="$lib" OMPI_MCA_btl=self)
  # A ring: valgrind cannot follow a growing file's chunk mappings (path_instructions.sh).
  [[ $1 == traced ]] && env+=(LOCKSTEP_TRACE_DIR="$dir/t" LOCKSTEP_TRACE_RING=65536)
  rm -rf "$dir/t" "$dir"/cg.*
  env "${env[@]}" valgrind --tool=callgrind --collect-atstart=no --toggle-collect=MPI_Allreduce \
    --callgrind-out-file="$dir/cg.%p" /usr/bin/python3 -c "
import array
from mpi4py import MPI
a, b = array.array('d', [1.0]), array.array('d', [0.0])
for _ in range($n):
    MPI.COMM_SELF.Allreduce(a, b, op=MPI.SUM)
" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; exit 1; }
  awk '/^summary:/ {print $2}' "$dir"/cg.*
}
u=$(count untraced)
t=$(count traced)
awk -v u="$u" -v t="$t" -v n="$n" \
  'BEGIN {printf "comm.Allreduce: untraced %.1f, traced %.1f, added %.1f instructions per call\n", u / n, t / n, (t - u) / n}'
