// Every rank calls the reducing helper; rank-dependent work stays outside it.
#include <mpi.h>

void sync_grads(float* g, int n) { MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }

void step(float* a, float* b, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) a[0] = 0;
  sync_grads(a, n);
  sync_grads(b, n);
}
