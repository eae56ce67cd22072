# A clean mpi4py job: every rank calls the same collectives from the same Python lines.
from mpi4py import MPI
import array

comm = MPI.COMM_WORLD


def step(i):
    grad = array.array('d', [float(comm.rank + i)])
    total = array.array('d', [0.0])
    comm.Allreduce(grad, total, op=MPI.SUM)  # lockstep-test: allreduce
    # One call, two records (SEND and RECV), both at this line.
    got = array.array('d', [0.0])
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    comm.Sendrecv(grad, dest=right, recvbuf=got, source=left)  # lockstep-test: sendrecv
    return comm.allreduce(i)  # lockstep-test: pickled


for i in range(5):
    step(i)
comm.Barrier()
