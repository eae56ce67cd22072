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
# shellcheck source=bench/tracer/python_common.sh
source "$here/python_common.sh"
script=("$here/python_call.py" "$calls")
for _ in $(seq "$rounds"); do
  LD_PRELOAD=$lib /usr/bin/python3 "${script[@]}" | sed 's/^/untraced /'
  [[ -n $base ]] && traced base "$base" -- "${script[@]}"
  traced traced "$lib" -- "${script[@]}"
  traced native "$lib" LOCKSTEP_TRACE_PYTHON=0 -- "${script[@]}"
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
