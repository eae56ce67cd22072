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

# expect_full NAME COUNTER: after run_pair NAME into a full file system, one "no space" line on stderr,
# a trace that loads, marked full (LST_HDR_NOSPACE), with COUNTER (what did not fit) above 0.
expect_full() {
  local name=$1 counter=$2 n
  n=$(grep -c "lockstep: no space left for the trace" "$work/$name.traced.err")
  [[ $n == 1 ]] || fail "$name: $n 'no space' lines on stderr, want 1"
  "$inspect" "$work"/fs/traces/*.lstrace >"$work/$name.inspect" || fail "$name: the trace does not load"
  grep -q "nospace=1" "$work/$name.inspect" || fail "$name: no LST_HDR_NOSPACE: $(cat "$work/$name.inspect")"
  if grep -q "$counter=0 " "$work/$name.inspect"; then fail "$name: nothing dropped: $(cat "$work/$name.inspect")"; fi
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
    expect_full meta dropped_meta
    # Records that cannot fit: the records region runs into the full disk.
    run_pair records "$program" 0 16 300000
    expect_full records dropped_records
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
  reader)
    # Real traces of a 4-rank job, then damage of every kind the checker must name, never trust.
    ulimit -v 8000000  # a reader that trusted world_size would need 23 GB: fail fast, not swap
    cp "$program" "$work/prog"
    good=$work/good
    "${mpirun[@]}" -np 4 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$good" "$work/prog" 200 >/dev/null ||
      fail "the job failed"
    "$lockstep" check "$good" >/dev/null || fail "check rejects the undamaged traces"
    files=("$good"/*.lstrace)
    expect() {  # expect RC PATTERN CMD...: exit code RC, one stderr line matching PATTERN, within 60 s
      local want=$1 pat=$2
      shift 2
      timeout 60 "$@" >"$work/out" 2>"$work/err"
      local rc=$?
      [[ $rc != 124 ]] || fail "hangs: $*"
      [[ $rc == "$want" ]] || { cat "$work/err" >&2; fail "exit $rc, want $want: $*"; }
      if [[ -n $pat ]]; then
        grep -q -- "$pat" "$work/err" || { cat "$work/err" >&2; fail "no '$pat' on stderr: $*"; }
      fi
    }
    one_line() { [[ $(wc -l <"$work/err") == 1 ]] || { cat -A "$work/err" >&2; fail "error is not one line: $*"; }; }
    copy() { rm -rf "$work/$1"; cp -r "$good" "$work/$1"; echo "$work/$1"; }
    poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }  # poke FILE OFFSET BYTES

    # world_size 0x7fffffff in one header: exit 2 naming the file and the field, no allocation.
    d=$(copy huge)
    poke "$d/$(basename "${files[1]}")" 76 '\xff\xff\xff\x7f'
    expect 2 "world_size" "$lockstep" check "$d"
    grep -q "$(basename "${files[1]}")" "$work/err" || fail "world_size error does not name the file"
    one_line check world_size
    expect 2 "world_size" "$lockstep" diff "$good" "$d"
    # world_size that agrees with itself but contradicts the other files.
    d=$(copy contra)
    poke "$d/$(basename "${files[2]}")" 76 '\x05\x00\x00\x00'
    expect 2 "world_size" "$lockstep" check "$d"

    # One unreadable file: exit 2; --skip-bad analyzes the rest, names the skipped one, still exit 2.
    d=$(copy onebad)
    poke "$d/$(basename "${files[3]}")" 0 'XXXXXXXX'
    expect 2 "bad magic" "$lockstep" check "$d"
    expect 2 "skipped.*bad magic" "$lockstep" check --skip-bad "$d"
    grep -q "3 ranks" "$work/out" || fail "--skip-bad did not analyze the 3 readable files: $(cat "$work/out")"
    expect 2 "skipped.*bad magic" "$lockstep" show --skip-bad --no-symbolize "$d"
    grep -q "rank-0" "$work/out" || fail "show --skip-bad printed nothing"

    # FIFOs, symbolic links and directories inside a trace directory: skipped and named, never opened.
    d=$(copy special)
    mkfifo "$d/rank-7.fifo.1.lstrace"
    ln -s "${files[0]}" "$d/rank-8.link.1.lstrace"  # followed, it would be a second file for rank 0
    mkdir "$d/rank-9.dir.1.lstrace"
    expect 0 "" "$lockstep" check "$d"
    for what in "a FIFO" "a symbolic link" "a directory"; do
      grep -q "$what, not a regular file: skipped" "$work/out" || fail "check does not say it skipped $what"
    done
    expect 0 "a FIFO, not a regular file: skipped" "$lockstep" show --no-symbolize "$d"
    grep -q "a symbolic link, not a regular file: skipped" "$work/err" || fail "show does not say it skipped a link"
    expect 2 "not a regular file (a FIFO)" "$lockstep" show "$d/rank-7.fifo.1.lstrace"
    one_line show fifo
    # A module path that names a FIFO: symbolization gives up on it instead of blocking.
    rm -f "$work/prog"
    mkfifo "$work/prog"
    expect 0 "" "$lockstep" show "$good"
    expect 0 "" "$lockstep" check "$good"

    # Bytes that are not UTF-8 in the directory name: every report format stays valid.
    d=$work/$'bad\xff\xfename'
    rm -rf "$d"
    cp -r "$good" "$d"
    for f in json sarif; do
      expect 0 "" "$lockstep" check --format "$f" "$d"
      python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$work/out" ||
        fail "--format $f is not valid UTF-8 JSON"
    done
    expect 0 "" "$lockstep" check --format junit "$d"
    python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$work/out" || fail "--format junit is not valid XML"
    expect 0 "" "$lockstep" show --format json --no-symbolize "$d"
    python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$work/out" || fail "show json invalid"

    # Control bytes in a name reach a one-line error escaped; loops and directories get one clear line.
    d=$work/$'ctl\nname\x1b[31m'
    rm -rf "$d"
    cp -r "$good" "$d"
    poke "$d/$(basename "${files[3]}")" 0 'XXXXXXXX'
    expect 2 'ctl\\x0aname\\x1b' "$lockstep" check "$d"
    one_line control bytes
    ln -sfn loop "$work/loop"
    expect 2 "Too many levels of symbolic links" "$lockstep" check "$work/loop"
    one_line loop
    grep -q "filesystem error" "$work/err" && fail "raw filesystem error"
    expect 2 "Too many levels of symbolic links" "$lockstep" show "$work/loop"
    one_line show loop
    # A trace file may be given instead of its directory; anything else that is not a trace is named.
    expect 2 "not a directory" "$lockstep" check /dev/null
    one_line check device
    expect 2 "not a trace" "$lockstep" check /etc/hostname
    one_line check not a trace
    mkdir -p "$work/adir.lstrace"
    expect 2 "no .lstrace files" "$lockstep" show "$work/adir.lstrace"
    one_line show dir
    ;;
  damage)
    # Single random overwrites of real traces: corruption where the integrity checks cover the bytes.
    "${mpirun[@]}" -np 4 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/good" "$program" 300 >/dev/null ||
      fail "the job failed"
    "$lockstep" check --no-symbolize "$work/good" >/dev/null || fail "check rejects the undamaged traces"
    python3 "$(dirname "$0")/damage_rate.py" "$lockstep" "$work/good" "$work" 200 20261203 || fail "detection rate"
    ;;
  damage-records)
    # The same damage to the records only, in-process (no process start per trial): fast enough for
    # thousands of trials. The probe damages a copy in place and restores each byte after its trial.
    "${mpirun[@]}" -np 4 -x LD_PRELOAD="$tracer" -x LOCKSTEP_TRACE_DIR="$work/good" "$program" 300 \
      >/dev/null || fail "the job failed"
    cp -r "$work/good" "$work/damaged"
    "$(dirname "$inspect")/faults_damage_probe" "$work/damaged" 3000 20261203 99 || fail "detection rate"
    ;;
  *) fail "unknown mode" ;;
esac
echo "run_faults.sh $mode: ok"
