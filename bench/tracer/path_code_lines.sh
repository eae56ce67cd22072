#!/usr/bin/env bash
# The tracer code one iteration of each intercepted path runs (bench/tracer/path_loop.c): under callgrind,
# the distinct instructions of the tracer library executed on every iteration (at least N times in the
# traced loop's N iterations), the 64-byte cache lines they lie in, and how many separate runs of
# consecutive lines those form. What a call made between other work fetches again from the level-2
# cache. Valgrind's clock path applies (docs/tracer.md, "What the simulation sees").
#   bench/tracer/path_code_lines.sh BUILD_DIR [LIB] [N] [PATHS...]
set -euo pipefail
export LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}
build=${1:?build dir}
lib=$(realpath "${2:-$build/lib/liblockstep_trace.so}")
n=${3:-2000}
shift $(($# < 3 ? $# : 3))
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(allreduce send_recv iallreduce_wait)
loop=$(realpath "$build/bench/tracer/bench_path_loop")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
for p in "${paths[@]}"; do
  rm -rf "$dir/t" "$dir/cg"
  LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/t valgrind --tool=callgrind --dump-instr=yes --collect-atstart=no \
    --toggle-collect="traced_$p" --callgrind-out-file="$dir/cg" "$loop" "$p" "$n" >/dev/null 2>"$dir/err" ||
    { cat "$dir/err" >&2; exit 1; }
  python3 - "$dir/cg" "$lib" "$n" "$p" <<'PY'
import collections, re, sys
path, lib, n, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
objects, current, addr, skip = {}, None, 0, False
count = collections.Counter()
for line in open(path):
    line = line.rstrip("\n")
    m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
    if m:  # an object, named at its first mention; ob= switches the current one
        if m.group(3):
            objects[m.group(2)] = m.group(3)
        if m.group(1) == "ob":
            current = objects.get(m.group(2))
        continue
    if line.startswith("calls="):  # the next cost line is the call's inclusive cost
        skip = True
        continue
    f = line.split()
    if not f or re.match(r"^[a-z]+[=:]", line):
        continue
    t = f[0]
    if t.startswith("0x"):
        addr = int(t, 16)
    elif t[0] in "+-":
        addr += int(t, 0) if t[1:].startswith("0x") else int(t)
    elif t != "*":
        continue
    if skip:
        skip = False
        continue
    if current == lib and len(f) > 1:
        count[addr] += int(f[-1])
hot = sorted(a for a, c in count.items() if c >= n)
lines = sorted({a // 64 for a in hot})
runs = sum(1 for i, l in enumerate(lines) if i == 0 or l != lines[i - 1] + 1)
print(f"{name:<20} {len(hot):5d} instructions  {len(lines):3d} cache lines  {runs:3d} runs of lines")
PY
done
