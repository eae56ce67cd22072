#!/usr/bin/env bash
# mpi4py calls from a Python frame, untraced (LD_PRELOAD of the tracer, no LOCKSTEP_TRACE_DIR) and
# traced, alternating in one session; prints each run, the median per call of each and what tracing
# adds. With BASE_LIB (another build's liblockstep_trace.so) a third process of each round is traced
# by it: a same-run comparison of two tracers.
#   bench/tracer/python_call.sh BUILD_DIR [CALLS] [ROUNDS] [BASE_LIB]
set -euo pipefail
build=${1:?build dir}
calls=${2:-200000}
rounds=${3:-5}
lib=$(realpath "$build/lib/liblockstep_trace.so")
base=${4:+$(realpath "$4")}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
traced() {  # traced LABEL LIB
  rm -rf "$dir/t" && LD_PRELOAD=$2 LOCKSTEP_TRACE_DIR=$dir/t /usr/bin/python3 "$here/python_call.py" "$calls" |
    sed "s/^/$1 /"
}
for i in $(seq "$rounds"); do
  LD_PRELOAD=$lib /usr/bin/python3 "$here/python_call.py" "$calls" | sed 's/^/untraced /'
  [[ -n $base ]] && traced base "$base"
  traced traced "$lib"
done | tee "$dir/out"
median() {  # median LABEL WHAT
  awk -v l="$1" -v w="$2" '$1==l && $2==w {print $3}' "$dir/out" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
for what in Allreduce Send+Recv; do
  u=$(median untraced "$what")
  t=$(median traced "$what")
  awk -v w="$what" -v u="$u" -v t="$t" 'BEGIN {printf "%s: untraced %.1f ns, traced %.1f ns, ratio %.3f, added %.1f ns\n", w, u, t, t / u, t - u}'
  if [[ -n $base ]]; then
    b=$(median base "$what")
    awk -v w="$what" -v u="$u" -v b="$b" 'BEGIN {printf "%s: traced by BASE_LIB %.1f ns, added %.1f ns\n", w, b, b - u}'
  fi
done
