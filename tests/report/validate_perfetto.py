#!/usr/bin/env python3
"""Structural check of a Perfetto protobuf trace written by `lockstep export --format perfetto`, with a
protobuf wire-format decoder of its own (no Perfetto code): one process track per rank and every slice on
a track under one, every interned id defined on its packet sequence before use, timestamps on a sequence's incremental clock
added up from its clock snapshot, begin/end pairs well formed per track, every flow id on slices of at
least two ranks, the findings as instant events; with --chrome, every slice at the same absolute times
as in the JSON export of the same traces.
usage: validate_perfetto.py TRACE --ranks N [--findings K] [--check CHECK.json] [--seq FROM:TO]
                            [--raw DECODE_RAW.txt] [--chrome TRACE.json]"""
import argparse
import collections
import json
import struct
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def varint(buf, pos):
    shift = value = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def fields(buf):
    """A message's fields as {number: [values]}: ints for varint/fixed, bytes for length-delimited."""
    out = collections.defaultdict(list)
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise ValueError("field number 0")
        if wire == 0:
            v, pos = varint(buf, pos)
        elif wire == 1:
            if pos + 8 > len(buf):
                raise ValueError("truncated fixed64")
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("length-delimited field runs past its message")
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wire == 5:
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError("wire type %d" % wire)
        out[num].append(v)
    return out


def one(f, num, default=None):
    v = f.get(num)
    return v[-1] if v else default


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--findings", type=int, default=0, help="instant events expected at least")
ap.add_argument("--check", help="the check's JSON: every finding kind must appear as an instant event")
ap.add_argument("--seq", help="FROM:TO: every collective slice is at a position in [FROM, TO)")
ap.add_argument("--raw", help="protoc --decode_raw's output of the same file: same number of packets")
ap.add_argument("--chrome", help="the JSON export of the same traces: every slice at the same times")
a = ap.parse_args()

data = open(a.trace, "rb").read()
try:
    top = fields(data)
except ValueError as e:
    fail("not a protobuf message: %s" % e)
if set(top) != {1}:
    fail("a Trace holds only packets (field 1), got fields %s" % sorted(top))
packets = top[1]

tracks = {}  # uuid -> (parent, name, pid)
state = {}  # sequence -> {"names", "args", "strings", "sites", "track", "clock", "clocks"}
stacks = collections.defaultdict(list)  # track -> [(begin ts, slice key)]
times = {}  # (pid, track name, seq arg) -> (begin ns, end ns)
BOOTTIME = 6
absolute = 0  # packets on a sequence with an incremental clock that give an absolute time instead
slices = collections.Counter()
flows = collections.defaultdict(set)  # flow id -> {track}
instants = []
events = []
for n, raw in enumerate(packets):
    try:
        p = fields(raw)
    except ValueError as e:
        fail("packet %d: %s" % (n, e))
    if 60 in p:
        d = fields(one(p, 60))
        uuid = one(d, 1)
        if uuid is None:
            fail("packet %d: a track descriptor without uuid" % n)
        if uuid in tracks:
            fail("track %d described twice" % uuid)
        proc = fields(one(d, 3)) if 3 in d else None
        pid = one(proc, 1) if proc is not None else None
        name = (one(proc, 6) if proc is not None else one(d, 2)) or b""
        tracks[uuid] = (one(d, 5), name.decode(), pid)
        continue
    seq = one(p, 10)
    flags = one(p, 13, 0)
    if flags & 1:  # incremental state cleared
        if seq is None:
            fail("packet %d clears the state of no sequence" % n)
        state[seq] = {"names": {}, "args": {}, "strings": {}, "sites": {}, "track": None, "clock": None,
                      "clocks": {}}
    if 59 in p:
        if seq not in state:
            fail("packet %d sets defaults on a sequence without incremental state" % n)
        defaults = fields(one(p, 59))
        if 11 in defaults:
            state[seq]["track"] = one(fields(one(defaults, 11)), 11)
        state[seq]["clock"] = one(defaults, 58)
    if 6 in p:
        # A clock snapshot: a sequence-scoped clock (64-127) is related to BOOTTIME, the trace clock.
        clocks = {}
        for c in fields(one(p, 6)).get(1, []):
            c = fields(c)
            clocks[one(c, 1)] = (one(c, 2, 0), one(c, 3, 0))
        if BOOTTIME not in clocks:
            fail("packet %d: a clock snapshot without BOOTTIME" % n)
        for cid, (value, incremental) in clocks.items():
            if 64 <= cid < 128:
                if seq not in state:
                    fail("packet %d: a sequence clock snapshot on a sequence without state" % n)
                # [time on the sequence clock, its offset to the trace clock, incremental]
                state[seq]["clocks"][cid] = [value, clocks[BOOTTIME][0] - value, incremental]
    ts = one(p, 8)
    if ts is not None:
        clock = one(p, 58, state[seq]["clock"] if seq in state else None)
        if clock is not None and 64 <= clock < 128:
            c = state.get(seq, {}).get("clocks", {}).get(clock)
            if c is None:
                fail("packet %d: timestamp on sequence clock %d, which no snapshot defined" % (n, clock))
            c[0] = c[0] + ts if c[2] else ts
            ts = c[0] + c[1]
        elif clock not in (None, BOOTTIME):
            fail("packet %d: timestamp on clock %d" % (n, clock))
        elif seq in state and state[seq]["clock"] is not None:
            absolute += 1
    if 12 in p:
        if seq not in state:
            fail("packet %d interns data on a sequence without incremental state" % n)
        st = state[seq]
        interned = fields(one(p, 12))
        for num, table in ((2, "names"), (3, "args"), (29, "strings")):
            for e in interned.get(num, []):
                e = fields(e)
                st[table][one(e, 1)] = one(e, 2, b"").decode()
        for e in interned.get(4, []):
            e = fields(e)
            st["sites"][one(e, 1)] = (one(e, 2, b"").decode(), one(e, 4, 0))
    if 11 not in p:
        continue
    ev = fields(one(p, 11))
    if ts is None:
        fail("packet %d: a track event without timestamp" % n)
    st = state.get(seq)
    if st is None:
        fail("packet %d: a track event on sequence %s without incremental state" % (n, seq))
    track = one(ev, 11, st["track"])
    if track not in tracks:
        fail("packet %d: event on undescribed track %s" % (n, track))
    name = one(ev, 23)
    if 10 in ev:
        iid = one(ev, 10)
        if iid not in st["names"]:
            fail("packet %d: event name iid %d not interned on sequence %d" % (n, iid, seq))
        name = st["names"][iid]
    elif name is not None:
        name = name.decode()
    if 34 in ev and one(ev, 34) not in st["sites"]:
        fail("packet %d: source location iid %d not interned" % (n, one(ev, 34)))
    args = {}
    for da in ev.get(4, []):
        da = fields(da)
        key = one(da, 1)
        if key not in st["args"]:
            fail("packet %d: annotation name iid %s not interned" % (n, key))
        if 17 in da:
            if one(da, 17) not in st["strings"]:
                fail("packet %d: string iid %d not interned" % (n, one(da, 17)))
            value = st["strings"][one(da, 17)]
        elif 6 in da:
            value = one(da, 6).decode()
        elif 3 in da:
            value = one(da, 3)
        elif 4 in da:
            value = signed(one(da, 4))
        else:
            fail("packet %d: annotation %s without value" % (n, st["args"][key]))
        args[st["args"][key]] = value
    kind = one(ev, 9)
    if kind == 1:
        if not name:
            fail("packet %d: a slice without name" % n)
        stacks[track].append((ts, (tracks[track][1], args.get("seq"))))
        for fid in ev.get(47, []) + ev.get(36, []):  # flow_ids (fixed64), flow_ids_old (varint)
            flows[fid].add(track)
        if a.seq and "seq" in args:
            lo, hi = (int(x) for x in a.seq.split(":"))
            if not lo <= args["seq"] < hi:
                fail("slice at position %s, outside --seq %s" % (args["seq"], a.seq))
    elif kind == 2:
        if not stacks[track]:
            fail("packet %d: slice end without begin on track %d" % (n, track))
        begin, key = stacks[track].pop()
        if ts < begin:
            fail("packet %d: slice ends before it begins" % n)
        slices[track] += 1
        times[(track,) + key] = (begin, ts)
    elif kind == 3:
        instants.append(name)
    else:
        fail("packet %d: event type %s" % (n, kind))

