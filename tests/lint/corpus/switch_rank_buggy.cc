// A switch on the rank where only one case reduces.
#include <mpi.h>

void phase(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  switch (rank) {
    case 0:
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: collective 'MPI_Allreduce' runs only on ranks where a rank-local condition holds [conditional-collective]
      break;
    default:
      break;
  }
}
