// The TF 2.4 pattern with NCCL in plain C++ (runs without a CUDA toolkit).
#include <nccl.h>

#include <cmath>
#include <vector>

struct LossScaler {
  float scale = 65536.0f;
  bool finite(const std::vector<float>& g) const {
    for (float v : g)
      if (std::isinf(v) || std::isnan(v)) return false;
    return true;
  }
};

void copy_to_host(std::vector<float>& host, const float* dev);

void step_buggy(LossScaler& scaler, std::vector<float>& host, float* dev, ncclComm_t comm, cudaStream_t s) {
  copy_to_host(host, dev);
  if (scaler.finite(host)) {
    ncclAllReduce(dev, dev, host.size(), ncclFloat, ncclSum, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' runs only on ranks where a rank-local condition holds [conditional-collective]
  } else {
    scaler.scale /= 2;
  }
}

void step_fixed(LossScaler& scaler, std::vector<float>& host, float* dev, ncclComm_t comm, cudaStream_t s) {
  ncclAllReduce(dev, dev, host.size(), ncclFloat, ncclSum, comm, s);
  copy_to_host(host, dev);
  std::vector<float> reduced(host.size());
  ncclAllReduce(host.data(), reduced.data(), host.size(), ncclFloat, ncclSum, comm, s);
  if (scaler.finite(reduced)) {
    ncclBroadcast(dev, dev, host.size(), ncclFloat, 0, comm, s);
  } else {
    scaler.scale /= 2;
  }
}
