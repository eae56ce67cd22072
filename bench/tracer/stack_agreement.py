#!/usr/bin/env python3
"""The stacks of two traced runs of one job, compared record by record (stack_agreement.sh): for each rank,
the records that have STACK records, in order, as (operation, frames), each frame as its module and
offset (`lockstep show --no-symbolize --format json`, so address-space layout does not matter). Prints
per rank how many there are in each run and how many are identical, and the first difference.
Exit status 1 when any differs.
    stack_agreement.py A.json B.json"""
import json
import sys


def stacks(path):
    per_rank = {}
    for f in json.load(open(path))["traces"]:
        frames = {}
        for r in f["records"]:
            if r["kind"] == "stack":
                frames.setdefault(r["ref"], []).extend((s.get("module"), s.get("offset")) for s in r["call_site"])
        per_rank[f["rank"]] = [(r.get("op"), tuple(frames[r["id"]]))
                               for r in f["records"] if r["kind"] != "stack" and r["id"] in frames]
    return per_rank


def main(a_path, b_path):
    a, b = stacks(a_path), stacks(b_path)
    status = 0
    total = same = 0
    for rank in sorted(set(a) | set(b)):
        x, y = a.get(rank, []), b.get(rank, [])
        n = sum(1 for i in range(min(len(x), len(y))) if x[i] == y[i])
        total += max(len(x), len(y))
        same += n
        print(f"rank {rank}: {len(x)} and {len(y)} records with stacks, {n} identical")
        if n != len(x) or n != len(y):
            status = 1
            i = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
            print(f"  first difference at record {i}: {x[i] if i < len(x) else None} / {y[i] if i < len(y) else None}")
    print(f"all ranks: {same} of {total} identical")
    return status


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: stack_agreement.py A.json B.json")
    sys.exit(main(sys.argv[1], sys.argv[2]))
