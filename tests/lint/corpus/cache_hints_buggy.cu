// Device code using the cache-hinted loads and stores of CUDA 12+ (__stwt, __ldcg: NCCL 2.28's GIN proxy
// writes its queue with __stwt) parses, so the host code around it is analyzed: a rank-guarded
// allreduce is reported.
#include <cuda_runtime.h>
#include <nccl.h>

__global__ void publish(uint4* queue, const uint4* desc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __stwt(queue + i, __ldcg(desc + i));
}

void step(float* dev, size_t n, int rank, ncclComm_t comm, cudaStream_t s) {
  publish<<<1, 32, 0, s>>>(nullptr, nullptr, 0);
  if (rank == 0) ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
}

void run(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  step(dev, n, rank, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'step' performs collective 'ncclAllReduce' under a condition computed from a rank-local argument [conditional-collective]
  // CHECK-NOTES: :[[@LINE-8]]:7: note: condition evaluated here
}
