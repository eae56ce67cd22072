#!/usr/bin/env bash
# tests/tracer/reused_text.c's annotations, read back by `lockstep show --format json`: every text the
# program wrote into its one buffer (or a second one) must be recorded as itself, in order.
#   reused_text.sh LOCKSTEP LIB PROGRAM PYTHON
set -euo pipefail
lockstep=$1 lib=$2 prog=$3 python=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$work/t "$prog" 3 >"$work/want.txt"
"$lockstep" show "$work/t" --format json >"$work/t.json"
"$python" - "$work/t.json" "$work/want.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
want = open(sys.argv[2]).read().splitlines()
records = doc["traces"][0]["records"]
got = [r["name"] for r in records if r["kind"] == "marker" and r["op"] == "annotation"]
if got != want:
    bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    sys.exit(f"reused_text: annotation {bad} is {got[bad] if bad < len(got) else None!r}, the program "
             f"annotated {want[bad] if bad < len(want) else None!r} ({len(got)} recorded, {len(want)} made)")
print(f"reused_text: {len(got)} annotations, each recorded as the program wrote it")
PY
