// Two call sites of a reducing helper under one rank-local condition: one finding, the second site a note.
#include <mpi.h>

void sync_grads(float* g, int n) { MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }

void step(float* a, float* b, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    sync_grads(a, n);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: call to 'sync_grads' (performs collective 'MPI_Allreduce') runs only on ranks where a rank-local condition holds [conditional-collective]
    sync_grads(b, n);
    // CHECK-NOTES: :[[@LINE-1]]:5: note: call to 'sync_grads' under the same condition here
  }
}
