"""What the lint tests on the runtime's examples share: finding a line of the example by its text, and
running `lockstep lint --format json` on the example with the runtime's include paths."""
import json
import os
import subprocess
import sys


def line_of(lines, needle):
    hits = [i + 1 for i, text in enumerate(lines) if needle in text]
    if len(hits) != 1:
        sys.exit(f"FAILED: expected one line containing {needle!r} in the example, found {hits}")
    return hits[0]


def example(root, name):
    """The example's path and its lines."""
    src = os.path.join(root, "runtime", "examples", name)
    return src, open(src).read().splitlines()


def lint_findings(lockstep, root, src):
    """Lints one example and returns its findings; exits FAILED unless lint exits 1 (findings)."""
    p = subprocess.run([lockstep, "lint", "--format", "json", src, "--", "-std=c++20",
                        "-I" + os.path.join(root, "runtime", "include"), "-I" + os.path.join(root, "tracer", "include")],
                       capture_output=True, text=True)
    if p.returncode != 1:
        sys.exit(f"FAILED: expected exit 1 (findings), got {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)["findings"]
