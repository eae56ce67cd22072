/* Two ranks (CI-sized): each step reduces a gradient and broadcasts a flag. Rank 1 leaves out the
 * broadcast of step 3 (#7) and goes on. No majority exists; rank 1's own per-step pattern says it is
 * the one that diverged. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "this scenario needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double g = rank, sum = 0;
  int flag = 1;
  for (int step = 0; step < 6; ++step) {
    MPI_Allreduce(&g, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!(rank == 1 && step == 3)) MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
