#!/usr/bin/env bash
# Runs one NCCL test program with liblockstep_trace.so injected, then checks its traces.
#   run_traced.sh sequence WORK LOCKSTEP TRACER CHECKER STEPS MPIRUN [MPIRUN FLAGS...] -- PROGRAM
#     under `lockstep run` (or, where the lockstep command is not built, mpirun -x LD_PRELOAD=...)
#   run_traced.sh threads WORK TRACER CHECKER NTHREADS CALLS MPIRUN [MPIRUN FLAGS...] -- PROGRAM
#     2 ranks with NTHREADS threads each; exit 77 (skipped) without MPI_THREAD_MULTIPLE
#   run_traced.sh numerics WORK TRACER CHECKER NP MPIRUN [MPIRUN FLAGS...] -- PROGRAM
#     the stand-in's numerics under the tracer, then its communicator events
#   run_traced.sh real WORK TRACER CHECKER PROGRAM
#     the real NCCL without a GPU: the same output with and without the tracer, then the trace
#   run_traced.sh failures WORK TRACER CHECKER WARNINGS PRELOAD PROGRAM ARG
#     one process; PRELOAD=1 injects the tracer, 0 means the program links it; WARNINGS is how many
#     tracer warning lines stderr must hold
set -euo pipefail
mode=$1
work=$2
rm -rf "$work"
mkdir -p "$work/expected"
case "$mode" in
  sequence)
    lockstep=$3 tracer=$4 checker=$5 steps=$6
    shift 6
    launcher=()
    while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
    program=$2
    if [[ -x $lockstep ]]; then
      "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 4 "$program" "$work/expected" "$steps"
    else
      echo "run_traced.sh: $lockstep not built; injecting with mpirun -x" >&2
      "${launcher[@]}" -np 4 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" \
        "$program" "$work/expected" "$steps"
    fi
    "$checker" sequence "$work/traces" "$work/expected" 4
    ;;
  threads)
    tracer=$3 checker=$4 nthreads=$5 calls=$6
    shift 6
    launcher=()
    while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
    rc=0
    "${launcher[@]}" -np 2 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" "$2" "$nthreads" "$calls" || rc=$?
    [[ $rc == 0 ]] || exit "$rc"
    "$checker" threads "$work/traces" "$nthreads" "$calls"
    ;;
  numerics)
    tracer=$3 checker=$4 np=$5
    shift 5
    launcher=()
    while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
    "${launcher[@]}" -np "$np" -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" "$2"
    "$checker" management "$work/traces" "$np"
    ;;
  real)
    tracer=$3 checker=$4 program=$5
    mkdir -p "$work/traces"
    rc=0
    "$program" real >"$work/plain.out" 2>"$work/plain.err" || rc=$?
    if [[ $rc == 77 ]]; then cat "$work/plain.out"; exit 77; fi
    [[ $rc == 0 ]] || { cat "$work/plain.out" "$work/plain.err" >&2; exit 1; }
    LD_PRELOAD="$tracer" LOCKSTEP_TRACE_DIR="$work/traces" "$program" real >"$work/traced.out" 2>"$work/traced.err"
    cat "$work/traced.out"
    if ! diff "$work/plain.out" "$work/traced.out" >&2; then
      echo "run_traced.sh: NCCL returned other codes under the tracer" >&2
      exit 1
    fi
    LOCKSTEP_TEST_EXPECT_WARNINGS=0 "$checker" failures "$work/traces"
    ;;
  failures)
    tracer=$3 checker=$4 warnings=$5 preload=$6 program=$7 arg=$8
    mkdir -p "$work/traces"
    if [[ $preload == 1 ]]; then
      LD_PRELOAD="$tracer" LOCKSTEP_TRACE_DIR="$work/traces" "$program" "$arg" 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    else
      LOCKSTEP_TRACE_DIR="$work/traces" "$program" "$arg" 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    fi
    cat "$work/stderr" >&2
    got=$(grep -c "no NCCL library" "$work/stderr" || true)
    if [[ $got != "$warnings" ]]; then
      echo "run_traced.sh: $got tracer warnings about NCCL on stderr, want $warnings" >&2
      exit 1
    fi
    LOCKSTEP_TEST_EXPECT_WARNINGS=$warnings "$checker" failures "$work/traces"
    ;;
  *)
    echo "usage: run_traced.sh sequence|failures ..." >&2
    exit 2
    ;;
esac
