// A rank-guarded write to what the loop condition reads: rank 0 takes an extra step per iteration, so
// ranks disagree on the trip count.
#include <mpi.h>
#include <stdio.h>

void train(float* grads, int n, int steps) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int step = 0; step < steps; ++step) {
    MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' runs once per loop iteration, but the trip count depends on a rank-local value [conditional-collective]
    // CHECK-NOTES: :[[@LINE-3]]:22: note: loop condition evaluated here
    if (rank == 0) step += 1;
  }
}
