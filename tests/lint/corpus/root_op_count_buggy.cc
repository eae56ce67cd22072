// Root, count and reduction op computed from the rank.
#include <mpi.h>

void exchange(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Reduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, rank ? MPI_SUM : MPI_MAX, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:47: warning: the reduction op of 'MPI_Reduce' is computed from a rank-local value [rank-dependent-argument]
  MPI_Bcast(buf, n - rank, MPI_FLOAT, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: the count of 'MPI_Bcast' is computed from a rank-local value [rank-dependent-argument]
  MPI_Bcast(buf, n, rank ? MPI_FLOAT : MPI_INT, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: the datatype of 'MPI_Bcast' is computed from a rank-local value [rank-dependent-argument]
}
