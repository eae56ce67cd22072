#!/usr/bin/env bash
# What tracing adds to mpi4py's own comm.Allreduce, comm.Send and comm.Recv, each process measuring it
# against the same calls with mpi4py's GOT slots pointed past the tracer at libmpi's PMPI_* in
# alternating loops (python_mpi4py_same_process.py, got_swap.c): processes traced by this build, with
# BASE_LIB (another build's liblockstep_trace.so) by that build, and by this build with native call
# sites (LOCKSTEP_TRACE_PYTHON=0), in turn. After each process its trace is read back (lockstep show):
# each symbol's records must be the calls its slot sent to the tracer, none of those it sent past.
# Prints each process's figures and checks, then per kind of process the median and the range of what
# it adds per call, best loop against best loop and as the median of each round's difference.
#   bench/tracer/python_mpi4py_same_process.sh BUILD_DIR [PROCESSES] [CALLS] [ROUNDS] [BASE_LIB]
set -euo pipefail
build=${1:?build dir}
processes=${2:-9}
calls=${3:-3000}
rounds=${4:-80}
base=${5:+$(realpath "$5")}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/tracer/python_common.sh
source "$here/python_common.sh"
# This build's tracer, helper and reader, copied: a rebuild while this runs changes nothing here.
cp "$build/lib/liblockstep_trace.so" "$build/bench/tracer/libbench_got_swap.so" "$build/bin/lockstep" "$dir/"
lib=$dir/liblockstep_trace.so
helper=$dir/libbench_got_swap.so
lockstep=$dir/lockstep
script=("$here/python_mpi4py_same_process.py" "$helper" "$calls" "$rounds")
# checked LABEL LIB [VAR=VALUE...]: one process, as `traced` runs it, then its trace against its calls.
checked() {
  local label=$1 out
  out=$(traced "$@" -- "${script[@]}")
  printf '%s\n' "$out"
  "$lockstep" show --no-symbolize "$dir/t" |
    awk -v label="$label" -v calls="$(grep "^$label calls " <<<"$out")" '
      $1 ~ /^[0-9]+$/ {records[$4]++}
      END {
        n = split(calls, line, "\n")
        if (n == 0) print label, "check - no calls reported MISMATCH"
        for (i = 1; i <= n; i++) {
          split(line[i], f, " ")  # LABEL calls SYMBOL TRACED UNTRACED
          printf "%s check %s: %d records, %d calls to the tracer, %d past it %s\n", label, f[3],
                 records[f[3]], f[4], f[5], records[f[3]] == f[4] ? "ok" : "MISMATCH"
        }
      }'
}
for _ in $(seq "$processes"); do
  checked traced "$lib"
  [[ -z $base ]] || checked base "$base"
  checked native "$lib" LOCKSTEP_TRACE_PYTHON=0
done | tee "$dir/out"
for what in Allreduce Send/Recv; do
  for label in traced native ${base:+base}; do
    for field in 5 6; do
      awk -v l="$label" -v w="$what" -v f="$field" '$1 == l && $2 == w {print $f}' "$dir/out" | sort -n |
        awk -v l="$label" -v w="$what" -v f="$field" '{a[NR] = $1} END {
          name = l == "base" ? "BASE_LIB" : l == "native" ? "native call sites" : "this build"
          how = f == 5 ? "best loops" : "median round"
          printf "%s, %s: added %.1f ns per call, %s (median of %d processes; %.1f to %.1f)\n", w, name,
                 a[int((NR + 1) / 2)], how, NR, a[1], a[NR]}'
    done
  done
done
checks=$(grep -c ' check ' "$dir/out" || true)
if grep -q ' MISMATCH$' "$dir/out"; then
  echo "GOT swap NOT verified: $(grep -c ' MISMATCH$' "$dir/out") of $checks symbol checks disagree with the calls" >&2
  exit 1
fi
echo "GOT swap verified: in all $checks symbol checks, the trace holds only the calls sent to the tracer"
