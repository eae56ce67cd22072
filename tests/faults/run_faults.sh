#!/usr/bin/env bash
# Drives the fault suite: runs a probe with and without liblockstep_trace.so and asserts that the
# tracer changed nothing the job does (exit status, output), then what the trace and the checker say.
#   run_faults.sh MODE WORK LOCKSTEP TRACER INSPECT PROGRAM [MPIRUN...]
# Exit 77 (ctest: skipped) with the reason when the mode needs what this machine does not give (root
# for a tmpfs mount).
set -uo pipefail
mode=$1 work=$2 lockstep=$3 tracer=$4 inspect=$5 program=$6
shift 6
mpirun=("$@")
fail() { echo "run_faults.sh $mode: $*" >&2; exit 1; }
skip() { echo "run_faults.sh $mode: SKIPPED: $*" >&2; exit 77; }

mounted=""
cleanup() { if [[ -n $mounted ]]; then umount "$mounted" 2>/dev/null; fi; }
trap cleanup EXIT
# A tmpfs of the given size at $work/fs, or a skip: a full disk cannot be made without one.
small_fs() {
  [[ $(id -u) == 0 ]] || skip "needs root to mount a ${1} tmpfs (a full file system cannot be faked)"
  mkdir -p "$work/fs"
  mount -t tmpfs -o "size=$1" lockstep-faults "$work/fs" 2>"$work/mount.err" ||
    skip "cannot mount a tmpfs here: $(head -c 200 "$work/mount.err")"
  mounted="$work/fs"
}

# run_pair NAME CMD...: runs CMD untraced then traced (trace dir $work/fs/traces unless TRACE_DIR is
# set), stores rc/out/err of both, fails when exit status or output differ.
run_pair() {
  local name=$1
  shift
  local dir=${TRACE_DIR:-$work/fs/traces}
  rm -rf "$dir"
  LD_PRELOAD= LOCKSTEP_TRACE_DIR= "$@" >"$work/$name.plain.out" 2>"$work/$name.plain.err"
  local rc0=$?
  LD_PRELOAD=$tracer LOCKSTEP_TRACE_DIR=$dir "$@" >"$work/$name.traced.out" 2>"$work/$name.traced.err"
  local rc1=$?
  [[ $rc0 == "$rc1" ]] || { cat "$work/$name.traced.err" >&2; fail "$name: exit status $rc1 traced, $rc0 untraced"; }
  cmp -s <(sort "$work/$name.plain.out") <(sort "$work/$name.traced.out") ||
    { diff "$work/$name.plain.out" "$work/$name.traced.out" >&2; fail "$name: output differs under the tracer"; }
  echo "$name: exit $rc0 with and without the tracer, same output"
  last_rc=$rc0
}

