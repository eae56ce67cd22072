// Loops whose trip count differs by rank.
#include <mpi.h>

#include <cstddef>
#include <vector>

void per_rank_batches_buggy(float* grads, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int batches = 10 + rank % 3;
  for (int b = 0; b < batches; ++b) {
    MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' runs once per loop iteration, but the trip count depends on a rank-local value [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:19: note: loop condition evaluated here
    // CHECK-NOTES: :[[@LINE-6]]:3: note: rank obtained from 'MPI_Comm_rank' here
  }
}

// Correct: the trip count is agreed with an allreduce (max over ranks).
void per_rank_batches_fixed(float* grads, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int local_batches = 10 + rank % 3;
  int batches = 0;
  MPI_Allreduce(&local_batches, &batches, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  for (int b = 0; b < batches; ++b) MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

// Correct: uniform loops (constant bounds, communicator size, a range over a container).
void uniform_loops(std::vector<float>& grads, int steps) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int s = 0; s < steps; ++s) MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) MPI_Bcast(grads.data(), (int)grads.size(), MPI_FLOAT, r, MPI_COMM_WORLD);
  for (float& g : grads) MPI_Allreduce(MPI_IN_PLACE, &g, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

// Buggy: the number of local samples decides how many reductions run.
void samples_buggy(const std::vector<int>& labels, float* acc) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] > 0) MPI_Allreduce(MPI_IN_PLACE, acc, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: collective 'MPI_Allreduce' runs only on ranks where a rank-local condition holds [conditional-collective]
}
