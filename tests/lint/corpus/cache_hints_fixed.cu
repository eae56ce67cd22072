// Device code using the cache-hinted loads and stores of CUDA 12+ (__stcs, __ldcs, __stwt) parses; the
// host code calls the allreduce on every rank and lets only rank 0 launch the logging kernel.
#include <cuda_runtime.h>
#include <nccl.h>

__global__ void stream_copy(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __stcs(out + i, __ldcs(in + i));
  if (i == 0) __stwt(out, 0.0f);
}

void step(float* dev, float* tmp, int n, ncclComm_t comm, cudaStream_t s) {
  int rank = 0;
  ncclCommUserRank(comm, &rank);
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  if (rank == 0) stream_copy<<<(n + 255) / 256, 256, 0, s>>>(tmp, dev, n);
}
