#!/usr/bin/env python3
"""Validates `lockstep check` reports: JSON against docs/check-output.schema.json, SARIF against the
official SARIF 2.1.0 schema (OASIS, tests/check/schemas/), JUnit XML with a JUnit structure check
(xml.etree: testsuites > testsuite > testcase, counts that add up, failures with type and message)."""
import json
import sys
import xml.etree.ElementTree as ET

import jsonschema


def check_junit(path, expect_failures):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    suites = root.findall("testsuite")
    assert len(suites) == 1, "one test suite"
    total = failures = 0
    for s in suites:
        cases = s.findall("testcase")
        assert int(s.get("tests")) == len(cases), "tests attribute counts the test cases"
        nf = sum(1 for c in cases if c.find("failure") is not None)
        assert int(s.get("failures")) == nf, "failures attribute counts the failed cases"
        assert int(s.get("errors")) == 0
        for c in cases:
            assert c.get("name") and c.get("classname"), "test cases are named"
            for f in c.findall("failure"):
                assert f.get("type") and f.get("message"), "failures carry type and message"
        total += len(cases)
        failures += nf
    assert int(root.get("tests")) == total and int(root.get("failures")) == failures
    assert (failures > 0) == expect_failures, f"{failures} failed test cases"
    return failures


def main():
    json_report, sarif_report, junit_report, json_schema, sarif_schema, expect = sys.argv[1:7]
    bad = expect != "clean"
    with open(json_schema) as f:
        jsonschema.validate(json.load(open(json_report)), json.load(f))
    with open(sarif_schema) as f:
        schema = json.load(f)
    log = json.load(open(sarif_report))
    jsonschema.Draft7Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    report = json.load(open(json_report))
    assert len(results) == len(report["findings"]), "one SARIF result per finding"
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    for r in results:
        assert r["ruleId"] in rules and rules[r["ruleIndex"]] == r["ruleId"]
        assert r["locations"], "every result has a location"
    assert (len(results) > 0) == bad
    failed = check_junit(junit_report, bad)
    kinds = sorted({f["kind"] for f in report["findings"]})
    if expect == "hang":
        assert report["findings"][-1]["kind"] == "hang", kinds
        assert "deadlock_cycle" in kinds, kinds
        assert any(e["message"] for e in report["hang"]["wait_for"]), "a message edge in the wait-for graph"
        assert results[-1]["ruleId"] == "hang"
        case = [c for c in ET.parse(junit_report).getroot().iter("testcase") if c.get("name") == "hang"]
        assert case and case[0].find("failure") is not None, "the JUnit hang test case fails"
    print(f"ok: {len(results)} SARIF results, {failed} failed JUnit test cases, kinds {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
