#!/usr/bin/env python3
"""Asserts what the HTML report shows, from the DOM that headless Chromium dumped after the page's
script ran (ids and data- attributes are the report's contract, docs/report.md).
usage: check_dom.py DOM.html [--clean] [--kind K ...] [--culprits 2] [--culprit-lane 2] [--gap-lane 2]
                    [--cycle 0>1 ...] [--look-here 3] [--source-line N] [--max-lanes N] [--ranks N]
                    [--absent TEXT ...]"""
import argparse
import html
import html.parser
import re
import sys


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.els = []
        self.stack = []
        self.text = {}

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        d["_tag"] = tag
        d["_classes"] = set((d.get("class") or "").split())
        d["_text"] = []
        d["_parents"] = [p for p in self.stack]
        self.els.append(d)
        if tag not in ("br", "img", "meta", "link", "input", "path", "rect", "circle") or True:
            self.stack.append(d)

    def handle_endtag(self, tag):
        while self.stack:
            e = self.stack.pop()
            if e["_tag"] == tag:
                break

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_data(self, data):
        for e in self.stack:
            e["_text"].append(data)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


ap = argparse.ArgumentParser()
ap.add_argument("dom")
ap.add_argument("--clean", action="store_true")
ap.add_argument("--kind", action="append", default=[],
                help="the highlighted finding is of one of these kinds")
ap.add_argument("--culprits", help="the highlighted finding's culprits, comma separated")
ap.add_argument("--culprit-lane", type=int, help="this rank's lane is marked as the culprit's")
ap.add_argument("--gap-lane", type=int, help="this rank's lane shows a gap for the skipped call")
ap.add_argument("--cycle", action="append", default=[], help="FROM>TO: a red wait-for edge")
ap.add_argument("--look-here", help="ranks marked 'look at rank N'")
ap.add_argument("--source-line", type=int, help="a finding shows this source line highlighted")
ap.add_argument("--max-lanes", type=int, help="lanes drawn, at most (aggregated lanes)")
ap.add_argument("--ranks", type=int, help="every rank covered by the lanes of the first communicator")
ap.add_argument("--time-axis", type=int, help="the page is on the time axis and this rank's lanes have calls")
ap.add_argument("--absent", action="append", default=[], help="text the page must not show anywhere")
a = ap.parse_args()

dom = Dom()
dom.feed(open(a.dom, encoding="utf-8").read())
els = dom.els
body = [e for e in els if e["_tag"] == "body"]
if not body or body[0].get("data-rendered") != "true":
    fail("the page's script did not finish (no data-rendered on body)")
verdict = [e for e in els if e.get("id") == "verdict"]
if not verdict:
    fail("no verdict")
vtext = "".join(verdict[0]["_text"])
findings = [e for e in els if e["_tag"] == "li" and "finding" in e["_classes"]]
lanes = [e for e in els if e["_tag"] == "g" and "lane" in e["_classes"]]
print("verdict:", vtext)
print("findings:", [(f.get("data-kind"), f.get("data-seq"), f.get("data-culprits")) for f in findings])

if a.clean:
    if "IN LOCKSTEP" not in vtext or "ok" not in verdict[0]["_classes"]:
        fail("the verdict is not IN LOCKSTEP")
    if findings:
        fail("findings listed for a clean job")
    if any(e.get("data-culprit") == "true" for e in lanes):
        fail("a lane is marked as a culprit's in a clean job")

hl = [f for f in findings if f.get("data-highlighted") == "true"]
if a.kind:
    if len(hl) != 1:
        fail("%d highlighted findings, want 1" % len(hl))
    if "selected" not in hl[0]["_classes"]:
        fail("the highlighted finding is not drawn as selected")
    if hl[0].get("data-kind") not in a.kind:
        fail("highlighted finding is %s, want one of %s" % (hl[0].get("data-kind"), a.kind))
    if not any(e.get("id") == "divergence" for e in els) and hl[0].get("data-kind") != "deadlock_cycle":
        fail("no divergence column drawn for the highlighted finding")
if a.culprits is not None and (not hl or hl[0].get("data-culprits") != a.culprits):
    fail("highlighted culprits %r, want %r" % (hl[0].get("data-culprits") if hl else None, a.culprits))
