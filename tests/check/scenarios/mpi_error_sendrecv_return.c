/* MPI's own error in point-to-point, returned: with MPI_ERRORS_RETURN every rank's MPI_Sendrecv names a
 * destination that is no rank of MPI_COMM_WORLD, so MPI returns MPI_ERR_RANK before anything is sent and
 * the job goes on to finish. Both halves' records are FAILED with the error class, and the check
 * reports the destination every rank passed. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const int left = (rank + size - 1) % size;
  if (MPI_Sendrecv(&x, 1, MPI_DOUBLE, size + 3, 7, &y, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE) == MPI_SUCCESS)
    fprintf(stderr, "destination %d accepted\n", size + 3);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
