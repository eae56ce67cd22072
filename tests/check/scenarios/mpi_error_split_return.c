/* MPI's own error in communicator creation, returned: every rank passes colour -2 to MPI_Comm_split
 * under MPI_ERRORS_RETURN; no communicator is made, the program ignores the error code and the job
 * finishes. Not a clean run: the creation failed on every rank. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, -2, rank, &half);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
