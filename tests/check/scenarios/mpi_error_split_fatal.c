/* MPI's own error in communicator creation, fatal: rank 1 passes colour -5 (neither >= 0 nor
 * MPI_UNDEFINED) to MPI_Comm_split; MPI rejects it there and ends the job from inside the call. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 1 ? -5 : rank % 2, rank, &half);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half);
  MPI_Finalize();
  return 0;
}
