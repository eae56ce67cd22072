# A clean mpi4py job: every rank calls the same collectives from the same Python lines.
from mpi4py import MPI
import array

comm = MPI.COMM_WORLD


def step(i):
    grad = array.array('d', [float(comm.rank + i)])
    total = array.array('d', [0.0])
    comm.Allreduce(grad, total, op=MPI.SUM)  # lockstep-test: allreduce
    return comm.allreduce(i)  # lockstep-test: pickled


for i in range(5):
    step(i)
comm.Barrier()
