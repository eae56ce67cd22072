#!/usr/bin/env bash
# mpi4py calls from a Python frame, untraced (LD_PRELOAD of the tracer, no LOCKSTEP_TRACE_DIR) and
# traced, alternating in one session; prints each run and the median traced/untraced ratio.
#   bench/tracer/python_call.sh BUILD_DIR [CALLS] [PAIRS]
set -euo pipefail
build=${1:?build dir}
calls=${2:-200000}
pairs=${3:-5}
lib=$(realpath "$build/lib/liblockstep_trace.so")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
for i in $(seq "$pairs"); do
  LD_PRELOAD=$lib /usr/bin/python3 "$here/python_call.py" "$calls" | sed 's/^/untraced /'
  rm -rf "$dir/t" && LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/t /usr/bin/python3 "$here/python_call.py" "$calls" |
    sed 's/^/traced /'
done | tee "$dir/out"
for what in Allreduce Send+Recv; do
  u=$(awk -v w="$what" '$1=="untraced" && $2==w {print $3}' "$dir/out" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  t=$(awk -v w="$what" '$1=="traced" && $2==w {print $3}' "$dir/out" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v w="$what" -v u="$u" -v t="$t" 'BEGIN {printf "%s: untraced %.1f ns, traced %.1f ns, ratio %.3f, added %.1f ns\n", w, u, t, t / u, t - u}'
done
