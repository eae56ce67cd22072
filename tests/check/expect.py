#!/usr/bin/env python3
"""Asserts what `lockstep check --format json` said about a scenario: exactly the expected finding
(kind, seq, culprits), or none; also validates the report against its JSON Schema. A job that
`lockstep run` stopped at --timeout (exit 124) must end with a `hang` finding, which is checked
apart from the expected one; a job that ended by itself has none unless --hung says it hung."""
import argparse
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--exit-code", type=int, required=True)
    ap.add_argument("--run-exit", type=int, default=None, help="exit code of lockstep run (124: timed out)")
    ap.add_argument("--hang-culprits", default=None, help="comma-separated culprits of the hang finding")
    ap.add_argument("--schema")
    ap.add_argument("--kind", help="the one finding expected; omit for a clean run")
    ap.add_argument("--seq", type=int)
    ap.add_argument("--culprits", default=None, help="comma-separated world ranks ('' for none)")
    ap.add_argument("--culprits-within", default=None,
                    help="comma-separated world ranks the culprits (at least one) must be among: for "
                         "jobs the launcher tears down, where a rank may be stopped before the call")
    ap.add_argument("--comm-name", default=None)
    ap.add_argument("--mispaired", action="store_true", help="expect the skip-and-continue note")
    ap.add_argument("--silently-wrong", action="store_true")
    ap.add_argument("--hung", action="store_true")
    ap.add_argument("--tie", action="store_true", help="expect no majority: the finding blames no rank")
    ap.add_argument("--min-collectives", type=int, default=0)
    ap.add_argument("--explains", default=None,
                    help="regular expression the finding's explanation must match")
    ap.add_argument("--warning", default=None,
                    help="regular expression one of the report's warnings must match")
    ap.add_argument("--note", default=None,
                    help="regular expression one of the finding's notes must match")
    ap.add_argument("--callers", action="append", default=[],
                    help="RANK=F1,F2,...: the post-mortem says RANK is blocked in a call whose frames "
                         "above the call site (LOCKSTEP_TRACE_STACK) name these functions, innermost first")
    ap.add_argument("--html", default=None,
                    help="the same check's HTML report: with --callers, its post-mortem must show each "
                         "rank's call site followed by those frames, as the JSON gives them")
    ap.add_argument("--text", default=None,
                    help="the same check's text report: its post-mortem must have a line for each rank of "
                         "the JSON's, saying what the rank is blocked in and how its process ended")
    a = ap.parse_args()

    with open(a.report) as f:
        report = json.load(f)
    problems = []
    if a.warning and not any(re.search(a.warning, w) for w in report["warnings"]):
        problems.append(f"no warning matches {a.warning!r}: {report['warnings']}")
    if a.schema:
        try:
            import jsonschema
            with open(a.schema) as f:
                jsonschema.validate(report, json.load(f))
        except ImportError:
            print("note: python3-jsonschema missing, schema not checked")
        except jsonschema.ValidationError as e:
            problems.append(f"report does not match its schema: {e.message} at {list(e.absolute_path)}")

    findings = report["findings"]
    hangs = [x for x in findings if x["kind"] == "hang"]
    timed_out = a.run_exit == 124
    if timed_out or a.hung:
        if len(hangs) != 1 or findings[-1]["kind"] != "hang":
            problems.append(f"expected one hang finding, last; got {[x['kind'] for x in findings]}")
        elif a.hang_culprits is not None:
            want = [int(x) for x in a.hang_culprits.split(",") if x != ""]
            if sorted(hangs[0]["culprits"]) != want:
                problems.append(f"hang culprits {hangs[0]['culprits']}, expected {want}")
        if a.exit_code != 1:
            problems.append(f"a hung job must exit 1, got {a.exit_code}")
    elif hangs:
        problems.append(f"unexpected hang finding: {hangs[0]['explanation']}")
    if a.kind != "hang":
        findings = [x for x in findings if x["kind"] != "hang"]
    if a.kind is None:
        if findings or (report["verdict"] != "in_lockstep" and not hangs):
            problems.append(f"expected no findings, got {[x['kind'] + ' #' + str(x['seq']) for x in findings]}")
        if a.exit_code != 0 and not hangs:
            problems.append(f"expected exit 0, got {a.exit_code}")
        if report["summary"]["collectives"] < a.min_collectives:
            problems.append(f"expected at least {a.min_collectives} collectives, got {report['summary']['collectives']}")
    else:
        if a.exit_code != 1:
            problems.append(f"expected exit 1, got {a.exit_code}")
        if len(findings) != 1:
            problems.append(f"expected exactly one finding, got {len(findings)}: "
                            f"{[x['kind'] + ' #' + str(x['seq']) + ' ' + x['explanation'] for x in findings]}")
        if findings:
            f = findings[0]
            if f["kind"] != a.kind:
                problems.append(f"kind {f['kind']}, expected {a.kind}")
            if a.seq is not None and f["seq"] != a.seq:
                problems.append(f"seq {f['seq']}, expected {a.seq}")
            if a.culprits is not None:
                want = [int(x) for x in a.culprits.split(",") if x != ""]
                if sorted(f["culprits"]) != want:
                    problems.append(f"culprits {f['culprits']}, expected {want}")
            if a.tie and (not f.get("tie") or f["culprits"]):
                problems.append(f"expected a tie with no culprits, got tie={f.get('tie')} culprits {f['culprits']}")
            if a.culprits_within is not None:
                allowed = {int(x) for x in a.culprits_within.split(",") if x != ""}
                if not f["culprits"] or not set(f["culprits"]) <= allowed:
                    problems.append(f"culprits {f['culprits']}, expected some of {sorted(allowed)}")
            if a.comm_name and f["communicator"]["name"] != a.comm_name:
                problems.append(f"communicator {f['communicator']['name']}, expected {a.comm_name}")
            if a.mispaired:
                if f.get("mispaired", 0) <= 0 or not any("wrong ones" in n for n in f["notes"]):
                    problems.append("no note about later collectives paired with the wrong ones")
            if a.explains and not re.search(a.explains, f["explanation"]):
                problems.append(f"explanation {f['explanation']!r} does not match {a.explains!r}")
            if a.note and not any(re.search(a.note, n) for n in f["notes"]):
                problems.append(f"no note matches {a.note!r}: {f['notes']}")
            if a.silently_wrong and not f.get("silently_wrong"):
                problems.append("not marked silently_wrong")
    if a.hung and not report["hang"]["hung"]:
        problems.append("expected the hang post-mortem to find blocked ranks")
    for spec in a.callers:
        rank, want = spec.split("=")
        state = next((x for x in report["hang"]["ranks"] if x["rank"] == int(rank)), None)
        got = [c.get("function", "?") for c in (state or {}).get("in", {}).get("callers", [])]
        if got[:len(want.split(","))] != want.split(","):
            problems.append(f"rank {rank} is blocked in a call whose callers are {got}, expected {want} first")
        if a.html and state:
            page = open(a.html, encoding="utf-8").read()
            data = json.loads(re.search(r'<script type="application/json" id="lockstep-data">(.*?)</script>',
                                        page, re.S).group(1))
            row = next((x for x in data["hang"]["ranks"] if x["rank"] == int(rank)), {})
            chain = " < ".join([state["in"]["call_site"]["text"]] +
                               [c["text"] for c in state["in"]["callers"] if c.get("function") in want.split(",")])
            if not row.get("site", "").startswith(chain):
                problems.append(f"the HTML report shows rank {rank} at {row.get('site')!r}, expected {chain!r} first")
    if a.text:
        problems += text_problems(open(a.text, encoding="utf-8").read(), report["hang"])
    for p in problems:
        print("FAIL:", p)
    if problems:
        print(json.dumps(report, indent=1)[:6000])
        return 1
    print("ok")
    return 0


