#!/usr/bin/env bash
# mpi4py calls from a Python frame, untraced (LD_PRELOAD of the tracer, no LOCKSTEP_TRACE_DIR), traced,
# and traced with native call sites (LOCKSTEP_TRACE_PYTHON=0: the record without the Python frame),
# alternating in one session; prints each run, the median per call of each and what tracing adds. With BASE_LIB (another build's liblockstep_trace.so) a third process of each round is traced
# by it: a same-run comparison of two tracers. Per process, the best of 5 loops; then the median and the
# fastest process of each kind (a virtual machine can run slower or faster for seconds at a time).
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
traced() {  # traced LABEL LIB [VAR=VALUE...]
  local label=$1 with=$2
  shift 2
  rm -rf "$dir/t" && env LD_PRELOAD="$with" LOCKSTEP_TRACE_DIR="$dir/t" "$@" /usr/bin/python3 "$here/python_call.py" \
    "$calls" | sed "s/^/$label /"
}
for i in $(seq "$rounds"); do
  LD_PRELOAD=$lib /usr/bin/python3 "$here/python_call.py" "$calls" | sed 's/^/untraced /'
  [[ -n $base ]] && traced base "$base"
  traced traced "$lib"
  traced native "$lib" LOCKSTEP_TRACE_PYTHON=0
done | tee "$dir/out"
median() {  # median LABEL WHAT
  awk -v l="$1" -v w="$2" '$1==l && $2==w {print $3}' "$dir/out" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
fastest() {  # fastest LABEL WHAT: the least disturbed process of all rounds
  awk -v l="$1" -v w="$2" '$1==l && $2==w {print $3}' "$dir/out" | sort -n | head -1
}
for what in Allreduce Send/Recv; do
  for label in traced native ${base:+base}; do
    awk -v w="$what" -v l="$label" -v u="$(median untraced "$what")" -v t="$(median "$label" "$what")" \
      -v fu="$(fastest untraced "$what")" -v ft="$(fastest "$label" "$what")" \
      'BEGIN {printf "%s, %s: untraced %.1f ns, traced %.1f ns, added %.1f ns (median); fastest %.1f, %.1f, added %.1f ns\n",
              w, l == "base" ? "BASE_LIB" : l == "native" ? "native call sites" : "this build", u, t, t - u, fu, ft, ft - fu}'
  done
done
