#!/usr/bin/env python3
"""Lint benchmark: `lockstep lint` time per translation unit against `clang++-19 -fsyntax-only` with the
same flags, measured in the same run (best of --repeat).

  bench/lint/run.py --lockstep build/bin/lockstep --build-dir build [--repeat 3] [--jobs 2]

1. a generated 10,000-line TU (bench/lint/gen_tu.py, fake MPI header from tests/lint/include), -j1, then
   one 16k-line function and one 5,000-arm else-if chain (bench/lint/gen_long.py);
2. the project's own sources listed in BUILD_DIR/compile_commands.json, both sides with --jobs workers.
Both sides get the compile command's flags plus -Wno-everything (lint adds it so compiler warnings stay
out of its report) and Clang 19's resource directory."""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLANG = "clang++-19"


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def syntax_only_args(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [CLANG], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a == entry["file"]:
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wno-everything", entry["file"]]


def run_checked(cmd, cwd=None, ok=(0,)):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode not in ok:
        sys.exit(f"{shlex.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lockstep", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    include = os.path.join(ROOT, "tests", "lint", "include")

    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.cc")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tu.py"), big, "10000"], check=True)
        lines = sum(1 for _ in open(big))
        flags = ["-std=c++17", "-I" + include]
        t_clang = best(lambda: run_checked([CLANG, "-fsyntax-only", "-Wno-everything", *flags, big]), a.repeat)
        t_lint = best(lambda: run_checked([a.lockstep, "lint", "-j", "1", big, "--", *flags], ok=(0, 1)), a.repeat)
        print(f"generated TU ({lines} lines): clang -fsyntax-only {t_clang:.3f} s, lockstep lint {t_lint:.3f} s, "
              f"ratio {t_lint / t_clang:.2f}x")
        # Long functions: lint's time should grow about linearly with function size.
        for label, kind, n in (("16k-line function", "lines", 16000), ("5,000-arm else-if chain", "elseif", 5000)):
            path = os.path.join(tmp, kind + ".cc")
            subprocess.run([sys.executable, os.path.join(HERE, "gen_long.py"), path, kind, str(n)], check=True)
            t_clang = best(lambda: run_checked([CLANG, "-fsyntax-only", "-Wno-everything", *flags, path]), a.repeat)
            t_lint = best(lambda: run_checked([a.lockstep, "lint", "-j", "1", path, "--", *flags], ok=(0, 1)),
                          a.repeat)
            print(f"{label}: clang -fsyntax-only {t_clang:.3f} s, lockstep lint {t_lint:.3f} s, "
                  f"ratio {t_lint / t_clang:.2f}x")

    with open(os.path.join(a.build_dir, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if e["file"].endswith((".c", ".cc", ".cpp"))]
    # Only sources that Clang can parse on this machine (the same set for both sides).
    files = sorted({e["file"] for e in entries})
    by_file = {e["file"]: e for e in entries}

    def syntax_all():
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            list(pool.map(lambda f: run_checked(syntax_only_args(by_file[f]), cwd=by_file[f]["directory"],
                                                ok=(0, 1)), files))

    t_clang = best(syntax_all, a.repeat)
    t_lint = best(lambda: run_checked([a.lockstep, "lint", "-p", a.build_dir, "-j", str(a.jobs), *files],
                                      ok=(0, 1, 2)), a.repeat)
    n = len(files)
    print(f"project sources ({n} TUs, -j{a.jobs}): clang -fsyntax-only {t_clang:.2f} s ({t_clang / n * 1000:.0f} ms/TU), "
          f"lockstep lint {t_lint:.2f} s ({t_lint / n * 1000:.0f} ms/TU), ratio {t_lint / t_clang:.2f}x")


if __name__ == "__main__":
    main()
