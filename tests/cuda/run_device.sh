#!/usr/bin/env bash
# Runs device_program on 2 ranks of the NCCL stand-in with liblockstep_trace.so injected and checks
# its traces and its stderr.
#   run_device.sh WORK TRACER CHECKER EXPECT STDERR_PATTERN STDERR_COUNT MPIRUN [FLAGS...] -- PROGRAM ARG [ENV=VALUE...]
# EXPECT is completed|none|"all N" (device_check's arguments after NRANKS); ARG, the program's arguments
# (split at spaces); STDERR_PATTERN must occur STDERR_COUNT times on stderr (once per rank for a warning
# given once per process); any other "lockstep:" line is an error. Exit 77 (skipped) where the program
# exits 77.
set -euo pipefail
work=$1 tracer=$2 checker=$3 expect=$4 pattern=$5 count=$6
shift 6
launcher=()
while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
program=$2
read -ra args <<<"$3"
read -ra expect_args <<<"$expect"
shift 3
envs=()
for kv in "$@"; do envs+=(-x "$kv"); done
rm -rf "$work"
mkdir -p "$work/traces"
rc=0
"${launcher[@]}" -np 2 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" "${envs[@]}" \
  "$program" "${args[@]}" 2>"$work/stderr" || rc=$?
cat "$work/stderr" >&2
[[ $rc == 77 ]] && exit 77
if [[ $rc != 0 ]]; then
  echo "run_device.sh: the program failed ($rc)" >&2
  exit 1
fi
got=$(grep -c -- "$pattern" "$work/stderr" || true)
if [[ $got != "$count" ]]; then
  echo "run_device.sh: '$pattern' on stderr $got times, want $count" >&2
  exit 1
fi
others=$(grep "^lockstep:" "$work/stderr" | grep -vc -- "$pattern" || true)
if [[ $others != 0 ]]; then
  echo "run_device.sh: $others unexpected tracer lines on stderr" >&2
  exit 1
fi
"$checker" "$work/traces" 2 "${expect_args[@]}"
