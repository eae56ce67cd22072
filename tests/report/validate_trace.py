#!/usr/bin/env python3
"""Structural check of a Chrome trace-event JSON file written by `lockstep export`: every B has its E and
every X a non-negative dur, one process (with a name) per rank, every slice on a named thread, every flow
made of one start and one end bound to slices of their threads, and the findings as instant events.
usage: validate_trace.py TRACE.json --ranks N [--findings K] [--check CHECK.json]"""
import argparse
import collections
import json
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--findings", type=int, default=0, help="instant events expected at least")
ap.add_argument("--check", help="the check's JSON: every finding kind must appear as an instant event")
ap.add_argument("--seq", help="FROM:TO: every collective slice is at a position in [FROM, TO)")
a = ap.parse_args()

doc = json.load(open(a.trace))
events = doc["traceEvents"] if isinstance(doc, dict) else doc
if not isinstance(events, list) or not events:
    fail("no traceEvents")

proc_names = collections.Counter()
thread_names = set()
slices = collections.defaultdict(list)  # (pid, tid) -> [(ts, end)]
stacks = collections.defaultdict(list)
flows = collections.defaultdict(list)
instants = []
for i, e in enumerate(events):
    ph = e.get("ph")
    if ph is None or "pid" not in e:
        fail("event %d has no ph or pid: %r" % (i, e))
    key = (e["pid"], e.get("tid"))
    if ph == "M":
        if e["name"] == "process_name":
            proc_names[e["pid"]] += 1
            if not e["args"].get("name"):
                fail("process %s has an empty name" % e["pid"])
        elif e["name"] == "thread_name":
            thread_names.add(key)
        continue
    ts = e.get("ts")
    if not isinstance(ts, (int, float)):
        fail("event %d has no numeric ts: %r" % (i, e))
    if ph == "X":
        dur = e.get("dur")
        if not isinstance(dur, (int, float)) or dur < 0:
            fail("complete event %d has no dur >= 0: %r" % (i, e))
        if not e.get("name"):
            fail("slice %d has no name" % i)
        slices[key].append((ts, ts + dur))
        if a.seq and e.get("cat") == "collective":
            lo, hi = (int(x) for x in a.seq.split(":"))
            if not lo <= e["args"]["seq"] < hi:
                fail("slice %d at position %s, outside --seq %s" % (i, e["args"]["seq"], a.seq))
    elif ph == "B":
        stacks[key].append(ts)
    elif ph == "E":
        if not stacks[key]:
            fail("E without B at event %d" % i)
        b = stacks[key].pop()
        if ts < b:
            fail("E before its B at event %d" % i)
        slices[key].append((b, ts))
    elif ph in ("s", "t", "f"):
        flows[(e.get("cat"), e["id"])].append((ph, key, ts, e.get("bp")))
    elif ph == "i":
        instants.append(e)
    else:
        fail("unexpected phase %r at event %d" % (ph, i))

for key, st in stacks.items():
    if st:
        fail("B without E on %r" % (key,))
pids = set(k[0] for k in slices)
if sorted(proc_names) != list(range(a.ranks)):
    fail("process names for pids %s, want 0..%d" % (sorted(proc_names)[:20], a.ranks - 1))
if any(n != 1 for n in proc_names.values()):
    fail("a process is named more than once")
if not pids <= set(proc_names):
    fail("slices in unnamed processes: %s" % sorted(pids - set(proc_names)))
for key in slices:
    if key not in thread_names:
        fail("slices on unnamed thread %r" % (key,))

for key in slices:
    slices[key].sort()


def enclosed(key, ts):
    # A flow event binds to a slice of its own thread that encloses its timestamp.
    s = slices.get(key, [])
    lo, hi = 0, len(s)
    while lo < hi:
        mid = (lo + hi) // 2
        if s[mid][0] <= ts:
            lo = mid + 1
        else:
            hi = mid
    return lo > 0 and s[lo - 1][0] <= ts <= s[lo - 1][1]


for fid, evs in flows.items():
    phases = [p for p, _, _, _ in evs]
    if phases.count("s") != 1 or phases.count("f") != 1:
        fail("flow %r does not pair up: %s" % (fid, phases))
    for p, key, ts, bp in evs:
        if not enclosed(key, ts):
            fail("flow %r step %s at %s is not inside a slice of %r" % (fid, p, ts, key))
        if p != "s" and bp != "e":
            fail("flow %r step %s does not bind to its enclosing slice" % (fid, p))

if len(instants) < a.findings:
    fail("%d instant events, want at least %d" % (len(instants), a.findings))
if a.check:
    kinds = set(f["kind"] for f in json.load(open(a.check))["findings"])
    got = set(e["name"] for e in instants)
    if not kinds <= got:
        fail("findings %s have no instant event" % sorted(kinds - got))
print("trace ok: %d events, %d ranks, %d slices, %d flows, %d instants" % (
    len(events), len(proc_names), sum(len(v) for v in slices.values()), len(flows), len(instants)))
