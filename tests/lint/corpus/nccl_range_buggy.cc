// Half the ranks take the branch.
#include <nccl.h>

void reduce(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0, count = 1;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &count);
  if (rank < count / 2) ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: collective 'ncclAllReduce' runs only on ranks where a rank-local condition holds [conditional-collective]
}
