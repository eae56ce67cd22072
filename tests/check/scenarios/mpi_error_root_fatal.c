/* MPI's own error, fatal: every rank passes root -1 to MPI_Bcast under the default error handler
 * (MPI_ERRORS_ARE_FATAL), so the MPI library ends the job from inside the call. The check names the
 * rank that died inside MPI_Bcast and the root, instead of an unfinished call on every rank. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int flag = 1;
  MPI_Bcast(&flag, 1, MPI_INT, -1, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
