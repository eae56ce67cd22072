#!/usr/bin/env bash
# Drives the tracer's multi-rank tests: runs a test program with liblockstep_trace.so injected (under
# `lockstep run` where the test is about it), then checks the traces with trace_check.
#   run_test.sh MODE WORK LOCKSTEP TRACER CHECK MPIRUN [MPIRUN FLAGS...] -- PROGRAM [ARGS...]
# MODE: sequence STEPS | threads NTHREADS CALLS | requests PAIRS MANY REUSE [serialized] | threads-mpirun | stack | comms | errors | fork | unwritable | hang |
#       stall | dir | fortran SOURCE | durations
set -euo pipefail
mode=$1 work=$2 lockstep=$3 tracer=$4 check=$5
shift 5
extra=()
case "$mode" in
  sequence) extra=("$1"); shift ;;
  threads) extra=("$1" "$2"); shift 2 ;;
  requests)
    extra=("$1" "$2" "$3")
    shift 3
    level=()  # serialized: the program orders its threads' MPI calls under MPI_THREAD_SERIALIZED
    if [[ $1 == serialized ]]; then level=(serialized); shift; fi
    ;;
  fortran) extra=("$1"); shift ;;
esac
launcher=()
while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
shift
program=("$@")
rm -rf "$work"
mkdir -p "$work"

fail() { echo "run_test.sh $mode: $*" >&2; exit 1; }

case "$mode" in
  sequence)
    mkdir -p "$work/expected"
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 4 "${program[@]}" "$work/expected" "${extra[0]}"
    "$check" sequence "$work/traces" "$work/expected" 4
    if [[ ${LOCKSTEP_TRACE_P2P:-1} != 0 ]]; then
      # show names a receive's wildcards: tag (SEQ) and source (ROOT) "any", MPI_PROC_NULL "null".
      "$lockstep" show --no-symbolize "$work/traces" > "$work/show.out"
      grep -Eq "MPI_Recv .* any +[0-9]+ +float64 +[0-9]+ +any " "$work/show.out" ||
        fail "show does not print an MPI_ANY_SOURCE/MPI_ANY_TAG receive as any/any"
      grep -Eq "MPI_Recv .* any +[0-9]+ +int32 +[0-9]+ +null " "$work/show.out" ||
        fail "show does not print an MPI_PROC_NULL receive's peer as null"
    fi
    ;;
  fortran)
    # A Fortran program, untouched: its calls reach the tracer through the MPI Fortran bindings.
    mkdir -p "$work/expected"
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 4 "${program[@]}" "$work/expected" 3
    "$check" named "$work/traces" "$work/expected" 4 "${extra[0]}"
    ;;
  threads)
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 2 "${program[@]}" "${extra[0]}" "${extra[1]}"
    "$check" threads "$work/traces" 2 "${extra[0]}" "${extra[1]}"
    ;;
  requests)
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 2 "${program[@]}" "${extra[@]}" \
      "${level[@]}"
    "$check" requests "$work/traces" 2 "${extra[@]}"
    ;;
  errors | fork)
    # The same program without and with the tracer: identical output and exit code.
    rc0=0 rc1=0
    "${launcher[@]}" -np 2 "${program[@]}" "$mode" >"$work/plain.out" 2>"$work/plain.err" || rc0=$?
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 2 "${program[@]}" "$mode" \
      >"$work/traced.out" 2>"$work/traced.err" || rc1=$?
    [[ $rc0 == "$rc1" ]] || fail "exit code $rc1 under the tracer, $rc0 without"
    sort "$work/plain.out" >"$work/plain.sorted"
    sort "$work/traced.out" >"$work/traced.sorted"
    cmp -s "$work/plain.sorted" "$work/traced.sorted" || { diff "$work/plain.sorted" "$work/traced.sorted" >&2; fail "output differs under the tracer"; }
    [[ -s $work/plain.out ]] || fail "the program printed nothing"
    "$check" "$mode" "$work/traces" 2
    ;;
  unwritable)
    # A trace directory that cannot be created: one warning per process, then the program runs as
    # if untraced.
    touch "$work/file"
    rc0=0 rc1=0
    "${launcher[@]}" -np 2 "${program[@]}" errors >"$work/plain.out" 2>"$work/plain.err" || rc0=$?
    "${launcher[@]}" -np 2 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/file/traces" "${program[@]}" errors \
      >"$work/traced.out" 2>"$work/traced.err" || rc1=$?
    [[ $rc0 == "$rc1" ]] || fail "exit code $rc1 under the tracer, $rc0 without"
    cmp -s <(sort "$work/plain.out") <(sort "$work/traced.out") || fail "output differs under the tracer"
    n=$(grep -c "lockstep: tracing is off" "$work/traced.err" || true)
    [[ $n == 2 ]] || { cat "$work/traced.err" >&2; fail "$n tracer warnings, want one per process (2)"; }
    [[ ! -e $work/file/traces ]] || fail "a trace directory appeared under a file"
    ;;
  durations)
    # Rank 1 holds rank 0 up for 300 ms before each call can finish (mpi_durations.cc): the MPI_Wait,
    # the MPI_Waitall and the MPI_Allreduce last at least 250 ms; the one MPI_Test that completed its
    # receive is recorded, as short as it was.
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 2 "${program[@]}" 300
    "$lockstep" show --format json --no-symbolize "$work/traces" >"$work/show.json"
    python3 - "$work/show.json" <<'PY' || fail "recorded durations do not cover the waits"
