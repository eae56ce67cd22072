// The TensorFlow 2.4 + Horovod mixed-precision bug with MPI, and its fix.
#include <mpi.h>

#include <cmath>
#include <vector>

void compute_gradients(float* grads, int n, int step);
void apply(float* weights, const float* grads, int n);

// Buggy: the gradient allreduce sits in the apply step, taken only when the LOCAL gradients are finite.
void train_buggy(float* weights, int n, int steps) {
  std::vector<float> grads(n);
  for (int step = 0; step < steps; ++step) {
    compute_gradients(grads.data(), n, step);
    bool finite = true;
    for (int i = 0; i < n; ++i)
      if (!std::isfinite(grads[i])) finite = false;
    if (finite) {
      MPI_Allreduce(MPI_IN_PLACE, grads.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: collective 'MPI_Allreduce' runs only on ranks where a rank-local condition holds [conditional-collective]
      // CHECK-NOTES: :[[@LINE-3]]:9: note: condition evaluated here
      // CHECK-NOTES: :[[@LINE-5]]:12: note: finiteness test on rank-local data here
      apply(weights, grads.data(), n);
    }
  }
}

// Fixed: reduce first, unconditionally; the finite flag is then the same on every rank.
void train_fixed(float* weights, int n, int steps) {
  std::vector<float> grads(n);
  for (int step = 0; step < steps; ++step) {
    compute_gradients(grads.data(), n, step);
    MPI_Allreduce(MPI_IN_PLACE, grads.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    bool finite = true;
    for (int i = 0; i < n; ++i)
      if (!std::isfinite(grads[i])) finite = false;
    if (finite) {
      MPI_Bcast(weights, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      apply(weights, grads.data(), n);
    }
  }
}
