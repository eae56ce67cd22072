/* MPI's own error, returned: with MPI_ERRORS_RETURN every rank's MPI_Bcast with root -1 returns
 * MPI_ERR_ROOT and the job goes on to finish. The records are FAILED with the error class, and the
 * check reports the root every rank passed. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int flag = 1;
  if (MPI_Bcast(&flag, 1, MPI_INT, -1, MPI_COMM_WORLD) == MPI_SUCCESS) fprintf(stderr, "root -1 accepted\n");
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
