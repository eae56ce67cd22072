#!/usr/bin/env python3
"""`lockstep lint` on the runtime's early-stopping example (runtime/examples/early_stopping.cc): the one
finding is the buggy variant's training loop (its call in main, with the note at the rank-local stopping
test); the fixed variant, which stops on the averaged loss, gets no finding and no note.
Usage: example_early_stopping.py LOCKSTEP REPO_ROOT"""
import os
import sys

from example_lint import example, line_of, lint_findings


def main():
    lockstep, root = sys.argv[1], os.path.abspath(sys.argv[2])
    src, lines = example(root, "early_stopping.cc")
    call = line_of(lines, "? train_buggy(")
    decision = line_of(lines, "// BUG: a rank-local value decides")
    fixed_from, fixed_to = line_of(lines, "int train_fixed("), line_of(lines, "int main(")
    findings = lint_findings(lockstep, root, src)
    where = [(f["location"]["line"], f["rule"]) for f in findings]
    if where != [(call, "conditional-collective")]:
        sys.exit(f"FAILED: expected only the buggy loop's call at line {call}, got {where}")
    notes = [(n["location"]["line"], n["message"]) for n in findings[0]["notes"]]
    if not any(line == decision and "condition" in msg for line, msg in notes):
        sys.exit(f"FAILED: no note at the buggy stopping test (line {decision}): {notes}")
    if any(fixed_from <= line < fixed_to for line, _ in notes):
        sys.exit(f"FAILED: a note points into the fixed variant (lines {fixed_from}-{fixed_to - 1}): {notes}")
    print(f"ok: buggy loop flagged at its call (line {call}) with the note at line {decision}; "
          f"fixed variant (lines {fixed_from}-{fixed_to - 1}) clean")


if __name__ == "__main__":
    main()
