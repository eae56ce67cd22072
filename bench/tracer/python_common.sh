# Sourced by the Python benchmarks (python_call.sh, python_same_process.sh): a scratch directory, MPI
# on its self transport, and a runner for one traced Python process.
# shellcheck shell=bash
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
# traced LABEL LIB [VAR=VALUE...] -- SCRIPT ARGS...: SCRIPT under /usr/bin/python3, traced by LIB into a
# fresh directory with the variables given, each line it prints prefixed with LABEL.
traced() {
  local label=$1 with=$2 vars=()
  shift 2
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  rm -rf "$dir/t" && env LD_PRELOAD="$with" LOCKSTEP_TRACE_DIR="$dir/t" "${vars[@]}" /usr/bin/python3 "$@" |
    sed "s/^/$label /"
}
