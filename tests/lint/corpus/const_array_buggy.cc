// Bucket sizes drawn at random on each rank: the counts differ between ranks.
#include <mpi.h>
#include <stdlib.h>

void bucketed(float* buf) {
  int sizes[4] = {rand() % 256, 512, 1024, 2048};
  MPI_Allreduce(MPI_IN_PLACE, buf, sizes[0], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:36: warning: the count of 'MPI_Allreduce' is computed from a rank-local value [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-3]]:19: note: random number drawn here
}
