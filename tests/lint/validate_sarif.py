#!/usr/bin/env python3
"""Validates `lockstep lint --format sarif` output (findings, notes, tool notifications) against the
official SARIF 2.1.0 JSON schema. Usage: validate_sarif.py LOCKSTEP TESTS_LINT_DIR"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema


def schema_path(here):
    for candidate in (os.path.join(here, "schemas", "sarif-schema-2.1.0.json"),
                      os.path.join(here, "..", "check", "schemas", "sarif-schema-2.1.0.json")):
        if os.path.exists(candidate):
            return candidate
    sys.exit("FAILED: sarif-schema-2.1.0.json not found")


def main():
    lockstep, here = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(schema_path(here)) as f:
        schema = json.load(f)
    validator = jsonschema.validators.validator_for(schema)(schema)
    corpus = os.path.join(here, "corpus")
    files = [os.path.join(corpus, f) for f in ("tf24_mpi.cc", "arguments_nccl.cc", "checkpoint_mpi.cc")]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "lint.sarif")
        # An empty compile_commands.json makes every file "missing", so notifications are exercised too.
        with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
            f.write("[]")
        env = dict(os.environ, CPATH=os.path.join(here, "include"))
        p = subprocess.run([lockstep, "lint", "-p", tmp, "--format", "sarif", "-o", out, *files],
                           capture_output=True, text=True, env=env)
        if p.returncode != 1:
            sys.exit(f"FAILED: expected exit 1 (findings), got {p.returncode}\n{p.stderr}")
        with open(out) as f:
            log = json.load(f)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    for e in errors[:10]:
        print("schema violation at", "/".join(map(str, e.path)), ":", e.message)
    if errors:
        sys.exit(f"FAILED: {len(errors)} schema violation(s)")
    run = log["runs"][0]
    results = run["results"]
    if not results or any("relatedLocations" not in r for r in results):
        sys.exit("FAILED: every result carries its notes as relatedLocations")
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    if any(rules[r["ruleIndex"]] != r["ruleId"] for r in results):
        sys.exit("FAILED: ruleIndex must point at the result's rule")
    if not run["invocations"][0].get("toolExecutionNotifications"):
        sys.exit("FAILED: the missing-compile-command notes are SARIF notifications")
    print(f"ok: {len(results)} results valid against SARIF 2.1.0")


if __name__ == "__main__":
    main()
