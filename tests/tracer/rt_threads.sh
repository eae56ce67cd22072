#!/usr/bin/env bash
# tests/tracer/rt_threads.c, read back by `lockstep show --format json`: on every process set, one
# position per call, 0 to N-1, none twice, and every call the program made recorded once. With `fork`,
# set 0 also holds thread 13's calls, and the child's trace holds its two threads' calls on set 0, at
# consecutive positions (they go on from where the parent's count stood), none twice; the collective
# on set "straddle", begun by the parent just before the fork and ended only by the child, stays
# entered in the parent's trace and is in no other. The four
# collectives of set "handoff", ended on another thread 20 ms after they began, are returned with a
# duration of at least 20 ms.
#   rt_threads.sh LOCKSTEP LIB PROGRAM PYTHON SETS THREADS CALLS [fork]
set -euo pipefail
lockstep=$1 lib=$2 prog=$3 python=$4 sets=$5 threads=$6 calls=$7 mode=${8:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$work/t "$prog" "$sets" "$threads" "$calls" $mode >/dev/null
"$lockstep" show "$work/t" --format json >"$work/t.json"
"$python" - "$work/t.json" "$sets" "$threads" "$calls" "$mode" <<'PY'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
sets, threads, calls = (int(a) for a in sys.argv[2:5])
forked = sys.argv[5] == "fork"
def rt_calls(trace):
    return [r for r in trace["records"] if r["kind"] == "collective" and r["api"] == "rt"]
traces = doc["traces"]
if len(traces) != (2 if forked else 1):
    sys.exit(f"rt_threads: {len(traces)} traces, want {2 if forked else 1}")
child_calls = set(range(14 * 100000, 14 * 100000 + calls)) | set(range(15 * 100000, 15 * 100000 + calls))
parent = [t for t in traces if not any(r["count"] in child_calls for r in rt_calls(t))]
child = [t for t in traces if t not in parent]
if len(parent) != 1:
    sys.exit("rt_threads: no trace holds the parent's calls alone")
if forked:
    got = rt_calls(child[0])
    seqs = sorted(r["seq"] for r in got)
    if sorted(r["count"] for r in got) != sorted(child_calls):
        sys.exit(f"rt_threads: the child's trace holds {len(got)} runtime collectives, want {len(child_calls)}")
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        sys.exit(f"rt_threads: the child's positions are not consecutive, once each ({seqs[:3]}...)")
by_set = collections.defaultdict(list)
handed = []
straddle = []
for r in rt_calls(parent[0]):
    if r["comm_name"] == "handoff":
        handed.append(r)
    elif r["comm_name"] == "straddle":
        straddle.append(r)
    else:
        by_set[r["comm_name"]].append((r["seq"], r["count"]))
if sorted(r["count"] for r in handed) != [0, 1, 2, 3]:
    sys.exit(f"rt_threads: {len(handed)} collectives on set handoff, want 4")
for r in handed:
    if r["state"] != "returned" or not 20000 <= r["return_us"] < 10_000_000:
        sys.exit(f"rt_threads: handoff collective {r['count']}: {r['state']}, {r['return_us']} us "
                 "(ended on another thread 20 ms after it began)")
if forked:
    if [(r["count"], r["state"]) for r in straddle] != [(7, "entered")]:
        sys.exit("rt_threads: the collective begun before the fork and ended only in the child reads "
                 f"{[(r['count'], r['state']) for r in straddle]} in the parent's trace, want [(7, 'entered')]")
    if any(r["comm_name"] == "straddle" for r in rt_calls(child[0])):
        sys.exit("rt_threads: the child's trace holds a collective on set straddle, which it never began")
elif straddle:
    sys.exit("rt_threads: a collective on set straddle without a fork")
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
    if forked and s == 0:
        want |= set(range(13 * 100000, 13 * 100000 + calls))
    counts = [n for _, n in got]
    if len(counts) != len(want) or set(counts) != want:
        sys.exit(f"rt_threads: set.{s}: {len(counts)} calls recorded ({len(set(counts))} distinct), "
                 f"the program made {len(want)}")
print(f"rt_threads: {sets} sets x {threads + 1} threads x {calls} calls, one position per call"
      + (f"; the forked child's {len(child_calls)} calls at consecutive positions" if forked else ""))
PY
