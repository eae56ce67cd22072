// Conditions that split the ranks: some ranks are below 2, some are not.
#include <mpi.h>

void sync(float* buf, int n) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank < 2) MPI_Barrier(MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective]
  // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'MPI_Comm_rank' here
  if (rank < size / 2) MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: collective 'MPI_Bcast' runs only on ranks where a rank-local condition holds [conditional-collective]
}
