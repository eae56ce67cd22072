# Rank 1 skips the gradient allreduce at step 3 (a rank-local condition), as the Horovod mixed-precision
# bug did: the other ranks' allreduce pairs with rank 1's next one, and their last one never completes.
from mpi4py import MPI
import array

comm = MPI.COMM_WORLD


def step(i):
    grad = array.array('d', [1.0])
    total = array.array('d', [0.0])
    finite = not (comm.rank == 1 and i == 3)
    if finite:
        comm.Allreduce(grad, total, op=MPI.SUM)  # lockstep-test: allreduce
    return total[0]


for i in range(6):
    step(i)