import json, sys
ranks = {t["rank"]: t["records"] for t in json.load(open(sys.argv[1]))["traces"]}
recs = ranks[0]
bad = []
def one(kind, op):
    got = [r for r in recs if r["kind"] == kind and r["op"] == op]
    if len(got) != 1:
        bad.append(f"{len(got)} {op} records on rank 0, want 1")
    return got[0] if got else None
for kind, op in (("wait", "MPI_Wait"), ("wait", "MPI_Waitall"), ("collective", "MPI_Allreduce")):
    r = one(kind, op)
    if r and not (250000 <= r["return_us"] < 60000000):
        bad.append(f"{op} lasted {r['return_us']} us, want at least 250000")
t = one("wait", "MPI_Test")
if t and (t["ncompleted"] != 1 or t["return_us"] >= 250000):
    bad.append(f"MPI_Test completed {t['ncompleted']} in {t['return_us']} us, want 1 in under 250000")
for b in bad:
    print("mpi_durations:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    ;;
  hang)
    rc=0
    "$lockstep" run -o "$work/traces" --tracer "$tracer" --timeout 4 --grace 2 -- "${launcher[@]}" -np 2 "${program[@]}" \
      2>"$work/run.err" || rc=$?
    cat "$work/run.err" >&2
    [[ $rc == 124 ]] || fail "exit code $rc, want 124"
    grep -q "timeout" "$work/run.err" || fail "no timeout message"
    "$check" hang "$work/traces"
    ;;
  stall)
    rc=0
    "$lockstep" run -o "$work/traces" --tracer "$tracer" --stall 1 --timeout 8 --grace 2 -- "${launcher[@]}" -np 2 \
      "${program[@]}" 2>"$work/run.err" || rc=$?
    cat "$work/run.err" >&2
    [[ $rc == 124 ]] || fail "exit code $rc, want 124"
    # The live report names the blocked rank's collective before the timeout stops the job.
    report=$(sed -n '/no rank has progressed\|stall\|hang/,$p' "$work/run.err")
    [[ -n $report ]] || fail "no stall report"
    grep -q "MPI_Barrier" <<<"$report" || fail "the report does not name MPI_Barrier"
    grep -q "rank 0" <<<"$report" || fail "the report does not name rank 0"
    [[ $(grep -n "MPI_Barrier" "$work/run.err" | head -1 | cut -d: -f1) -lt $(grep -n "timeout after" "$work/run.err" | cut -d: -f1) ]] \
      || fail "the report came after the timeout"
    ;;
  comms)
    mkdir -p "$work/expected"
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- "${launcher[@]}" -np 4 "${program[@]}" "$work/expected"
    "$check" comms "$work/traces" "$work/expected" 4
    ;;
  threads-mpirun)
    # The same as threads without `lockstep run` (sanitizer builds: only the tracer and the program).
    "${launcher[@]}" -np 2 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" "${program[@]}" 8 60
    "$check" threads "$work/traces" 2 8 60
    ;;
  stack)
    # LOCKSTEP_TRACE_STACK=3: the caller plus two more frames, in one STACK record after each collective.
    mkdir -p "$work/expected"
    "${launcher[@]}" -np 2 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/traces" -x LOCKSTEP_TRACE_STACK=3 \
      "${program[@]}" "$work/expected" 60
    "$check" stack "$work/traces" 2
    ;;
  dir)
    # A directory holding another job's traces is refused (exit 2) unless --clean, which removes them.
    mkdir -p "$work/traces"
    touch "$work/traces/rank-0.otherhost.1.lstrace" "$work/traces/notes.txt"
    rc=0
    "$lockstep" run -o "$work/traces" --tracer "$tracer" -- true 2>"$work/err" || rc=$?
    [[ $rc == 2 ]] || fail "exit code $rc for a directory with traces, want 2"
    grep -q "already holds 1 trace file" "$work/err" || fail "no reason given: $(cat "$work/err")"
    [[ -e $work/traces/rank-0.otherhost.1.lstrace ]] || fail "the old trace was removed without --clean"
    "$lockstep" run -o "$work/traces" --clean --tracer "$tracer" -- true
    [[ ! -e $work/traces/rank-0.otherhost.1.lstrace ]] || fail "--clean left the old trace"
    [[ -e $work/traces/notes.txt ]] || fail "--clean removed a file that is not a trace"
    ;;
  *)
    echo "run_test.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
