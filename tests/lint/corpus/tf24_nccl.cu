// The TF 2.4 pattern in CUDA host code: overflow detection on LOCAL gradients gates the NCCL allreduce.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cmath>

__global__ void scale(float* g, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] *= s;
}

static bool all_finite(const float* host, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(host[i])) return false;
  return true;
}

void apply_buggy(float* dev, float* host, int n, ncclComm_t comm, cudaStream_t s) {
  cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (all_finite(host, n)) {
    ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' runs only on ranks where a rank-local condition holds [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:7: note: condition evaluated here
    // CHECK-NOTES: :[[@LINE-10]]:10: note: finiteness test on rank-local data here
    scale<<<(n + 255) / 256, 256, 0, s>>>(dev, 0.5f, n);
  }
}

void apply_fixed(float* dev, float* host, int n, ncclComm_t comm, cudaStream_t s) {
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  float finite = all_finite(host, n) ? 1.0f : 0.0f;
  float all[1] = {finite};
  ncclAllReduce(all, all, 1, ncclFloat, ncclMin, comm, s);
  if (all[0] > 0) scale<<<(n + 255) / 256, 256, 0, s>>>(dev, 0.5f, n);
}
