#!/usr/bin/env bash
# tests/tracer/rt_threads.c, read back by `lockstep show --format json`: on every process set, one
# position per call, 0 to N-1, none twice, and every call the program made recorded once.
#   rt_threads.sh LOCKSTEP LIB PROGRAM PYTHON SETS THREADS CALLS
set -euo pipefail
lockstep=$1 lib=$2 prog=$3 python=$4 sets=$5 threads=$6 calls=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$work/t "$prog" "$sets" "$threads" "$calls" >/dev/null
"$lockstep" show "$work/t" --format json >"$work/t.json"
"$python" - "$work/t.json" "$sets" "$threads" "$calls" <<'PY'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
sets, threads, calls = (int(a) for a in sys.argv[2:5])
by_set = collections.defaultdict(list)
for r in doc["traces"][0]["records"]:
    if r["kind"] == "collective" and r["api"] == "rt":
        by_set[r["comm_name"]].append((r["seq"], r["count"]))
if len(by_set) != sets:
    sys.exit(f"rt_threads: {len(by_set)} process sets recorded, the program used {sets}")
for s in range(sets):
    got = by_set.get(f"set.{s}", [])
    seqs = sorted(q for q, _ in got)
    if seqs != list(range(len(got))):
        twice = [q for q, n in collections.Counter(seqs).items() if n > 1]
        sys.exit(f"rt_threads: set.{s}: positions are not 0..{len(got) - 1} once each "
                 f"(first given twice: {twice[:5]}, {len(got)} calls)")
    want = {(s * 16 + t) * 100000 + i for t in range(threads + 1) for i in range(calls)}
    counts = [n for _, n in got]
    if len(counts) != len(want) or set(counts) != want:
        sys.exit(f"rt_threads: set.{s}: {len(counts)} calls recorded ({len(set(counts))} distinct), "
                 f"the program made {len(want)}")
print(f"rt_threads: {sets} sets x {threads + 1} threads x {calls} calls, one position per call")
PY
