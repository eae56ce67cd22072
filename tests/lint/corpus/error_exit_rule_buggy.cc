// LINT-ARGS: --enable collective-after-error-exit
// With the rule on, a rank whose local API call failed and returned is reported once, at the first
// collective it skips.
#include <mpi.h>
#include <nccl.h>

int run(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cudaError_t e = cudaSetDevice(rank % 8);
  if (e != cudaSuccess) return 1;
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: collective 'ncclAllReduce' is skipped by ranks where a local API call failed [collective-after-error-exit]
  // CHECK-NOTES: :[[@LINE-3]]:7: note: error status tested here
  ncclBroadcast(dev, dev, n, ncclFloat, 0, comm, s);
  return 0;
}
