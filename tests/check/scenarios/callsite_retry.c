/* Each step reduces the gradients, then the loss, both 64 floats. In step 3 rank 2 takes a retry path
 * that reduces from another line instead of the loss line. Every count and type agrees and the job
 * completes: only the call site says that rank 2's calls parted from the others' at #7. */
#include "common.h"
static float buf[64], out[64];
static void retry_reduce(void) { MPI_Allreduce(buf, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  for (int step = 0; step < 6; ++step) {
    MPI_Allreduce(buf, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (scenario_rank == 2 && step == 3)
      retry_reduce();
    else
      MPI_Allreduce(buf, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
