#!/usr/bin/env bash
# Runs one single-process test program with liblockstep_trace.so injected and checks its trace and
# its stderr (the CUPTI tests).
#   run_one.sh WORK TRACER CHECKER "CHECK ARGS" STDERR_PATTERN STDERR_COUNT PROGRAM ARG [ENV=VALUE...]
# STDERR_PATTERN (fixed string) must occur STDERR_COUNT times; any other "lockstep:" line is an error.
set -euo pipefail
work=$1 tracer=$2 checker=$3 check_args=$4 pattern=$5 count=$6 program=$7 arg=$8
shift 8
rm -rf "$work"
mkdir -p "$work/traces"
rc=0
env "$@" LD_PRELOAD="$tracer" LOCKSTEP_TRACE_DIR="$work/traces" "$program" "$arg" 2>"$work/stderr" || rc=$?
cat "$work/stderr" >&2
if [[ $rc != 0 ]]; then
  echo "run_one.sh: the program failed ($rc)" >&2
  exit 1
fi
got=$(grep -cF -- "$pattern" "$work/stderr" || true)
if [[ $got != "$count" ]]; then
  echo "run_one.sh: '$pattern' on stderr $got times, want $count" >&2
  exit 1
fi
others=$(grep "^lockstep:" "$work/stderr" | grep -vcF -- "$pattern" || true)
if [[ $others != 0 ]]; then
  echo "run_one.sh: $others unexpected tracer lines on stderr" >&2
  exit 1
fi
# shellcheck disable=SC2086  # CHECK ARGS are words
"$checker" "$work/traces" 1 $check_args
