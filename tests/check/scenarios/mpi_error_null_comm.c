/* MPI's own error, fatal: a communicator variable left at MPI_COMM_NULL (a split that gave this rank
 * no communicator) used in a collective on every rank; MPI_COMM_WORLD's fatal handler ends the job. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm sub = MPI_COMM_NULL;
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, sub);
  MPI_Finalize();
  return 0;
}
