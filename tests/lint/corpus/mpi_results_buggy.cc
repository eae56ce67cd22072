// The rank MPI returns is the one value that differs: choosing the communicator by it splits the
// collectives between two communicators.
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm comm = rank == 0 ? MPI_COMM_WORLD : half;
  MPI_Barrier(comm);
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: the communicator of 'MPI_Barrier' is computed from a rank-local value [rank-dependent-argument]
  MPI_Comm_free(&half);
  return MPI_Finalize();
}
