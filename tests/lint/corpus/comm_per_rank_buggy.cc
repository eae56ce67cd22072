// A communicator chosen per rank is reported at the collective that uses it, not at a later free.
#include <mpi.h>

void reduce(float* buf, int n, MPI_Comm group) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm = group;
  if (rank % 2) comm = MPI_COMM_WORLD;
  MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, comm);
  // CHECK-MESSAGES: :[[@LINE-1]]:59: warning: the communicator of 'MPI_Allreduce' is computed from a rank-local value [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-5]]:3: note: rank obtained from 'MPI_Comm_rank' here
  MPI_Comm_free(&group);
}
