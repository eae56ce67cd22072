// A switch on the rank whose cases perform the same collectives.
#include <mpi.h>
#include <stdio.h>

void phase(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  switch (rank) {
    case 0:
      printf("root\n");
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    default:
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}
