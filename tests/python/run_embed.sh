#!/usr/bin/env bash
# embed_reinit (an MPI program that runs one Python interpreter after another) on two ranks under
# `lockstep run`: the first interpreter's calls must carry its Python line and turn on the reading of
# the thread state in place (LOCKSTEP_TRACE_PYTHON_STATS, where the build reads frames itself on
# x86-64 glibc); the calls made from C after it finalized, the C call site; the second interpreter's,
# its Python line again; and the first interpreter's daemon thread, whose thread state finalization
# freed, its C call site for the calls it makes from C while the second one runs. A thread state read
# through the first interpreter's deleted key would crash the job or name a Python line there.
#   run_embed.sh WORK LOCKSTEP TRACER PROGRAM DIRECT MPIRUN [MPIRUN FLAGS...]
#   DIRECT: 1 when the tracer was built with the frame layout (LOCKSTEP_PYTHON_FRAMES), else 0
set -uo pipefail
work=$1 lockstep=$2 tracer=$3 program=$4 direct=$5
shift 5
. "$(dirname "$0")/common.sh"
rm -rf "$work" && mkdir -p "$work"
fail() {
  echo "FAIL: $*"
  exit 1
}
calls=20
LOCKSTEP_TRACE_PYTHON_STATS=1 "$lockstep" run -o "$work/traces" --tracer "$tracer" --timeout 60 -- \
  "$@" -np 2 "$program" $calls >"$work/run.out" 2>&1
rc=$?
((rc == 0)) || { cat "$work/run.out"; fail "the job exited $rc"; }
stats=$(grep "Python call sites read" "$work/run.out")
[[ $(grep -c . <<<"$stats") == 2 ]] || { cat "$work/run.out"; fail "not every rank said how it read call sites"; }
if [[ $direct == 1 ]] && in_place_expected; then
  grep -qv "thread state read in place)$" <<<"$stats" && { echo "$stats"; fail "the thread state was not read in place"; }
fi
"$lockstep" show --format json "$work/traces" >"$work/show.json" || fail "show failed"
python3 - "$work/show.json" "$calls" <<'PY' || fail "the call sites are not the rounds'"
import json
import sys

calls = int(sys.argv[2])
for t in json.load(open(sys.argv[1]))["traces"]:
    by_comm = {}
    for r in t["records"]:
        if r["kind"] == "collective" and r["op"] == "MPI_Allreduce":
            f = r["call_site"][0]
            by_comm.setdefault(r["comm"], []).append("%s:%s" % (f.get("file"), f.get("line")))
    world = max(by_comm.values(), key=len)
    own = min(by_comm.values(), key=len)
    c_site = world[calls] if len(world) > calls else None
    # The C call site: embed_reinit.c's one MPI_Allreduce, the same from either thread.
    ok = (len(by_comm) == 2 and c_site and "embed_reinit.c:" in c_site and
          world == ["<string>:6"] * calls + [c_site] * calls + ["<string>:4"] * 5 and
          len(own) == 1 + calls and own[0].endswith("threading.py:%s" % own[0].rsplit(":", 1)[-1]) and
          own[1:] == [c_site] * calls)
    if not ok:
        print("rank %s: MPI_COMM_WORLD's call sites %s; the daemon thread's %s" % (t["rank"], world, own))
        sys.exit(1)
    print("rank %s: the first interpreter %d calls at <string>:6, C %d at %s, the second 5 at <string>:4; the "
          "daemon thread 1 at %s, then %d from C after the finalization" % (t["rank"], calls, calls, c_site, own[0],
                                                                            calls))
PY
