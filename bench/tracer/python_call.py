# Time per mpi4py call from a Python frame: comm.Allreduce of one double on COMM_SELF (one intercepted
# call whose call site is read from the Python frame when traced), and comm.Send + comm.Recv to self
# (two intercepted calls per loop, each with its own call site: the time quoted is per call, half the
# pair's). Prints "<name> <ns per call>" lines; python_call.sh runs it untraced and traced, alternating.
import array
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_SELF
n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
a = array.array('d', [1.0])
b = array.array('d', [0.0])


def best_of(fn, calls_per_loop=1, reps=5):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        dt = (time.perf_counter_ns() - t0) / (n * calls_per_loop)
        best = dt if best is None or dt < best else best
    return best


def allreduce():
    for _ in range(n):
        comm.Allreduce(a, b, op=MPI.SUM)


def send_recv():
    for _ in range(n):
        comm.Send(a, dest=0, tag=7)
        comm.Recv(b, source=0, tag=7)


print("Allreduce %.1f" % best_of(allreduce))
print("Send/Recv %.1f" % best_of(send_recv, calls_per_loop=2))
