#!/usr/bin/env python3
"""Precision and recall of `lockstep lint` on the annotated corpus (tests/lint/corpus: expected findings
are its CHECK-MESSAGES annotations) and on this repository's own sources (every finding judged in
bench/lint/self_verdicts.json).

  bench/lint/precision.py --lockstep build/bin/lockstep --build-dir build [--self-json FILE]

--self-json reuses the JSON of an earlier `lockstep lint -p build --format json` run (the whole
database takes minutes). Exits 1 when a finding on the own sources has no verdict, so the figure
never silently counts an unjudged finding."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lint"))
import run_corpus  # noqa: E402  (annotation parser and LINT-ARGS grouping)


def corpus_counts(lockstep):
    corpus = os.path.join(ROOT, "tests", "lint", "corpus")
    include = os.path.join(ROOT, "tests", "lint", "include")
    files = sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if f.endswith((".c", ".cc", ".cpp", ".cu")))
    if not run_corpus.cuda_available():
        files = [f for f in files if not f.endswith(".cu")]
    groups = {}
    for path in files:
        m = run_corpus.LINT_ARGS.search(open(path, encoding="utf-8").read())
        groups.setdefault(m.group(1).strip().rstrip("*/").strip() if m else "", []).append(path)
    found = []
    for extra, group in sorted(groups.items()):
        p = subprocess.run([lockstep, "lint", "-j", "2", "--format", "json", *extra.split(), *group, "--",
                            "-I" + include], capture_output=True, text=True)
        found += json.loads(p.stdout)["findings"]
    tp = fp = fn = 0
    for path in files:
        warnings, _ = run_corpus.parse_expectations(path)
        mine = [f for f in found if os.path.realpath(f["location"]["file"]) == os.path.realpath(path)]
        for w in warnings:
            hit = next((f for f in mine if f["location"]["line"] == w["line"] and f["rule"] == w["rule"] and
                        f["location"]["column"] == w["column"]), None)
            if hit:
                tp += 1
                mine.remove(hit)
            else:
                fn += 1
        fp += len(mine)
    return len(files), tp, fp, fn


def self_counts(lockstep, build_dir, self_json):
    if self_json:
        report = json.load(open(self_json))
    else:
        p = subprocess.run([lockstep, "lint", "-p", build_dir, "-j", "2", "--format", "json"],
                           capture_output=True, text=True)
        report = json.loads(p.stdout)
    verdicts = json.load(open(os.path.join(HERE, "self_verdicts.json")))["verdicts"]
    used = [0] * len(verdicts)
    true_found = false_found = 0
    unjudged = []
    for f in report["findings"]:
        path = os.path.relpath(os.path.realpath(f["location"]["file"]), ROOT)
        try:
            text = open(os.path.join(ROOT, path)).read().splitlines()[f["location"]["line"] - 1]
        except (OSError, IndexError):
            text = ""
        match = next((i for i, v in enumerate(verdicts) if v["file"] == path and v["rule"] in ("", f["rule"])
                      and v["line_text"] in text), None)
        if match is None:
            unjudged.append(f"{path}:{f['location']['line']}: {f['message']} [{f['rule']}]")
            continue
        used[match] += 1
        if verdicts[match]["verdict"]:
            true_found += 1
        else:
            false_found += 1
    missed = [v for v, n in zip(verdicts, used) if v["verdict"] and n == 0]
    return true_found, false_found, unjudged, missed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lockstep", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--self-json")
    a = ap.parse_args()
    n, tp, fp, fn = corpus_counts(a.lockstep)
    print(f"corpus ({n} files): {tp + fp} findings, {tp} expected, {fp} unexpected, {fn} expected but missing: "
          f"precision {tp / max(1, tp + fp):.3f}, recall {tp / max(1, tp + fn):.3f}")
    t, f, unjudged, missed = self_counts(a.lockstep, a.build_dir, a.self_json)
    print(f"own sources: {t + f} findings, {t} true, {f} false: precision {t / max(1, t + f):.3f}; "
          f"true findings judged earlier and now missing: {len(missed)}")
    for v in missed:
        print(f"  missing: {v['file']} [{v['rule'] or 'any rule'}] {v['why']}")
    for u in unjudged:
        print(f"  unjudged: {u}")
    return 1 if unjudged else 0


if __name__ == "__main__":
    sys.exit(main())
