#!/usr/bin/env python3
"""Checks the STACK records of tests/tracer/mpi_stack_many.c after offline symbolization by `lockstep
show --format json`: call i's site is `leaf` and its seven extra frames are step[d6] ... step[d0], the
octal digits of i from the innermost frame out, whichever way the frames were stored. Each call's
frames must be one STACK record (two frames and a frame list) or several of two frames each, and both
ways must occur: where the tracer's table of frame lists has no room for a new list (a stack whose
neighbourhood of the table is full, then every stack once it is), the frames go into records of their
own, and nothing is lost.
  stack_many.py SHOW_JSON NRANKS CALLS"""
import json
import sys


def main():
    doc = json.load(open(sys.argv[1]))
    nranks, calls = int(sys.argv[2]), int(sys.argv[3])
    files = sorted(doc["traces"], key=lambda f: f["rank"])
    if len(files) != nranks:
        sys.exit(f"stack_many: {len(files)} trace files, want {nranks}")
    for f in files:
        rank = f["rank"]
        stacks = {}  # record id -> [frames of each of its STACK records]
        for r in f["records"]:
            if r["kind"] == "stack":
                stacks.setdefault(r["ref"], []).append([s.get("function", "?") for s in r["call_site"]])
        colls = [r for r in f["records"] if r["kind"] == "collective" and r["op"] == "MPI_Allreduce"]
        if len(colls) != calls:
            sys.exit(f"stack_many: rank {rank}: {len(colls)} allreduce records, want {calls}")
        in_list = split = 0
        for i, r in enumerate(colls):
            site = [s.get("function", "?") for s in r["call_site"]]
            parts = stacks.get(r["id"], [])
            got = [fn for part in parts for fn in part]
            want = [f"step{(i >> 3 * j) & 7}" for j in range(6, -1, -1)]
            if site != ["leaf"] or got != want:
                sys.exit(f"stack_many: rank {rank} call {i}: site {site}, frames {got} in {len(parts)} "
                         f"STACK records; want ['leaf'], then {want}")
            if len(parts) == 1:
                in_list += 1
            elif all(len(p) <= 2 for p in parts):
                split += 1
            else:
                sys.exit(f"stack_many: rank {rank} call {i}: {len(parts)} STACK records of "
                         f"{[len(p) for p in parts]} frames, want one, or several of two")
        if in_list == 0 or split == 0:
            sys.exit(f"stack_many: rank {rank}: {in_list} calls with a frame list, {split} with split "
                     f"records: want both")
        print(f"stack_many: rank {rank}: {calls} calls, every stack as called; {in_list} with a frame "
              f"list, {split} in records of two frames")


main()
