#!/usr/bin/env bash
# What tracing adds to an MPI call made from a Python frame, each process measuring it against the
# same call through its PMPI_ name in alternating loops (python_same_process.py): processes traced by
# this build, with BASE_LIB (another build's liblockstep_trace.so) by that build, and by this build
# with native call sites (LOCKSTEP_TRACE_PYTHON=0), in turn. Prints each process's figures, then
# per kind of process the median and the range of what it adds per call.
#   bench/tracer/python_same_process.sh BUILD_DIR [PROCESSES] [CALLS] [ROUNDS] [BASE_LIB]
set -euo pipefail
build=${1:?build dir}
processes=${2:-5}
calls=${3:-3000}
rounds=${4:-80}
lib=$(realpath "$build/lib/liblockstep_trace.so")
base=${5:+$(realpath "$5")}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/tracer/python_common.sh
source "$here/python_common.sh"
script=("$here/python_same_process.py" "$calls" "$rounds")
for _ in $(seq "$processes"); do
  traced traced "$lib" -- "${script[@]}"
  [[ -z $base ]] || traced base "$base" -- "${script[@]}"
  traced native "$lib" LOCKSTEP_TRACE_PYTHON=0 -- "${script[@]}"
done | tee "$dir/out"
for what in Allreduce Send/Recv; do
  for label in traced native ${base:+base}; do
    awk -v l="$label" -v w="$what" '$1 == l && $2 == w {print $5}' "$dir/out" | sort -n |
      awk -v l="$label" -v w="$what" '{a[NR] = $1} END {
        name = l == "base" ? "BASE_LIB" : l == "native" ? "native call sites" : "this build"
        printf "%s, %s: added %.1f ns per call (median of %d processes; %.1f to %.1f)\n", w, name,
               a[int((NR + 1) / 2)], NR, a[1], a[NR]}'
  done
done
