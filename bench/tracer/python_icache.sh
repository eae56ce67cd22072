#!/usr/bin/env bash
# How often the tracer's code misses the level-1 instruction cache per call made from Python, in
# callgrind's cache simulation (32 KiB, 8-way, 64-byte lines) of python_same_process.py: what the
# profile-guided build (docs/tracer.md, "The record path's layout") is for. Deterministic for one
# library, so it compares layouts where timings are noisy. Prints, per library, the tracer's
# instructions and simulated misses per traced call (CALLS x ROUNDS x 3 calls: one Allreduce, one Send,
# one Recv per iteration).
#   bench/tracer/python_icache.sh LIB... [-- CALLS ROUNDS]
set -euo pipefail
libs=()
while [[ $# -gt 0 && $1 != -- ]]; do
  libs+=("$(realpath "$1")")
  shift
done
[[ ${#libs[@]} -gt 0 ]] || { echo "usage: python_icache.sh LIB... [-- CALLS ROUNDS]" >&2; exit 2; }
[[ ${1:-} == -- ]] && shift
calls=${1:-3000}
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}  # valgrind and growing files: see path_instructions.sh
# Deterministic only with the interpreter's string hashing fixed and no address randomization
# (python_instructions.sh).
export PYTHONHASHSEED=0
norandom=()
setarch -R true 2>/dev/null && norandom=(setarch -R)
for lib in "${libs[@]}"; do
  rm -rf "$dir/t" "$dir/cg"
  LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/t "${norandom[@]}" valgrind --tool=callgrind --cache-sim=yes \
    --callgrind-out-file="$dir/cg" /usr/bin/python3 "$here/python_same_process.py" "$calls" "$rounds" \
    >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; exit 1; }
  # Self cost of every function whose code is the tracer's (its sources, inlined or not).
  callgrind_annotate --threshold=100 "$dir/cg" | sed -n '/file:function/,/^-- /p' |
    grep -E "(^|[[:space:]/])tracer/(src|format)/|$(basename "$lib")" | sed -E 's/\([ 0-9.]+%\)//g; s/([0-9]),([0-9])/\1\2/g; s/([0-9]),([0-9])/\1\2/g' |
    awk -v n="$((calls * rounds * 3))" -v lib="$lib" '{ir += $1; miss += $4}
      END {printf "%s: %.0f instructions, %.1f I1 misses per traced call\n", lib, ir / n, miss / n}'
done
