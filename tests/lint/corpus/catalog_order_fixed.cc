// The same collectives in the same order on both sides of a rank branch.
#include <mpi.h>
#include <stdio.h>

void stats(int* mine, int* all, int* prefix) {
  int rank = 0;
  MPI_Request req;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank % 2) {
    MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Iscan(mine, prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  } else {
    printf("even rank\n");
    MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Iscan(mine, prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  }
  MPI_Wait(&req, 0);
}
