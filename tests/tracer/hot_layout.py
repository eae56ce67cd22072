#!/usr/bin/env python3
"""tracer.hot_layout: the data every intercepted call reads stays packed (docs/tracer.md, "Hot data
together"). Each global the record path reads lies in the library's `lockstep_hot` section, and they span
at most three cache lines (g_config counted by the fields a call reads, before its job id); the thread's
state is one TLS block of at most three cache lines on a cache-line boundary, and the recent Python call
sites one line. A global that loses LOCKSTEP_HOT_DATA, or a field that grows the block, fails here
instead of costing a call made between other work a line or a GOT entry more, which no timing in a test
would catch.
    hot_layout.py LIBRARY"""
import subprocess
import sys

GLOBALS = {"g_live_writer", "g_tracing_off", "g_comm_gen", "g_writer_gen", "g_ns_per_tick_q32",
           "g_reanchor_ticks", "g_tsc_per_cpu", "g_rseq_offset", "g_mpi_state", "g_trace_p2p", "g_fortran",
           "g_python_state", "g_fast", "g_count_reads", "g_config"}
# Defined only where the tracer reads Python's frames itself (python_frame.c built with Python's headers).
OPTIONAL = {"runtime_"}
READ_PER_CALL = {"g_config": 32}  # dir, the rank and size hints, ring, stack frames, the stats switches


def main(lib):
    sections = subprocess.run(["readelf", "-SW", lib], check=True, capture_output=True, text=True).stdout
    hot = None
    for line in sections.splitlines():
        f = line.replace("[ ", "[").split()
        if "lockstep_hot" in f:
            i = f.index("lockstep_hot")
            hot = (int(f[i + 2], 16), int(f[i + 4], 16))
    if hot is None:
        print(f"FAIL: {lib} has no lockstep_hot section")
        return 1
    syms = subprocess.run(["nm", "-S", "-C", lib], check=True, capture_output=True, text=True).stdout
    found, t_hot, t_recent = {}, None, None
    for line in syms.splitlines():
        f = line.split(maxsplit=3)
        if len(f) < 4 or len(f[2]) != 1:
            continue  # undefined, or without a size
        addr, size, kind, name = int(f[0], 16), int(f[1], 16), f[2], f[3]
        short = name.rsplit("::", 1)[-1]
        if kind in "dDbB" and short in GLOBALS | OPTIONAL:
            found[short] = (addr, READ_PER_CALL.get(short, size))
        elif name == "lockstep::trace::t_hot":
            t_hot = (addr, size)
        elif short == "t_recent":
            t_recent = (addr, size)
    status = 0
    for g in sorted(GLOBALS - found.keys()):
        print(f"FAIL: no data symbol {g} in {lib}")
        status = 1
    lines = set()
    for g, (addr, size) in sorted(found.items()):
        if addr < hot[0] or addr + size > hot[0] + hot[1]:
            print(f"FAIL: {g} at {addr:#x} is outside lockstep_hot ({hot[0]:#x}-{hot[0] + hot[1]:#x})")
            status = 1
        lines.update(range(addr // 64, (addr + size - 1) // 64 + 1))
    if len(lines) > 3:
        print(f"FAIL: the hot globals span {len(lines)} cache lines, want at most 3")
        status = 1
    for name, block, most in (("t_hot", t_hot, 192), ("t_recent", t_recent, 64)):
        if block is None:
            print(f"FAIL: no thread block {name} in {lib}")
            status = 1
        elif block[1] > most or block[0] % 64:
            print(f"FAIL: {name} is {block[1]} bytes at TLS offset {block[0]}: want at most {most}, 64-byte aligned")
            status = 1
    if status == 0:
        print(f"ok: {len(found)} hot globals in {len(lines)} cache lines of lockstep_hot; t_hot {t_hot[1]} bytes, "
              f"t_recent {t_recent[1]}")
    return status


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: hot_layout.py LIBRARY")
    sys.exit(main(sys.argv[1]))
