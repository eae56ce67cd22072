// Rank-0-only code that calls a function hiding a collective (a checkpoint routine that reduces).
#include <mpi.h>

static void save_checkpoint(const float* weights, int n) {
  float norm = 0;
  for (int i = 0; i < n; ++i) norm += weights[i] * weights[i];
  float total = 0;
  MPI_Allreduce(&norm, &total, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void log_progress(int step) {}

void step_buggy(const float* weights, int n, int step) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) save_checkpoint(weights, n);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: call to 'save_checkpoint' (performs collective 'MPI_Allreduce') runs only on ranks where a rank-local condition holds [conditional-collective]
  // CHECK-NOTES: :[[@LINE-2]]:7: note: condition evaluated here
  // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'MPI_Comm_rank' here
}

// Correct: every rank takes part in the reduction; only rank 0 does the rank-local part (logging).
void step_fixed(const float* weights, int n, int step) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  save_checkpoint(weights, n);
  if (rank == 0) log_progress(step);
}

// Correct: a size-based guard is the same on every rank.
void step_size_guard(const float* weights, int n) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) save_checkpoint(weights, n);
}
