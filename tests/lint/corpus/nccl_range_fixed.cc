// NCCL's rank is always below its communicator's count: every rank takes the branch.
#include <nccl.h>

void reduce(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0, count = 1;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &count);
  if (rank < count) ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
}
