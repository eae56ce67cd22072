// The note names the real rank-local source: the CUDA device this rank drives.
#include <nccl.h>

void reduce(float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  int device = 0;
  cudaGetDevice(&device);
  if (device == 0) ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: collective 'ncclAllReduce' runs only on ranks where a rank-local condition holds [conditional-collective]
  // CHECK-NOTES: :[[@LINE-3]]:3: note: rank obtained from 'cudaGetDevice' here
}
