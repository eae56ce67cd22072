# Python call sites read both ways (the frame stack and CPython's C API) must agree: calls two
# functions deep, enough of them for the frame-stack reading to take over, and a second Python thread
# calling on its own communicator at the same time (mpi4py asks for MPI_THREAD_MULTIPLE).
from mpi4py import MPI
import array
import threading

comm = MPI.COMM_WORLD


def inner(c, buf, out):
    c.Allreduce(buf, out, op=MPI.SUM)  # lockstep-test: inner


def outer(c, i):
    buf = array.array('d', [float(i)])
    out = array.array('d', [0.0])
    inner(c, buf, out)  # lockstep-test: outer
    c.Bcast(buf, root=0)  # lockstep-test: bcast


def worker(c, n):
    for _ in range(n):
        c.Barrier()  # lockstep-test: worker


comms = [comm.Dup(), comm.Dup()]
thread = threading.Thread(target=worker, args=(comms[0], 40))
thread.start()
for i in range(40):
    outer(comms[1], i)
thread.join()
