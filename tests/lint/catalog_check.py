#!/usr/bin/env python3
"""The lint catalogs (rules/*.yaml) against what the tracer intercepts and names, both ways.

The tracer's list is read from its sources so that it cannot drift: every `WRAP_EXPORT <type> NAME(`
definition in any tracer/src file (robust to functions moving between files), and the operation and
communicator tables of tracer/format/src/names.cc (MPI_X, MPI_Ix, ncclX). The runtime's collectives are
the `Handle`-returning functions of runtime/include/lockstep/rt.h.
Usage: catalog_check.py SOURCE_ROOT"""
import glob
import os
import re
import sys

import yaml

# Intercepted but not collectives: completion calls, point-to-point, process start and abort.
NOT_COLLECTIVES = {
    "MPI_Init", "MPI_Init_thread", "MPI_Abort", "MPI_Request_free", "MPI_Wait", "MPI_Waitall", "MPI_Waitany",
    "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "ncclSend", "ncclRecv",
}
P2P_OPS = {"send", "recv", "probe"}
# MPI point-to-point calls the tracer records for hang analysis (mpi_p2p.cc): not collectives either.
P2P_CALL = re.compile(r"^MPI_(I?[BSR]?send|I?M?recv|I?M?probe|Sendrecv(_replace)?)$", re.IGNORECASE)
# Catalogued collectives the tracer does not intercept (yet): matched by family.
UNTRACED = [re.compile(p) for p in (r"^MPI_\w+_init$", r"^MPI_I?[Nn]eighbor_\w+$")]


def main():
    root = sys.argv[1]
    catalog = set()
    for path in glob.glob(os.path.join(root, "rules", "*.yaml")):
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
        catalog |= {c["name"] for c in doc.get("collectives", [])}

    wrapped = set()
    for path in glob.glob(os.path.join(root, "tracer", "src", "**", "*.cc"), recursive=True):
        with open(path) as f:
            text = f.read()
        wrapped |= set(re.findall(r"WRAP_EXPORT\s+[\w\s\*]*?\b((?:MPI|nccl)\w+)\s*\(", text))
        # Wrappers of one shape are defined by a macro (SEND_MODE(MPI_Send, MPI_Isend)): the names given
        # to a macro whose body holds WRAP_EXPORT are wrapped too.
        for macro in re.findall(r"^#define\s+(\w+)\((?:[^\n]*\\\n)*?[^\n]*WRAP_EXPORT", text, re.M):
            for args in re.findall(r"^" + macro + r"\(([^)]*)\)", text, re.M):
                wrapped |= set(re.findall(r"\b((?:MPI_|nccl)[A-Z]\w*)", args))
    if len(wrapped) < 40:
        sys.exit(f"only {len(wrapped)} WRAP_EXPORT definitions found: has the tracer's wrapper macro changed?")

    with open(os.path.join(root, "tracer", "format", "src", "names.cc")) as f:
        names = f.read()
    named = set()
    for neutral, mpi, nccl in re.findall(r'\{"(\w+)",\s*(?:"(\w+)"|nullptr),\s*(?:"(\w+)"|nullptr)\}', names):
        if neutral in P2P_OPS or neutral == "unknown":
            continue
        if mpi:
            named |= {"MPI_" + mpi, "MPI_I" + mpi[0].lower() + mpi[1:]}
        if nccl:
            named.add("nccl" + nccl)
    named |= {api for _, api in re.findall(r'\{"(\w+)",\s*"((?:MPI_Comm|MPI_Cart|MPI_Graph|MPI_Intercomm|ncclComm)\w*)"\}',
                                           names)}
    if len(named) < 30:
        sys.exit(f"only {len(named)} names parsed from names.cc: has its table format changed?")
    traced = {n for n in (wrapped | named) - NOT_COLLECTIVES if not P2P_CALL.match(n)}

    with open(os.path.join(root, "runtime", "include", "lockstep", "rt.h")) as f:
        rt_header = f.read()
    rt = {"lockstep::rt::" + n for n in re.findall(r"LOCKSTEP_RT_API\s+Handle\s+(\w+)\s*\(", rt_header)}
    rt_declared = set(re.findall(r"LOCKSTEP_RT_API\s+[\w:<>]+\s+(\w+)\s*\(", rt_header))

    failures = []
    for name in sorted(traced - catalog):
        failures.append(f"{name}: the tracer intercepts it, but no rules/*.yaml lists it as a collective")
    for name in sorted(rt - catalog):
        failures.append(f"{name}: a runtime collective (returns a Handle) missing from rules/runtime.yaml")
    for name in sorted(catalog - traced):
        if name.startswith("lockstep::rt::"):
            if name.split("::")[-1] not in rt_declared:
                failures.append(f"{name}: catalogued, but rt.h declares no such function")
        elif name.startswith(("MPI_", "nccl")) and not any(p.match(name) for p in UNTRACED) \
                and name != "MPI_Finalize":
            failures.append(f"{name}: catalogued, but the tracer neither intercepts nor names it")
    for f in failures:
        print("MISMATCH", f)
    if failures:
        sys.exit(f"{len(failures)} catalog mismatch(es)")
    print(f"ok: {len(traced)} traced collectives, {len(rt)} runtime collectives, {len(catalog)} catalogued")


if __name__ == "__main__":
    main()
