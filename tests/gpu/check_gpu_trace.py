#!/usr/bin/env python3
"""Checks the traces of tests/gpu/nccl_all_collectives.cc for tests/gpu/run.sh, from
`lockstep show --format json --no-symbolize DIR`:

  check_gpu_trace.py interposed JSON K [--kernel-times]   the first K NCCL collectives COMPLETED, each with a
                                                          DEVICE record; with --kernel-times, the ones that
                                                          ran a kernel or a copy carry its start and end
  check_gpu_trace.py plugin JSON                          profiler-plugin records: communicator from NCCL,
                                                          tasks numbered 0, 1, ... on it, marked inferred
  check_gpu_trace.py inferred JSON                        NCCL called past the interposer: collectives
                                                          inferred from kernel names, with kernel times
Prints one line per collective and a verdict; exit 0 when the checks hold, 1 otherwise.
"""
import json
import sys

INFERRED = 0x04
# Calls of nccl_all_collectives.cc, in order, that make the device do something it can time on one rank
# (a kernel or a copy); the in-place group member (index 12) does nothing on the device.
TIMED = set(range(12))


def load(path):
    with open(path) as f:
        data = json.load(f)
    traces = data["traces"]
    if len(traces) != 1:
        raise SystemExit(f"check_gpu_trace: {path}: {len(traces)} traces, want 1")
    return traces[0]["records"]


def devices_by_ref(recs):
    out = {}
    for r in recs:
        if r["kind"] == "device":
            out.setdefault(r["ref"], []).append(r)
    return out


def show(i, r, devs):
    times = ", ".join(
        f"kernel/copy {(d['end_ns'] - d['start_ns']) / 1000:.1f}us" if d["start_ns"] else "event completed"
        for d in devs) or "no device record"
    print(f"  {i:3d} {r['op']:<18} seq={r['seq']:<4} {r['state']:<10} {times}")


def interposed(recs, k, kernel_times):
    errors = []
    colls = [r for r in recs if r["kind"] == "collective" and r["api"] == "nccl" and not r["flags"] & INFERRED]
    devs = devices_by_ref(recs)
    if len(colls) < k:
        return [f"{len(colls)} NCCL collectives recorded, want at least {k}"]
    for i, r in enumerate(colls[:k]):
        d = devs.get(r["id"], [])
        show(i, r, d)
        if r["state"] != "completed":
            errors.append(f"collective {i} ({r['op']}) is {r['state']}, not completed")
        if not d:
            errors.append(f"collective {i} ({r['op']}) has no DEVICE record")
        elif any(x["end_ns"] < r["t_ns"] for x in d):
            errors.append(f"collective {i} ({r['op']}) finished on the device before it was called")
        timed = [(x["start_ns"], x["end_ns"]) for x in d if x["start_ns"]]
        if any(start < r["t_ns"] for start, _ in timed):
            errors.append(f"collective {i} ({r['op']}) has a kernel or copy that started before it was called")
        if len(set(timed)) != len(timed):
            errors.append(f"collective {i} ({r['op']}) has one kernel or copy twice")
        if kernel_times and i not in TIMED and timed:
            errors.append(f"collective {i} ({r['op']}) does nothing on the device but carries kernel/copy times")
        if kernel_times and i in TIMED and not any(x["start_ns"] and x["end_ns"] >= x["start_ns"] for x in d):
            errors.append(f"collective {i} ({r['op']}) carries no kernel/copy times")
    rest = colls[k:]
    if rest:
        done = sum(1 for r in rest if r["state"] == "completed")
        print(f"  benchmark calls: {len(rest)} recorded, {done} completed on the device")
        if done < len(rest):
            errors.append(f"{len(rest) - done} benchmark calls not completed although the program synchronized")
    return errors


def plugin(recs):
    errors = []
    comms = {r["comm"]: r for r in recs if r["kind"] == "comm" and r["flags"] & INFERRED}
    colls = [r for r in recs if r["kind"] == "collective" and r["flags"] & INFERRED]
    devs = devices_by_ref(recs)
    names = [f"{c:#x} (rank {r['rank']} of {r['size']})" for c, r in comms.items()]
    print("  communicators from NCCL: " + (", ".join(names) or "none"))
    if not comms:
        errors.append("no communicator reported by the plugin")
    if not colls:
        errors.append("no task recorded by the plugin")
    seqs = {}
    for i, r in enumerate(colls):
        show(i, r, devs.get(r["id"], []))
        if r["comm"] not in comms:
            errors.append(f"task {i} on communicator {r['comm']:#x}, which the plugin never reported")
        want = seqs.get(r["comm"], 0)
        if r["seq"] != want:
            errors.append(f"task {i} numbered {r['seq']}, want {want}")
        seqs[r["comm"]] = want + 1
        if r["state"] == "entered":
            errors.append(f"task {i} ({r['op']}) was never stopped by NCCL")
    done = [r for r in colls if r["state"] == "completed"]
    print(f"  {len(done)} of {len(colls)} tasks completed on the device (kernel channel events)")
    if colls and not done:
        print("  WARNING: NCCL reported no kernel channel events; tasks stay 'returned'")
    return errors


def inferred(recs):
    errors = []
    intercepted = [r for r in recs if r["kind"] == "collective" and r["api"] == "nccl" and not r["flags"] & INFERRED]
    colls = [r for r in recs if r["kind"] == "collective" and r["flags"] & INFERRED]
    devs = devices_by_ref(recs)
    if intercepted:
        errors.append(f"{len(intercepted)} collectives intercepted although NCCL was called past the interposer")
    if not colls:
        errors.append("no collective inferred from NCCL kernel names")
    for i, r in enumerate(colls):
        d = devs.get(r["id"], [])
        show(i, r, d)
        if not r["name"].startswith(("ncclDevKernel_", "ncclKernel_", "ncclSymkDevKernel_")):
            errors.append(f"inferred collective {i} named {r['name']!r}, not an NCCL kernel")
        if r["state"] != "completed" or not any(x["start_ns"] and x["end_ns"] >= x["start_ns"] for x in d):
            errors.append(f"inferred collective {i} lacks its kernel times")
    return errors


def main(argv):
    if len(argv) < 3 or argv[1] not in ("interposed", "plugin", "inferred"):
        print(__doc__, file=sys.stderr)
        return 2
    recs = load(argv[2])
    if argv[1] == "interposed":
        errors = interposed(recs, int(argv[3]), "--kernel-times" in argv[4:])
    elif argv[1] == "plugin":
        errors = plugin(recs)
    else:
        errors = inferred(recs)
    for e in errors:
        print(f"  FAIL: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