rm -rf "$work"
mkdir -p "$work"
case "$mode" in
  enospc-annotate)
    small_fs 4m
    # The reported case: 100 short annotations into a 4 MiB tmpfs (was SIGBUS, exit 135).
    run_pair short "$program" 100 64 0
    [[ $last_rc == 0 ]] || fail "short: exit $last_rc"
    "$inspect" "$work"/fs/traces/*.lstrace >"$work/short.inspect" || fail "short: the trace does not load"
    grep -q "nospace=0" "$work/short.inspect" || fail "short: a 264 KiB trace should fit: $(cat "$work/short.inspect")"
    # Strings that cannot fit: the metadata region runs into the full disk.
    run_pair meta "$program" 100 65536 0
    n=$(grep -c "lockstep: no space left for the trace" "$work/meta.traced.err")
    [[ $n == 1 ]] || fail "meta: $n 'no space' lines on stderr, want 1"
    "$inspect" "$work"/fs/traces/*.lstrace >"$work/meta.inspect" || fail "meta: the trace does not load"
    grep -q "nospace=1" "$work/meta.inspect" || fail "meta: no LST_HDR_NOSPACE: $(cat "$work/meta.inspect")"
    grep -q "dropped_meta=0 " "$work/meta.inspect" && fail "meta: nothing dropped: $(cat "$work/meta.inspect")"
    # Records that cannot fit: the records region runs into the full disk.
    run_pair records "$program" 0 16 300000
    n=$(grep -c "lockstep: no space left for the trace" "$work/records.traced.err")
    [[ $n == 1 ]] || fail "records: $n 'no space' lines on stderr, want 1"
    "$inspect" "$work"/fs/traces/*.lstrace >"$work/records.inspect" || fail "records: the trace does not load"
    grep -q "nospace=1" "$work/records.inspect" || fail "records: no LST_HDR_NOSPACE: $(cat "$work/records.inspect")"
    grep -q "dropped_records=0 " "$work/records.inspect" && fail "records: nothing dropped: $(cat "$work/records.inspect")"
    "$lockstep" show "$work/fs/traces" >/dev/null || fail "records: lockstep show rejects the trace"
    cat "$work"/*.inspect
    ;;
  enospc-mpi)
    small_fs 32m
    # Most of the 32 MiB is taken, so the 4 ranks' traces fill the rest mid-run.
    head -c $((29 * 1024 * 1024)) /dev/zero >"$work/fs/filler" || true
    run_pair mpi "${mpirun[@]}" -np 4 -x LD_PRELOAD -x LOCKSTEP_TRACE_DIR "$program" 40000
    [[ $last_rc == 0 ]] || fail "mpi: exit $last_rc"
    n=$(grep -c "lockstep: no space left for the trace" "$work/mpi.traced.err")
    [[ $n -ge 1 && $n -le 4 ]] || fail "mpi: $n 'no space' lines, want one per rank that hit the full disk"
    "$inspect" "$work"/fs/traces/*.lstrace >"$work/mpi.inspect" || fail "mpi: a trace does not load"
    [[ $(grep -c . "$work/mpi.inspect") == 4 ]] || fail "mpi: want 4 traces: $(cat "$work/mpi.inspect")"
    grep -q "nospace=1" "$work/mpi.inspect" || fail "mpi: no trace says the disk was full"
    cat "$work/mpi.inspect"
    # The checker compares what every rank recorded and says the rest could not be checked: no
    # finding against a rank that merely kept recording longer.
    "$lockstep" check "$work/fs/traces" >"$work/check.out" 2>&1
    rc=$?
    cat "$work/check.out"
    [[ $rc == 0 ]] || fail "mpi: check exit $rc on a correct job whose traces were cut by a full disk"
    grep -q "could not be checked" "$work/check.out" || fail "mpi: check does not say what it could not check"
    grep -q "without calling MPI_Finalize" "$work/check.out" && fail "mpi: check blames ranks that finalized"
    ;;
  signal)
    # Each case as it behaves untraced: exit status (128 + signal for a signal death) and output.
    export OMPI_MCA_opal_signal=""  # the case is about the application's handler, not OpenMPI's
    for when in before after; do
      for c in resethand resethand_siginfo nodefer default ignore_term; do
        TRACE_DIR=$work/traces-$c-$when run_pair "$c-$when" "$program" "$c" "$when"
        grep -q "handler looped" "$work/$c-$when.traced.out" && fail "$c-$when: the handler looped"
        case $c in
          ignore_term) [[ $last_rc == 0 ]] || fail "$c-$when: exit $last_rc, want 0" ;;
          *) [[ $last_rc == 139 ]] || fail "$c-$when: exit $last_rc, want 139 (SIGSEGV)" ;;
        esac
        if [[ $c != ignore_term ]]; then
          # The trace says how the process ended whenever the tracer's handler was in front.
          "$inspect" "$work/traces-$c-$when"/*.lstrace >"$work/$c-$when.inspect" || fail "$c-$when: trace does not load"
          if [[ $when == before || $c == default ]]; then
            grep -q "end=signal" "$work/$c-$when.inspect" || fail "$c-$when: end state: $(cat "$work/$c-$when.inspect")"
          fi
        fi
      done
    done
    ;;
  *) fail "unknown mode" ;;
esac
echo "run_faults.sh $mode: ok"
