// Conditions every rank decides alike: the rank is always in [0, size), and the size is uniform.
#include <mpi.h>

void sync(float* buf, int n) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank < size) MPI_Barrier(MPI_COMM_WORLD);
  if (rank >= 0) MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (size > 1) MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int nprocs = size;
  if (nprocs >= 2) MPI_Bcast(buf, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
}
