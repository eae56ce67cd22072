# What the tracer adds to mpi4py's own methods, measured inside one process (python_same_process.py
# does it for calls made through ctypes; separate processes differ in speed by more than the tracer
# costs on a small virtual machine). mpi4py's extension module calls MPI_Allreduce, MPI_Send and
# MPI_Recv through its global offset table, bound to the preloaded tracer's wrappers; got_swap.c's
# lst_got_swap writes libmpi's PMPI_* into those slots for the untraced loops and the tracer's MPI_*
# back for the traced ones, so both run the same Python code and the same mpi4py code to the same
# call instruction. One double on COMM_SELF: comm.Allreduce, and comm.Send + comm.Recv to self (the
# time is per call, half the pair's). Alternating loops, the order flipped every round. (mpi4py 3.1
# also calls MPI_Type_get_extent, and MPI_Comm_test_inter for Allreduce, on every call; the tracer
# does not intercept them, so they go to libmpi in both loops.)
#
# Run traced (LD_PRELOAD=liblockstep_trace.so, LOCKSTEP_TRACE_DIR set); python_mpi4py_same_process.sh
# runs it in several processes and checks the trace. Prints, per kind, "<what> <untraced best>
# <traced best> <added, best against best> <added, median of the rounds' differences>" in ns per call,
# then "calls <symbol> <traced> <untraced>": how many calls each slot sent to the tracer and past it
# (the trace should hold the first number of that symbol's records, not the sum).
#   python3 python_mpi4py_same_process.py HELPER_SO [CALLS] [ROUNDS]
import array
import ctypes
import os
import statistics
import sys
import time

from mpi4py import MPI

helper_path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 80
comm = MPI.COMM_SELF
a = array.array('d', [1.0])
b = array.array('d', [0.0])
module = os.path.basename(MPI.__file__).encode()  # as the loader names it: .../mpi4py/MPI.cpython-*.so

helper = ctypes.CDLL(helper_path, use_errno=True)
helper.lst_got_swap.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
helper.lst_got_swap.restype = ctypes.c_int


class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p), ("sname", ctypes.c_char_p),
                ("saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]


def where(address):
    """'symbol in object' for an address, as dladdr names it."""
    info = DlInfo()
    if not libc.dladdr(address, ctypes.byref(info)):
        return hex(address or 0)
    return "%s in %s" % ((info.sname or b"?").decode(), (info.fname or b"?").decode())


def address(lib, name):
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


process = ctypes.CDLL(None)  # the global definitions: the preloaded tracer's MPI_*
libmpi = ctypes.CDLL(where(address(process, "PMPI_Allreduce")).split(" in ", 1)[1])
symbols = ("MPI_Allreduce", "MPI_Send", "MPI_Recv")
traced_at = {s: address(process, s) for s in symbols}
untraced_at = {s: address(libmpi, "P" + s) for s in symbols}
for s in symbols:
    if traced_at[s] == address(libmpi, s):
        sys.exit("%s is libmpi's own (%s): is the tracer preloaded?" % (s, where(traced_at[s])))
    if where(untraced_at[s]).split(" in ")[1] == where(traced_at[s]).split(" in ")[1]:
        sys.exit("P%s is the tracer's too (%s)" % (s, where(untraced_at[s])))


def swap(symbol, target):
    old = ctypes.c_void_p()
    got = helper.lst_got_swap(module, symbol.encode(), target, ctypes.byref(old))
    if got <= 0:
        sys.exit("lst_got_swap(%s, %s) = %d: %s" % (module.decode(), symbol, got,
                 "no such object" if got == -1 else "no JUMP_SLOT/GLOB_DAT for it" if got == 0 else
                 os.strerror(ctypes.get_errno()) or "mprotect failed"))
    return old.value


def allreduce(k):
    for _ in range(k):
        comm.Allreduce(a, b, op=MPI.SUM)


def send_recv(k):
    for _ in range(k):
        comm.Send(a, dest=0, tag=7)
        comm.Recv(b, source=0, tag=7)


kinds = (("Allreduce", allreduce, ("MPI_Allreduce",), n), ("Send/Recv", send_recv, ("MPI_Send", "MPI_Recv"), 2 * n))
calls = {(s, traced): 0 for s in symbols for traced in (True, False)}

# One call of each before the first swap: whatever binds the slots lazily has bound them, and each
# slot must hold the tracer's wrapper, or mpi4py reaches MPI some other way than its GOT.
allreduce(1)
send_recv(1)
for s in symbols:
    calls[(s, True)] += 1
    old = swap(s, traced_at[s])
    if old != traced_at[s]:
        sys.exit("mpi4py's %s slot held %s, not the tracer's %s: mpi4py does not call it through its GOT"
                 % (s, where(old), where(traced_at[s])))

times = {}
for r in range(rounds):
    for what, loop, syms, per_loop in kinds:
        for traced in ((True, False) if r % 2 == 0 else (False, True)):
            for s in syms:
                swap(s, traced_at[s] if traced else untraced_at[s])
            t0 = time.perf_counter_ns()
            loop(n)
            dt = (time.perf_counter_ns() - t0) / per_loop
            times.setdefault((what, traced), []).append(dt)
            for s in syms:
                calls[(s, traced)] += n
for s in symbols:
    swap(s, traced_at[s])  # as the loader left it

for what, _, _, _ in kinds:
    untraced, traced = times[(what, False)], times[(what, True)]
    paired = statistics.median(t - u for t, u in zip(traced, untraced))
    print("%s %.1f %.1f %.1f %.1f" % (what, min(untraced), min(traced), min(traced) - min(untraced), paired))
for s in symbols:
    print("calls %s %d %d" % (s, calls[(s, True)], calls[(s, False)]))
