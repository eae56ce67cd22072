// A condition on the communicator's size is the same on every rank.
#include <nccl.h>

void reduce(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int device = 0, count = 1;
  cudaGetDevice(&device);
  ncclCommCount(comm, &count);
  if (count > 1) ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
}
