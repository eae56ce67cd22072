// Rank-guarded logging inside the step loop leaves the trip count uniform.
#include <nccl.h>

void train(float* dev, size_t n, int steps, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  for (int step = 0; step < steps; ++step) {
    ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
    if (rank == 0 && step % 10 == 0) printf("step %d\n", step);
  }
}
