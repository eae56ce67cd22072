/* Two ranks, one allreduce per step; rank 1 leaves out step 3's and so runs out of steps one call early:
 * it goes on to MPI_Finalize while rank 0 waits in its sixth allreduce. Nothing in the calls themselves
 * differs; rank 0 waits in a call that continues its own pattern, so rank 1 is the one that stopped. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "this scenario needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double g = rank, sum = 0;
  for (int step = 0; step < 6; ++step)
    if (!(rank == 1 && step == 3)) MPI_Allreduce(&g, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
