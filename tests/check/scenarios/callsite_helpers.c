/* A correct program: rank 0 reduces through its own helper, the other ranks through another, in every
 * step. The call sites differ at every position, always the same way: nothing to report. */
#include "common.h"
static float buf[64], out[64];
static void coordinator_reduce(void) { MPI_Allreduce(buf, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
static void worker_reduce(void) { MPI_Allreduce(buf, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  for (int step = 0; step < 8; ++step) {
    if (scenario_rank == 0)
      coordinator_reduce();
    else
      worker_reduce();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
