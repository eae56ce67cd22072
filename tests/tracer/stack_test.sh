#!/usr/bin/env bash
# LOCKSTEP_TRACE_STACK through each unwinder on tests/tracer/mpi_stack.c: 2 ranks under `lockstep run`,
# then `lockstep show --format json` symbolizes the STACK records offline and stack_names.py checks
# that they name the callers each call went through. With a reference unwinder, the same job is run
# again with it and every stack must come out identical, frame for frame, to the outermost one. Each
# process says at exit which unwinder made its stacks (LOCKSTEP_TRACE_STACK_STATS=1): EXPECT "fp" wants
# all but the first few (which confirm the chain) by frame pointers, "rules" all but the first few
# without the DWARF unwinder and some of them by unwind rules (code without frame pointers), "any"
# anything.
#   stack_test.sh WORK LOCKSTEP TRACER UNWIND FRAMES REFERENCE EXPECT PYTHON MPIRUN [FLAGS...] -- PROGRAM
# UNWIND: auto | fp | dwarf; REFERENCE: an unwinder to compare with, or "none".
set -euo pipefail
work=$1 lockstep=$2 tracer=$3 unwind=$4 frames=$5 reference=$6 expect=$7 python=$8
shift 8
launcher=()
while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
shift
program=$1
here=$(cd "$(dirname "$0")" && pwd)
calls=200
rm -rf "$work"
mkdir -p "$work"
fail() { echo "stack_test.sh: $*" >&2; exit 1; }
run() {  # run UNWIND DIR
  LOCKSTEP_TRACE_STACK=$frames LOCKSTEP_TRACE_STACK_UNWIND=$1 LOCKSTEP_TRACE_STACK_STATS=1 \
    "$lockstep" run -o "$2" --tracer "$tracer" -- "${launcher[@]}" -np 2 "$program" "$calls" \
    >"$2.out" 2>"$2.err"
  "$lockstep" show "$2" --format json >"$2.json"
}
run "$unwind" "$work/traces"
# "lockstep: pid P: F stacks without the DWARF unwinder, D with it (R of the F by unwind rules)", one line
# per rank.
stats=$(grep -E '^lockstep: pid [0-9]+: [0-9]+ stacks without the DWARF unwinder' "$work/traces.err" || true)
[[ $(grep -c . <<<"$stats") == 2 ]] || { cat "$work/traces.err" >&2; fail "want one unwinder line per rank"; }
while read -r _ _ _ fp _ _ _ _ _ dwarf _ _ rules _; do
  rules=${rules#(}
  case "$expect" in
    fp) ((fp >= calls - 8 && dwarf <= 8 && fp + dwarf == calls && rules == 0)) ||
          fail "$fp stacks without the DWARF unwinder ($rules by unwind rules), $dwarf with it: want all but a few by frame pointers" ;;
    rules) ((fp >= calls - 8 && dwarf <= 8 && fp + dwarf == calls && rules > 0)) ||
          fail "$fp stacks without the DWARF unwinder ($rules by unwind rules), $dwarf with it: want all but a few without it, some by unwind rules" ;;
    any) ((fp + dwarf == calls)) || fail "$fp + $dwarf stacks, want $calls" ;;
  esac
done <<<"$stats"
if [[ $reference == none ]]; then
  "$python" "$here/stack_names.py" "$work/traces.json" 2 "$calls"
else
  run "$reference" "$work/reference"
  "$python" "$here/stack_names.py" "$work/traces.json" 2 "$calls" "$work/reference.json"
fi
