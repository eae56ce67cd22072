// Every rank takes part; only rank 0 does the local work.
#include <mpi.h>
#include <stdio.h>

void save(float* w, int n) { MPI_Bcast(w, n, MPI_FLOAT, 0, MPI_COMM_WORLD); }

void checkpoint(float* w, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, w, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  save(w, n);
  if (rank == 0) printf("saved %d weights\n", n);
}
