// Rank 0 leaves the step loop early: the others wait in their next allreduce.
#include <nccl.h>

void train(float* dev, size_t n, int steps, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  for (int step = 0; step < steps; ++step) {
    ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' is skipped by ranks that leave early [conditional-collective]
    if (rank == 0 && step == 10) break;
  }
}