def text_problems(text, hang):
    """The text post-mortem against the JSON's: printed when the job hung, with one line per rank,
    "blocked in OP ...; process: END" or "in no collective: END". A rank's end is looked up in /proc
    while its job is stopped, so one check may say "running" where the next says "killed"; any other
    difference is a problem."""
    lines = text.split("hang post-mortem (per rank):\n", 1)
    if (len(lines) == 2) != hang["hung"]:
        return [f"the text report {'has' if len(lines) == 2 else 'has no'} hang post-mortem, the JSON says "
                f"hung: {hang['hung']}"]
    if not hang["hung"]:
        return []
    ranks = hang["ranks"]
    post = {}
    for line in lines[1].splitlines():
        m = re.match(r"  rank (\d+) +(.*)$", line)
        if m:
            post[int(m.group(1))] = m.group(2)
    problems = []
    for st in ranks:
        line = post.get(st["rank"])
        if line is None:
            problems.append(f"the text post-mortem has no line for rank {st['rank']}")
            continue
        if st.get("blocked"):
            m = re.match(r"blocked in (\S+) .*; process: (\w+)", line)
            want_op = st["in"]["operation"]
        else:
            m = re.match(r"in no collective: (\w+)()", line)
            want_op = None
        if not m:
            problems.append(f"rank {st['rank']}'s text post-mortem line {line!r} does not say "
                            f"{'what it is blocked in and how its process ended' if want_op else 'how it ended'}")
            continue
        end = m.group(2) if want_op else m.group(1)
        if want_op and m.group(1) != want_op:
            problems.append(f"rank {st['rank']}'s text post-mortem line says {m.group(1)}, the JSON {want_op}")
        if end != st["end"] and "running" not in (end, st["end"]):
            problems.append(f"rank {st['rank']}'s text post-mortem line says its process {end}, the JSON "
                            f"{st['end']}")
    return problems


if __name__ == "__main__":
    sys.exit(main())