if a.culprit_lane is not None:
    marked = [e for e in lanes if e.get("data-culprit") == "true"]
    if not any(e.get("data-rank") == str(a.culprit_lane) for e in marked):
        fail("rank %d's lane is not marked as the culprit's (marked: %s)" % (
            a.culprit_lane, [e.get("data-rank") for e in marked]))
    if any(e.get("data-rank") not in (a.culprits or str(a.culprit_lane)).split(",") for e in marked):
        fail("lanes of ranks that are not culprits are marked: %s" % [e.get("data-rank") for e in marked])
    labels = [e for e in els if e["_tag"] == "text" and "culprit" in e["_classes"]]
    if not any(("rank %d" % a.culprit_lane) == "".join(t["_text"]).strip() for t in labels):
        fail("rank %d's lane label is not drawn as the culprit's" % a.culprit_lane)
if a.gap_lane is not None:
    gaps = [e for e in els if e["_tag"] == "rect" and "gap" in e["_classes"]]
    if not any(g["_parents"] and g["_parents"][-1].get("data-rank") == str(a.gap_lane) for g in gaps):
        fail("no gap drawn in rank %d's lane" % a.gap_lane)
for c in a.cycle:
    f, t = c.split(">")
    edges = [e for e in els if e["_tag"] == "g" and "edge" in e["_classes"] and e.get("data-from") == f
             and e.get("data-to") == t]
    if not edges:
        fail("no wait-for edge %s -> %s" % (f, t))
    if edges[0].get("data-cycle") != "true" or "cycle" not in edges[0]["_classes"]:
        fail("edge %s -> %s is not drawn as part of the cycle" % (f, t))
    label = "".join(edges[0]["_text"])
    if edges[0].get("data-seq") == "-1":  # a message: named by its call, no position of its own
        if not label.startswith("MPI_") or "#" in label or " on " not in label:
            fail("edge %s -> %s has no message label: %r" % (f, t, label))
    elif "#" not in label or " on " not in label:
        fail("edge %s -> %s has no collective label: %r" % (f, t, label))
    print("edge %s -> %s: %s" % (f, t, label))
if a.cycle:
    red = [e for e in els if e["_tag"] == "g" and e.get("data-cycle") == "true"]
    if len(red) != len(a.cycle):
        fail("%d red edges, want %d" % (len(red), len(a.cycle)))
if a.look_here is not None:
    lh = [e for e in els if e.get("id") == "look-here"]
    if not lh or lh[0].get("data-ranks") != a.look_here:
        fail("look-here %r, want %r" % (lh[0].get("data-ranks") if lh else None, a.look_here))
if a.source_line is not None:
    hits = [e for e in els if e["_tag"] == "span" and "hit" in e["_classes"]]
    if not any(e.get("data-line") == str(a.source_line) for e in hits):
        fail("no finding shows source line %d (shown: %s)" % (
            a.source_line, [e.get("data-line") for e in hits]))
if a.max_lanes is not None and not 0 < len(lanes) <= a.max_lanes:
    fail("%d lanes drawn, want 1..%d" % (len(lanes), a.max_lanes))
if a.ranks is not None:
    first = [e for e in lanes if e.get("data-comm") == "0"]
    covered = set()
    for e in first:
        for part in e.get("data-ranks", "").split(","):
            lo, _, hi = part.partition("-")
            covered.update(range(int(lo), int(hi or lo) + 1))
    if covered != set(range(a.ranks)):
        fail("the first communicator's lanes cover %d ranks, want %d" % (len(covered), a.ranks))
if a.time_axis is not None:
    toggle = [e for e in els if e.get("id") == "axis-toggle"]
    if not toggle or toggle[0].get("data-axis") != "time":
        fail("the page is not on the time axis")
    calls = [e for e in els if e["_tag"] == "rect" and "call" in e["_classes"] and e["_parents"]
             and e["_parents"][-1].get("data-rank") == str(a.time_axis)]
    if not calls:
        fail("no calls drawn on the time axis in rank %d's lanes" % a.time_axis)
    print("time axis: %d calls in rank %d's lanes" % (len(calls), a.time_axis))
if a.absent:
    # What a reader sees: the rendered text, without the page's script and style.
    raw = open(a.dom, encoding="utf-8").read()
    page = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", raw, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    for t in a.absent:
        if t in text:
            at = text.index(t)
            fail("the page shows %r: ...%s..." % (t, " ".join(text[max(0, at - 80):at + 40].split())))
print("dom ok: %d lanes, %d findings" % (len(lanes), len(findings)))
