// LINT-ARGS: --enable collective-after-error-exit
// With the rule on: agree on the local failure first, then every rank leaves or every rank reduces.
#include <mpi.h>
#include <nccl.h>

int run(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failed = cudaSetDevice(rank % 8) != cudaSuccess, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed) return 1;
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  return 0;
}
