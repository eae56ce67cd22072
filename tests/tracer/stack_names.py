#!/usr/bin/env python3
"""Checks the STACK records of tests/tracer/mpi_stack.c after offline symbolization by `lockstep show
--format json`: every MPI_Allreduce record's call site is inner_level, and its extra frames name the
callers the program used for that call (middle_level, outer_level, main; other_path, main; or
middle_twin, outer_twin, main), and that each call's frames are one STACK record (format 2.2: the
frames past its first two in a frame list written once per distinct stack). With
REFERENCE_JSON (the same job unwound another way), every stack must also equal the reference's.
  stack_names.py SHOW_JSON NRANKS CALLS [REFERENCE_JSON]"""
import json
import sys


def stacks_by_call(f):
    """The allreduce records of one rank in call order: (call site functions, extra frame functions)."""
    stacks = {}
    for r in f["records"]:
        if r["kind"] == "stack":
            stacks.setdefault(r["ref"], []).extend(s.get("function", "?") for s in r["call_site"])
    return [([s.get("function", "?") for s in r["call_site"]], stacks.get(r["id"], []))
            for r in f["records"] if r["kind"] == "collective" and r["op"] == "MPI_Allreduce"]


def main():
    doc = json.load(open(sys.argv[1]))
    nranks, calls = int(sys.argv[2]), int(sys.argv[3])
    files = sorted(doc["traces"], key=lambda f: f["rank"])
    if len(files) != nranks:
        sys.exit(f"stack_names: {len(files)} trace files, want {nranks}")
    if len(sys.argv) > 4:
        ref = sorted(json.load(open(sys.argv[4]))["traces"], key=lambda f: f["rank"])
        for f, g in zip(files, ref):
            mine, theirs = stacks_by_call(f), stacks_by_call(g)
            if mine != theirs:
                diff = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b) \
                    if len(mine) == len(theirs) else min(len(mine), len(theirs))
                sys.exit(f"stack_names: rank {f['rank']}: call {diff} differs from the reference: "
                         f"{mine[diff] if diff < len(mine) else None} vs "
                         f"{theirs[diff] if diff < len(theirs) else None}")
    for f in files:
        per_call = {}
        for r in f["records"]:
            if r["kind"] == "stack":
                per_call[r["ref"]] = per_call.get(r["ref"], 0) + 1
        many = [ref for ref, n in per_call.items() if n != 1]
        if many:
            sys.exit(f"stack_names: rank {f['rank']}: {len(many)} calls with {per_call[many[0]]} STACK "
                     f"records (record {many[0]} the first), want one each")
        colls = stacks_by_call(f)
        if len(colls) != calls:
            sys.exit(f"stack_names: rank {f['rank']}: {len(colls)} allreduce records, want {calls}")
        for i, (site, got) in enumerate(colls):
            want = {4: ["other_path", "main"], 2: ["middle_twin", "outer_twin", "main"]}.get(
                i % 5, ["middle_level", "outer_level", "main"])
            if site != ["inner_level"] or got[:len(want)] != want:
                sys.exit(f"stack_names: rank {f['rank']} call {i}: site {site} frames {got}, "
                         f"want ['inner_level'] then {want}")
    print(f"stack_names: {nranks} ranks x {calls} calls: every stack names its callers")


main()
