/* A halo exchange per step: rank 0 sends to rank 1, then every rank reduces. Rank 1 skips the
 * allreduce of step 3 (#3) and goes on to step 4's receive, which rank 0 never sends because it waits
 * in that allreduce: a cycle through a collective and a message. Rank 1 is the one to look at. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  double halo[4] = {0}, x = scenario_rank, y = 0;
  for (int step = 0; step < 6; ++step) {
    if (scenario_rank == 0) MPI_Send(halo, 4, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
    if (scenario_rank == 1) MPI_Recv(halo, 4, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (!(scenario_rank == 1 && step == 3)) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
