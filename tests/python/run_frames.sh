#!/usr/bin/env bash
# frames.py traced twice with 3-frame stacks, then twice without (the default: the call site alone, which
# the frame-stack reading finds from the innermost frame's instruction pointer once it has met the line):
# Python call sites read from the frame stack (the default, LOCKSTEP_TRACE_PYTHON_READ=auto) and through
# CPython's C API (=api). Every collective must carry the same call site and stack both ways, the lines
# marked "lockstep-test:" in the script, and each process must say at exit (LOCKSTEP_TRACE_PYTHON_STATS)
# that it read them the way it was asked to.
#   run_frames.sh WORK LOCKSTEP TRACER PYTHON SCRIPT DIRECT MPIRUN [MPIRUN FLAGS...]
#   DIRECT: 1 when the tracer was built with the frame layout (LOCKSTEP_PYTHON_FRAMES), else 0
set -uo pipefail
work=$1 lockstep=$2 tracer=$3 python=$4 script=$5 direct=$6
shift 6
. "$(dirname "$0")/common.sh"
mpi4py_job_setup "$python" "$work"
fail() {
  echo "FAIL: $*"
  exit 1
}

for depth in 3 1; do
  dir=$work/depth$depth
  mkdir -p "$dir"
  stack=()
  ((depth > 1)) && stack=(LOCKSTEP_TRACE_STACK=$depth)
  for read in auto api; do
    env "${stack[@]}" LOCKSTEP_TRACE_PYTHON_READ=$read LOCKSTEP_TRACE_PYTHON_STATS=1 \
      "$lockstep" run -o "$dir/$read" --tracer "$tracer" --timeout 60 -- "$@" -np 2 "$python" "$script" \
      >"$dir/$read.out" 2>&1 || { cat "$dir/$read.out"; fail "the job ($read, $depth frames) exited $?"; }
    "$lockstep" show --format json "$dir/$read" >"$dir/$read.json" || fail "show ($read) failed"
    n=$(grep -c "Python call sites read" "$dir/$read.out")
    [[ $n == 2 ]] || { cat "$dir/$read.out"; fail "$read: $n of 2 processes said how they read call sites"; }
  done

  # The frame stack is used only where the build has the layout, and never when asked for the API.
  stats() { grep "Python call sites read" "$dir/$1.out"; }
  if stats api | grep -qv " 0 Python call sites read from the frame stack"; then
    stats api
    fail "LOCKSTEP_TRACE_PYTHON_READ=api still read from the frame stack"
  fi
  if [[ $direct == 1 ]]; then
    # 120 collectives per process; the first calls at each line go through the API.
    stats auto | awk '{ if ($4 < 100 || $0 !~ /reading on(, thread state read in place)?\)$/) bad = 1 } END { exit bad }' ||
      { stats auto; fail "the frame stack was not used for most call sites"; }
    # On x86-64 glibc the thread state is read from its key's slot in place (python_frame.c): the
    # offset probe must have found the slot there.
    if in_place_expected; then
      stats auto | grep -qv "thread state read in place)$" &&
        { stats auto; fail "the thread state was not read in place on x86-64 glibc"; }
    fi
  else
    stats auto | grep -q " 0 Python call sites read from the frame stack" ||
      { stats auto; fail "a tracer built without the layout read the frame stack"; }
  fi

  "$python" - "$dir/auto.json" "$dir/api.json" "$script" "$depth" <<'PY' || fail "the call sites differ ($depth frames)"
import json
import re
import sys


def sites(path):
    """(rank, communicator, seq) -> (op, [file:line of each frame]) for every collective, with its stack.
    A communicator is named by the order of its creation in the rank (its id differs from job to job)."""
    out = {}
    for t in json.load(open(path))["traces"]:
        recs = {r["id"]: r for r in t["records"]}
        order = {}
        for r in t["records"]:
            if r["kind"] == "comm":
                order.setdefault(r["comm"], len(order))
        stacks = {r["ref"]: r for r in t["records"] if r["kind"] == "stack"}
        for r in recs.values():
            if r["kind"] != "collective":
                continue
            frames = r["call_site"] + stacks.get(r["id"], {}).get("call_site", [])
            out[(t["rank"], order.get(r["comm"], -1), r["seq"])] = (r["op"], ["%s:%s" % (f.get("file"), f.get("line")) for f in frames])
    return out


auto, api = sites(sys.argv[1]), sites(sys.argv[2])
script = sys.argv[3]
marks = {}
for no, text in enumerate(open(script), 1):
    m = re.search(r"lockstep-test: (\w+)$", text.rstrip())
    if m:
        marks[m.group(1)] = "%s:%d" % (script, no)
depth = int(sys.argv[4])
want = {"MPI_Allreduce": [marks["inner"], marks["outer"]][:depth], "MPI_Bcast": [marks["bcast"]],
        "MPI_Barrier": [marks["worker"]]}
if auto != api:
    for k in sorted(set(auto) | set(api)):
        if auto.get(k) != api.get(k):
            print("rank %s communicator %s seq %s: frame stack %s, C API %s" % (k[0], k[1], k[2], auto.get(k), api.get(k)))
    sys.exit(1)
counts = {}
for (op, frames) in auto.values():
    if op in want:
        counts[op] = counts.get(op, 0) + 1
        if frames[: len(want[op])] != want[op]:
            print("%s at %s, want %s first" % (op, frames, want[op]))
            sys.exit(1)
if counts != {"MPI_Allreduce": 80, "MPI_Bcast": 80, "MPI_Barrier": 80}:
    print("collectives per kind: %s, want 80 each (40 per rank)" % counts)
    sys.exit(1)
print("%d collectives, the same call sites and stacks both ways (%d frames)" % (len(auto), depth))
PY
done
