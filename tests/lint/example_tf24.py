#!/usr/bin/env python3
"""`lockstep lint` on the runtime's TF 2.4 example (runtime/examples/tf24_mixed_precision.cc): the buggy
variant's gradient allreduce is the one finding, with notes at the finiteness decision; the fixed
variant's allreduce and every other collective of the example are not flagged.
Usage: example_tf24.py LOCKSTEP REPO_ROOT"""
import os
import sys

from example_lint import example, line_of, lint_findings


def main():
    lockstep, root = sys.argv[1], os.path.abspath(sys.argv[2])
    src, lines = example(root, "tf24_mixed_precision.cc")
    buggy = line_of(lines, "skipped on overflow")
    decision = line_of(lines, "if (finite) {")
    finiteness = line_of(lines, "= all_finite(")
    fixed = [i + 1 for i, t in enumerate(lines) if "rt::allreduce(kGradNames[l], m.grads[l].data()" in t]
    findings = lint_findings(lockstep, root, src)
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
