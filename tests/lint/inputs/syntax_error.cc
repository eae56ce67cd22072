// Deliberately broken: lint must report the compiler's errors and exit 2.
#include <mpi.h>

void broken(float* buf, int n) {
  MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
  int x = ;
}
