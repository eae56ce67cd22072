// Early stopping on a local metric with NCCL.
#include <nccl.h>

float local_loss(const float* grads, size_t n);

void loop_buggy(float* grads, size_t n, ncclComm_t comm, cudaStream_t s) {
  for (int step = 0; step < 1000; ++step) {
    float loss = local_loss(grads, n);
    if (loss < 1e-3f) return;
    ncclAllReduce(grads, grads, n, ncclFloat, ncclSum, comm, s);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' is skipped by ranks that leave early [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:9: note: early exit decided here
  }
}

// Correct: reduce the loss and decide on the reduced value.
void loop_fixed(float* grads, size_t n, float* loss_dev, ncclComm_t comm, cudaStream_t s) {
  for (int step = 0; step < 1000; ++step) {
    float loss[1] = {0};
    loss[0] = local_loss(grads, n);
    ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, s);
    if (loss[0] < 1e-3f) return;
    ncclAllReduce(grads, grads, n, ncclFloat, ncclSum, comm, s);
  }
}
