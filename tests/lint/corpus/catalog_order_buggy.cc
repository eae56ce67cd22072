// Two nonblocking-era collectives in opposite orders on the two sides of a rank branch: not the same
// sequence, so ranks pair an allgather with a scan.
#include <mpi.h>

void stats(int* mine, int* all, int* prefix) {
  int rank = 0;
  MPI_Request req;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank % 2) {
    MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allgather' runs only on ranks where a rank-local condition holds [conditional-collective]
    MPI_Iscan(mine, prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  } else {
    MPI_Iscan(mine, prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    // CHECK-NOTES: :[[@LINE-1]]:5: note: collective 'MPI_Iscan' under the same condition here
    MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  }
  MPI_Wait(&req, 0);
}
