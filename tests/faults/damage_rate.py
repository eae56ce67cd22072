#!/usr/bin/env python3
"""Fault probe: single random byte overwrites of real traces, each run through `lockstep check`.

damage_rate.py LOCKSTEP TRACE_DIR WORK N SEED

Each trial copies the job's traces, overwrites one byte of one file with a different random value and
runs `lockstep check --no-symbolize`. Outcomes: "corruption" (exit 2 with one line naming the file and
a byte), "finding" (exit 1: damage read as a divergence), "clean" (exit 0: damage not noticed). Trials
are drawn from the regions the integrity checks cover (the header's fixed fields, every used metadata
byte) and from the records region (each record's 16-bit check, format 2.0); every region must be
reported as corruption in >= 99% of trials. A string's check is one byte, so 1 in 256 damaged strings
still passes it: such a trial is counted as a "collision" (the damaged string's check byte recomputed
here still matches), left out of the rate, and every other metadata trial must be reported as
corruption. The copy in WORK/trial is damaged in place and each byte put back after its trial.
"""
import os
import random
import re
import shutil
import struct
import subprocess
import sys

lockstep, traces, work, n, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
files = sorted(f for f in os.listdir(traces) if f.endswith(".lstrace"))
pristine = {f: open(os.path.join(traces, f), "rb").read() for f in files}


def regions(data):
    meta_offset, meta_slots, records_offset, capacity, meta_next, record_next = struct.unpack_from("<6Q", data, 24)
    header = [(8, 20), (24, 48), (80, 112), (128, 1312)]  # the fixed fields header_check covers
    # Every byte a metadata entry uses (word, length and payload of a string; the fields of a module),
    # not the padding up to the end of its last slot, which no reader looks at.
    meta, i, used = [], 0, min(meta_next, meta_slots)
    while i < used:
        at = meta_offset + i * 64
        word, length = struct.unpack_from("<II", data, at)
        if word == 0:
            break
        if (word >> 8) & 0xFF == 16:  # LST_KIND_STRING
            meta.append((at, at + 8 + length))
            i += (8 + length + 63) // 64
        else:
            meta.append((at, at + 44))  # word, path, base, lo, hi, build id, function and the check itself
            i += 1
    records = [(records_offset, records_offset + min(record_next, capacity) * 64)]
    return {"header": header, "metadata": meta, "records": records}


def pick(spans):
    total = sum(b - a for a, b in spans)
    k = rng.randrange(total)
    for a, b in spans:
        if k < b - a:
            return a + k
        k -= b - a


d = os.path.join(work, "trial")
shutil.rmtree(d, ignore_errors=True)
shutil.copytree(traces, d)


def poke(name, at, value):
    with open(os.path.join(d, name), "r+b") as f:
        f.seek(at)
        f.write(bytes([value]))


def fnv32(data, h=2166136261):
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def check_collides(data, at):
    """Whether a damaged byte at `at` leaves the check byte of the metadata string holding it matching
    (damage the one-byte check cannot see). Damage to a string's word is never such a collision."""
    meta_offset, meta_slots, _, _, meta_next, _ = struct.unpack_from("<6Q", data, 24)
    i, used = 0, min(meta_next, meta_slots)
    while i < used:
        start = meta_offset + i * 64
        word, length = struct.unpack_from("<II", data, start)
        if word == 0 or (word >> 8) & 0xFF != 16:
            i += 1
            continue
        end = start + 8 + length
        if start + 4 <= at < end:
            h = fnv32(data[start + 8:end], fnv32(struct.pack("<I", length)))
            return (word >> 16) & 0xFF == (h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24)) & 0xFF
        i += (8 + length + 63) // 64
    return False


def trial(region):
    name = rng.choice(files)
    at = pick(regions(pristine[name])[region])
    value = (pristine[name][at] + rng.randrange(1, 256)) % 256
    if region == "metadata":
        damaged = bytearray(pristine[name])
        damaged[at] = value
        if check_collides(damaged, at):
            return "collision"
    poke(name, at, value)
    try:
        p = subprocess.run([lockstep, "check", "--no-symbolize", d], capture_output=True, timeout=120)
    finally:
        poke(name, at, pristine[name][at])
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 2:
        if name in err and re.search(r"byte \d+", err) and err.count("\n") == 1:
            return "corruption"
        return "bad-message: " + err.strip()
    if p.returncode not in (0, 1):
        return "crash %d: %s" % (p.returncode, err.strip())
    return "finding" if p.returncode == 1 else "clean"


os.makedirs(work, exist_ok=True)
failed = False
for region in ("header", "metadata", "records"):
    counts = {}
    for _ in range(n):
        r = trial(region)
        counts[r] = counts.get(r, 0) + 1
    detected = counts.get("corruption", 0)
    detectable = n - counts.get("collision", 0)
    print("%-8s %d trials: %d reported as corruption (%.1f%%), %s" %
          (region, n, detected, 100.0 * detected / n,
           ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()) if k != "corruption") or "nothing else"))
    bad = [k for k in counts if k.startswith(("crash", "bad-message"))]
    if bad:
        print("  FAIL: " + "; ".join(bad))
        failed = True
    if detected < 0.99 * n and detected < detectable:
        print("  FAIL: %s damage must be reported as corruption in >= 99%% of trials, and every trial "
              "but a string check's collisions" % region)
        failed = True
sys.exit(1 if failed else 0)
