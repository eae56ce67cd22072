#!/usr/bin/env python3
"""`lockstep lint` on the runtime's early-stopping example (runtime/examples/early_stopping.cc): the one
finding is the buggy variant's training loop (its call in main, with the note at the rank-local stopping
test); the fixed variant, which stops on the averaged loss, gets no finding and no note.
Usage: example_early_stopping.py LOCKSTEP REPO_ROOT"""
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
    src = os.path.join(root, "runtime", "examples", "early_stopping.cc")
    lines = open(src).read().splitlines()
    call = line_of(lines, "? train_buggy(")
    decision = line_of(lines, "// BUG: a rank-local value decides")
    fixed_from, fixed_to = line_of(lines, "int train_fixed("), line_of(lines, "int main(")
    p = subprocess.run([lockstep, "lint", "--format", "json", src, "--", "-std=c++20",
                        "-I" + os.path.join(root, "runtime", "include"), "-I" + os.path.join(root, "tracer", "include")],
                       capture_output=True, text=True)
    if p.returncode != 1:
        sys.exit(f"FAILED: expected exit 1 (findings), got {p.returncode}\n{p.stderr}")
    findings = json.loads(p.stdout)["findings"]
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
