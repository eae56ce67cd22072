#!/usr/bin/env python3
"""Lint corpus runner: every expected warning and note in tests/lint/corpus must be reported, and nothing else.

Usage: run_corpus.py LOCKSTEP CORPUS_DIR INCLUDE_DIR
Annotation syntax: tests/lint/README.md.
"""
import json
import os
import re
import subprocess
import sys

ANNOTATION = re.compile(
    r"CHECK-(MESSAGES|NOTES):\s*:\[\[@LINE([+-]\d+)?\]\]:(\d+):\s*(warning|note):\s*(.*?)\s*(?:\*/)?\s*$")
RULE = re.compile(r"^(.*?)\s*\[([a-z-]+)\]$")
LINT_ARGS = re.compile(r"LINT-ARGS:(.*)")


def cuda_available():
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "include", "cuda_runtime.h")):
            return True
    return False


def parse_expectations(path):
    warnings, notes = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, text in enumerate(f, start=1):
            m = ANNOTATION.search(text)
            if not m:
                if "CHECK-" in text:
                    sys.exit(f"{path}:{lineno}: malformed annotation")
                continue
            kind, offset, col, level, message = m.groups()
            line = lineno + int(offset or 0)
            if kind == "MESSAGES":
                r = RULE.match(message)
                if level != "warning" or not r:
                    sys.exit(f"{path}:{lineno}: CHECK-MESSAGES needs 'warning: <text> [rule-id]'")
                warnings.append({"line": line, "column": int(col), "text": r.group(1), "rule": r.group(2),
                                 "at": f"{os.path.basename(path)}:{lineno}"})
            else:
                notes.append({"line": line, "column": int(col), "text": message,
                              "at": f"{os.path.basename(path)}:{lineno}"})
    return warnings, notes


def main():
    lockstep, corpus, include = sys.argv[1:4]
    files = sorted(os.path.join(corpus, f) for f in os.listdir(corpus)
                   if f.endswith((".c", ".cc", ".cpp", ".cu")))
    if not cuda_available():
        skipped = [f for f in files if f.endswith(".cu")]
        for f in skipped:
            print(f"SKIP {os.path.basename(f)}: no CUDA toolkit")
        files = [f for f in files if not f.endswith(".cu")]
    # Files with a `LINT-ARGS: ...` line are linted in their own run with those extra options.
    groups = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            m = LINT_ARGS.search(f.read())
        groups.setdefault(m.group(1).strip().rstrip("*/").strip() if m else "", []).append(path)
    actual = []
    for extra, group in sorted(groups.items()):
        proc = subprocess.run([lockstep, "lint", "-j", "2", "--format", "json", *extra.split(), *group, "--",
                               "-I" + include], capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            print(proc.stderr)
            sys.exit(f"lockstep lint {extra} exited {proc.returncode} (expected 0 or 1)")
        found = json.loads(proc.stdout)["findings"]
        if proc.returncode != (1 if found else 0):
            sys.exit(f"exit code {proc.returncode} does not match {len(found)} finding(s)")
        actual += found
    failures = 0
    for path in files:
        before = failures
        real = os.path.realpath(path)
        warnings, notes = parse_expectations(path)
        mine = [f for f in actual if os.path.realpath(f["location"]["file"]) == real]
        unmatched = list(mine)
        for w in warnings:
            hit = next((f for f in unmatched if f["location"]["line"] == w["line"] and
                        f["location"]["column"] == w["column"] and f["rule"] == w["rule"] and
                        w["text"] in f["message"]), None)
            if hit is None:
                failures += 1
                print(f"MISSING {w['at']}: expected at line {w['line']}:{w['column']}: {w['text']} [{w['rule']}]")
            else:
                unmatched.remove(hit)
        for f in unmatched:
            failures += 1
            loc = f["location"]
            print(f"UNEXPECTED {os.path.basename(path)}:{loc['line']}:{loc['column']}: {f['message']} [{f['rule']}]")
        all_notes = [n for f in mine for n in f["notes"]]
        for n in notes:
            if not any(x["location"]["line"] == n["line"] and x["location"]["column"] == n["column"] and
                       n["text"] in x["message"] for x in all_notes):
                failures += 1
                print(f"MISSING NOTE {n['at']}: expected at line {n['line']}:{n['column']}: {n['text']}")
        print(f"{'FAIL' if failures > before else 'ok  '} {os.path.basename(path)}: {len(warnings)} expected, {len(mine)} reported")
    if failures:
        sys.exit(f"{failures} corpus mismatch(es)")


if __name__ == "__main__":
    main()
