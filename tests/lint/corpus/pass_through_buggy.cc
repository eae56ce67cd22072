// A callee that changes the buffer it is given (resizes it) under a rank-local condition makes its
// size rank-local; a vector filled with a rank-local value holds one; a stopping test that depends on
// the rank is reported once, where the rank is known.
#include <mpi.h>
#include <stdio.h>

#include <vector>

void shrink(std::vector<float>& v, size_t n) { v.resize(n); }

void reduce(std::vector<float>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int train_until(int steps, int rank) {
  std::vector<float> grad(256);
  for (int s = 0; s < steps; ++s) {
    reduce(grad);
    if (s > 10 * rank) break;
  }
  return 0;
}

void train(int steps) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<float> grad(256), scale(4, 0.5f * rank);
  if (rank == 0) shrink(grad, 128);
  reduce(grad);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'reduce' passes a rank-local value as the count of collective 'MPI_Allreduce' [rank-dependent-argument]
  if (scale[0] > 0.25f) MPI_Barrier(MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
  train_until(steps, rank);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: call to 'train_until' performs collective 'MPI_Allreduce' under a condition computed from a rank-local argument [conditional-collective]
  // CHECK-NOTES: :[[@LINE-16]]:9: note: condition evaluated here
}
