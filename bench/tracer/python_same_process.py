# What tracing adds to an MPI call made from a Python frame, measured inside one process, where the
# other ways of measuring it compare separate processes whose speeds differ by more than the tracer
# costs on this kind of machine. The same call, by ctypes from the same loop, through its intercepted
# name (MPI_Send: traced, its call site read from this frame) and through its profiling name
# (PMPI_Send, which the tracer does not intercept), in alternating loops; each name's best loop, and
# their difference per call. One double on COMM_SELF: MPI_Allreduce, and MPI_Send + MPI_Recv to self.
#   python3 python_same_process.py [CALLS] [ROUNDS]
import ctypes
import sys
import time

from mpi4py import MPI

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
lib = ctypes.CDLL(None)  # the process's own symbols: the tracer's MPI_* first when it is preloaded
comm = ctypes.c_void_p(MPI._handleof(MPI.COMM_SELF))
double = ctypes.c_void_p(MPI._handleof(MPI.DOUBLE))
op = ctypes.c_void_p(MPI._handleof(MPI.SUM))
a = (ctypes.c_double * 1)(1.0)
b = (ctypes.c_double * 1)(0.0)
status = ctypes.create_string_buffer(256)  # larger than any MPI_Status


def bind(prefix):
    send, recv, allreduce = (getattr(lib, prefix + name) for name in ("MPI_Send", "MPI_Recv", "MPI_Allreduce"))
    p, i = ctypes.c_void_p, ctypes.c_int
    send.argtypes = [p, i, p, i, i, p]
    recv.argtypes = [p, i, p, i, i, p, p]
    allreduce.argtypes = [p, p, i, p, p, p]
    return send, recv, allreduce


def allreduce_loop(fns):
    allreduce = fns[2]
    for _ in range(n):
        allreduce(a, b, 1, double, op, comm)


def p2p_loop(fns):
    send, recv = fns[0], fns[1]
    for _ in range(n):
        send(a, 1, double, 0, 7, comm)
        recv(b, 1, double, 0, 7, comm, status)


names = {"P": bind("P"), "": bind("")}
best = {}
for _ in range(rounds):
    for what, loop, calls in (("Allreduce", allreduce_loop, n), ("Send/Recv", p2p_loop, 2 * n)):
        for prefix, fns in names.items():
            t0 = time.perf_counter_ns()
            loop(fns)
            dt = (time.perf_counter_ns() - t0) / calls
            key = (what, prefix)
            best[key] = min(best.get(key, dt), dt)
for what in ("Allreduce", "Send/Recv"):
    base, traced = best[(what, "P")], best[(what, "")]
    print("%s %.1f %.1f %.1f" % (what, base, traced, traced - base))
