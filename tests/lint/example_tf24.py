#!/usr/bin/env python3
"""`lockstep lint` on the runtime's TF 2.4 example (runtime/examples/tf24_mixed_precision.cc): the buggy
variant's gradient allreduce is the one finding, with notes at the finiteness decision; the fixed
variant's allreduce and every other collective of the example are not flagged.
Usage: example_tf24.py LOCKSTEP REPO_ROOT"""
import json
import os
import subprocess
import sys


def line_of(lines, needle):
    hits = [i + 1 for i, text in enumerate(lines) if needle in text]
    if len(hits) != 1:
        sys.exit(f"FAILED: expected one line containing {needle!r} in the example, found {hits}")
    return hits[0]


def main():
    lockstep, root = sys.argv[1], os.path.abspath(sys.argv[2])
    src = os.path.join(root, "runtime", "examples", "tf24_mixed_precision.cc")
    lines = open(src).read().splitlines()
    buggy = line_of(lines, "skipped on overflow")
    decision = line_of(lines, "if (finite) {")
    finiteness = line_of(lines, "= all_finite(")
    fixed = [i + 1 for i, t in enumerate(lines) if "rt::allreduce(kGradNames[l], m.grads[l].data()" in t]
    p = subprocess.run([lockstep, "lint", "--format", "json", src, "--", "-std=c++20",
                        "-I" + os.path.join(root, "runtime", "include"), "-I" + os.path.join(root, "tracer", "include")],
                       capture_output=True, text=True)
    if p.returncode != 1:
        sys.exit(f"FAILED: expected exit 1 (findings), got {p.returncode}\n{p.stderr}")
    findings = json.loads(p.stdout)["findings"]
    where = [(f["location"]["line"], f["rule"]) for f in findings]
    if where != [(buggy, "conditional-collective")]:
        sys.exit(f"FAILED: expected only the buggy allreduce at line {buggy} (fixed one at {fixed}), got {where}")
    notes = {(n["location"]["line"], n["message"]) for n in findings[0]["notes"]}
    if not any(line == decision and "condition" in msg for line, msg in notes):
        sys.exit(f"FAILED: no note at the finiteness branch (line {decision}): {sorted(notes)}")
    if not any(line == finiteness and "all_finite" in msg for line, msg in notes):
        sys.exit(f"FAILED: no note at the finiteness test (line {finiteness}): {sorted(notes)}")
    print(f"ok: buggy allreduce at line {buggy} flagged with notes at lines {decision} and {finiteness}; "
          f"fixed allreduce at line {fixed} clean")


if __name__ == "__main__":
    main()
