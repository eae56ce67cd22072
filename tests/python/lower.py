# The same bug through mpi4py's pickle-based comm.allreduce, which mpi4py builds from point-to-point
# messages and a broadcast on a hidden duplicate of the communicator.
from mpi4py import MPI

comm = MPI.COMM_WORLD


def step(i):
    loss = float(comm.rank + i)
    if not (comm.rank == 1 and i == 3):
        loss = comm.allreduce(loss)  # lockstep-test: allreduce
    return loss


for i in range(6):
    step(i)
