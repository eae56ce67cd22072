#!/usr/bin/env bash
# `lockstep run` warns, once per variable, about a LOCKSTEP_TRACE* variable the tracer does not know (a
# misspelt name) and about a value the tracer would replace by its default; valid settings draw no
# warning, and every variable is still forwarded to the launcher unchanged.
set -euo pipefail
lockstep="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/standin_mpirun.sh"
standin_mpirun "$tmp"
out=$(LOCKSTEP_TRACE_STAK=8 LOCKSTEP_TRACE_RING=4k LOCKSTEP_TRACE_CLOCK=mono LOCKSTEP_TRACE_STACK=4 \
      LOCKSTEP_TRACE_P2P=0 "$lockstep" run -o "$tmp/traces" -- "$tmp/mpirun" -np 2 true 2>&1)
echo "$out"
expect() { grep -qF -- "$1" <<<"$out" || { echo "FAIL: no line with: $1"; exit 1; }; }
expect "lockstep run: warning: LOCKSTEP_TRACE_STAK is not a tracer setting"
expect "lockstep run: warning: LOCKSTEP_TRACE_RING=4k is not a valid count; the tracer uses 0"
expect "lockstep run: warning: LOCKSTEP_TRACE_CLOCK=mono is not a valid tsc/monotonic; the tracer uses tsc"
expect "-x LOCKSTEP_TRACE_STAK"
[ "$(grep -c 'warning:' <<<"$out")" -eq 3 ] || { echo "FAIL: expected exactly 3 warnings"; exit 1; }
echo "PASS"
