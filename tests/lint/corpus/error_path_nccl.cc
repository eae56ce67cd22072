// Error paths with NCCL: a rank that fails a local check leaves before the collective.
#include <nccl.h>

#include <cmath>
#include <stdexcept>

bool validate(const float* host, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::isnan(host[i])) return false;
  return true;
}

void reduce_buggy(const float* host, float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  if (!validate(host, n)) throw std::runtime_error("bad input");
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: collective 'ncclAllReduce' is skipped by ranks that leave early [conditional-collective]
  // CHECK-NOTES: :[[@LINE-8]]:9: note: finiteness test on rank-local data here
}

// Correct: the check runs on data every rank holds alike (a broadcast parameter block).
void reduce_fixed(float* params, float* dev, size_t n, ncclComm_t comm, cudaStream_t s) {
  ncclBroadcast(params, params, n, ncclFloat, 0, comm, s);
  if (!validate(params, n)) throw std::runtime_error("bad parameters");
  ncclAllReduce(dev, dev, n, ncclFloat, ncclSum, comm, s);
}
