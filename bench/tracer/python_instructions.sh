#!/usr/bin/env bash
# Instructions inside the intercepted calls from a Python loop (mpi4py, one double on COMM_SELF), counted
# by callgrind from the wrapper's entry to its return: the tracer preloaded but off (baseline: the wrapper
# passes through to the PMPI call) against tracing on, where the call site is read from the Python frame.
# Two loops: comm.Allreduce (one call per iteration) and comm.Send + comm.Recv to self (two calls per
# iteration, each its own call site); figures are per intercepted call. Deterministic, unlike times on a
# loaded machine. Also the level-1 instruction-cache misses of callgrind's simulated cache (32 KiB, 8-way)
# that tracing adds: what the profile-guided build is about (python_icache.sh, docs/tracer.md).
# The same run gives the same counts only with the interpreter's string hashing fixed and the address
# space not randomized (both change the interpreter's own paths between the calls, and with them the
# misses: 15.5 and 21.0 per send or receive in two runs of one library without them), so both are set.
#   bench/tracer/python_instructions.sh BUILD_DIR [LIB] [CALLS]
set -euo pipefail
export PYTHONHASHSEED=0
norandom=()
setarch -R true 2>/dev/null && norandom=(setarch -R)
build=${1:?build dir}
lib=$(realpath "${2:-$build/lib/liblockstep_trace.so}")
n=${3:-5000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count() {  # count allreduce|p2p traced|untraced
  local env=(LD_PRELOAD="$lib" OMPI_MCA_btl=self) toggles body
  # A ring: valgrind cannot follow a growing file's chunk mappings (path_instructions.sh).
  [[ $2 == traced ]] && env+=(LOCKSTEP_TRACE_DIR="$dir/t" LOCKSTEP_TRACE_RING=65536)
  if [[ $1 == allreduce ]]; then
    toggles=(--toggle-collect=MPI_Allreduce)
    body="MPI.COMM_SELF.Allreduce(a, b, op=MPI.SUM)"
  else
    toggles=(--toggle-collect=MPI_Send --toggle-collect=MPI_Recv)
    body="MPI.COMM_SELF.Send(a, dest=0, tag=7); MPI.COMM_SELF.Recv(b, source=0, tag=7)"
  fi
  rm -rf "$dir/t" "$dir"/cg.*
  "${norandom[@]}" env "${env[@]}" valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no "${toggles[@]}" \
    --callgrind-out-file="$dir/cg.%p" /usr/bin/python3 -c "
import array
from mpi4py import MPI
a, b = array.array('d', [1.0]), array.array('d', [0.0])
for _ in range($n):
    $body
" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; exit 1; }
  awk '/^summary:/ {print $2, $5}' "$dir"/cg.*  # Ir and I1mr
}
for what in allreduce p2p; do
  u=$(count $what untraced)
  t=$(count $what traced)
  calls=$n label="comm.Allreduce"
  [[ $what == p2p ]] && calls=$((2 * n)) label="comm.Send/Recv"
  awk -v u="$u" -v t="$t" -v n="$calls" -v l="$label" 'BEGIN {
    split(u, a, " "); split(t, b, " ")
    printf "%s: untraced %.1f, traced %.1f, added %.1f instructions per call; I1 misses added %.2f\n",
           l, a[1] / n, b[1] / n, (b[1] - a[1]) / n, (b[2] - a[2]) / n}'
done
