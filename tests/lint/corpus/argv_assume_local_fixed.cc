// LINT-ARGS: --assume-local argv,env
// Under --assume-local argv,env, agree on the arguments first: rank 0's value, broadcast.
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int extra = argc > 2;
  MPI_Bcast(&extra, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (extra) MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Finalize();
}