for track, st in stacks.items():
    if st:
        fail("%d slices never end on track %d" % (len(st), track))


def process_of(uuid):
    seen = set()
    while uuid is not None and uuid not in seen:
        seen.add(uuid)
        parent, _, pid = tracks.get(uuid, (None, None, None))
        if pid is not None:
            return pid
        uuid = parent
    return None


pids = collections.Counter(t[2] for t in tracks.values() if t[2] is not None)
if sorted(pids) != list(range(a.ranks)):
    fail("process tracks for pids %s, want 0..%d" % (sorted(pids)[:20], a.ranks - 1))
if any(c != 1 for c in pids.values()):
    fail("a rank has more than one process track")
for uuid, (parent, name, pid) in tracks.items():
    if pid is None and uuid != 0:
        if process_of(uuid) is None:
            fail("track %d (%s) is under no process" % (uuid, name))
        if not name:
            fail("track %d has no name" % uuid)
    elif pid is not None and not name:
        fail("process %d has no name" % pid)
for track in slices:
    if process_of(track) is None:
        fail("slices on track %d under no process" % track)
for fid, on in flows.items():
    ranks = set(process_of(t) for t in on)
    if len(ranks) < 2:
        fail("flow %#x joins no two ranks (%s)" % (fid, sorted(ranks)))

if len(instants) < a.findings:
    fail("%d instant events, want at least %d" % (len(instants), a.findings))
if a.check:
    kinds = set(f["kind"] for f in json.load(open(a.check))["findings"])
    if not kinds <= set(instants):
        fail("findings %s have no instant event" % sorted(kinds - set(instants)))
if a.chrome:
    # The JSON export writes absolute times in microseconds with nanosecond fractions.
    doc = json.load(open(a.chrome))
    thread = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"]
    want = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            # The protobuf timestamps are unsigned: a time before the job's origin is written as 0.
            t0 = round(e["ts"] * 1000)
            t1 = t0 + round(e["dur"] * 1000)
            want[(e["pid"], thread[(e["pid"], e["tid"])], e["args"]["seq"])] = (max(t0, 0), max(t1, 0))
    got = {(process_of(k[0]),) + k[1:]: v for k, v in times.items()}
    if set(got) != set(want):
        fail("slices in the JSON only: %s; in this trace only: %s" % (
            sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
    for k, v in got.items():
        if v != want[k]:
            fail("slice %s at %s ns here, %s ns in the JSON" % (k, v, want[k]))
if a.raw:
    # protoc --decode_raw prints each top-level field as "1 {" at the start of a line.
    raw_packets = sum(1 for line in open(a.raw) if line.startswith("1 {"))
    if raw_packets != len(packets):
        fail("protoc --decode_raw sees %d packets, this decoder %d" % (raw_packets, len(packets)))
print("perfetto trace ok: %d packets, %d ranks, %d tracks, %d slices, %d flows, %d instants, "
      "%d absolute timestamps" % (len(packets), len(pids), len(tracks), sum(slices.values()), len(flows),
                                  len(instants), absolute))
