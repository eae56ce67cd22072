/* A collective inside a conditional expression on the rank (C). */
#include <mpi.h>

int maybe_sync(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank > 0 ? MPI_Barrier(MPI_COMM_WORLD) : 0;
  /* CHECK-MESSAGES: :[[@LINE-1]]:21: warning: collective 'MPI_Barrier' runs only on ranks where a rank-local condition holds [conditional-collective] */
}
