/* Two ranks and no per-step pattern to go by: rank 1 leaves early (as an exception or an early return
 * would make it) and goes on to MPI_Finalize, while rank 0 waits in the job's first MPI_Barrier. Either
 * rank could be the one in the wrong (an extra barrier on rank 0, or rank 1 quitting), and nothing in
 * the trace tells them apart: a tie with both views, no rank blamed. */
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
  if (rank == 0) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
