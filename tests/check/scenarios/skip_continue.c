/* Each step reduces the gradients and then a metric, with the same size. Rank 2 skips the gradient
 * allreduce of step 4 (#8) and makes it up at the end: the job completes, every call in between pairs
 * with the wrong one, and the results are silently wrong. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  float grad[64], metric[64], out[64];
  for (int i = 0; i < 64; ++i) grad[i] = metric[i] = (float)scenario_rank;
  for (int step = 0; step < 20; ++step) {
    if (!(scenario_rank == 2 && step == 4)) MPI_Allreduce(grad, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(metric, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  if (scenario_rank == 2) MPI_Allreduce(grad, out, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
