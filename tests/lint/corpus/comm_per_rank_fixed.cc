// Every rank uses the communicator it was given; the split decides membership, not the call.
#include <mpi.h>

void reduce(float* buf, int n, MPI_Comm group) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half;
  MPI_Comm_split(group, rank % 2, rank, &half);
  MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, half);
  MPI_Comm_free(&half);
}
