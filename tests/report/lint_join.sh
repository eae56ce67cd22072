#!/usr/bin/env bash
# `check --lint` on the TF 2.4 buggy run's traces: the finding that blames the overflowing rank carries
# lint's reason (the rank-local condition and its origin) in text, JSON, SARIF and the HTML report;
# without compile flags it says so and reports as before.
# usage: lint_join.sh WORKDIR LOCKSTEP BUILD_DIR EXAMPLE_SOURCE
set -uo pipefail
work=$1 lockstep=$2 build=$3 source=$4
traces=$work/traces
fail() { echo "FAIL: $*"; exit 1; }
[ -d "$traces" ] || fail "no traces in $work"
line=$(grep -n "skipped on overflow" "$source" | cut -d: -f1)
cond=$(grep -n "if (finite) {" "$source" | head -1 | cut -d: -f1)
[ -n "$line" ] && [ -n "$cond" ] || fail "marker lines not found in $source"

"$lockstep" check "$traces" --lint -p "$build" --format json -o "$work/lint.json" 2> "$work/lint.err"
[ $? = 1 ] || fail "check --lint exited $?, want 1"
cat "$work/lint.err"
grep -q "joined to a lint finding" "$work/lint.err" || fail "check --lint does not say what it joined"
python3 - "$work/lint.json" "$line" "$cond" <<'PY' || fail "no finding carries lint's reason"
import json, sys
report = json.load(open(sys.argv[1]))
line, cond = int(sys.argv[2]), int(sys.argv[3])
hits = [f for f in report["findings"] if f.get("static") and f["culprits"] == [2]]
if not hits:
    print(json.dumps(report["findings"], indent=1)[:3000]); sys.exit(1)
for f in hits:
    s = f["static"]
    assert s["rule"] == "conditional-collective", s
    assert s["line"] == line, s
    assert any(n["line"] == cond and "condition" in n["message"] for n in s["notes"]), s["notes"]
    assert "line %d" % cond in s["summary"] and "rank-local" in s["summary"], s["summary"]
    print("static:", f["kind"], "#%d" % f["seq"], s["summary"])
PY
"$lockstep" check "$traces" --lint -p "$build" > "$work/lint.txt" 2>/dev/null
grep -q "static: the call runs only where" "$work/lint.txt" || fail "the text report shows no static reason"
"$lockstep" check "$traces" --lint -p "$build" --format sarif -o "$work/lint.sarif" 2>/dev/null
python3 - "$work/lint.sarif" "$cond" <<'PY' || fail "SARIF has no lint related locations"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
cond = int(sys.argv[2])
rel = [l for r in run["results"] for l in r.get("relatedLocations", [])
       if l["message"]["text"].startswith("lint")]
assert any(l["physicalLocation"]["region"]["startLine"] == cond for l in rel), rel
assert all("static" in r["properties"] for r in run["results"] if any(
    l["message"]["text"].startswith("lint") for l in r.get("relatedLocations", [])))
print("sarif: %d lint related locations" % len(rel))
PY
"$lockstep" report "$traces" --lint -p "$build" -o "$work/lint.html" 2>/dev/null
grep -q '"static":{' "$work/lint.html" || fail "the HTML report carries no static reason"
# Without flags: said, and the report is the one without --lint.
"$lockstep" check "$traces" --lint --format json -o "$work/nolint.json" 2> "$work/nolint.err"
grep -q "no compile flags" "$work/nolint.err" || fail "check --lint without flags does not say so"
"$lockstep" check "$traces" --format json -o "$work/plain.json"
cmp -s "$work/nolint.json" "$work/plain.json" || fail "check --lint without flags changed the report"
echo "lint join ok"
