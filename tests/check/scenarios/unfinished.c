/* Every rank starts MPI_Iallreduce (#1 on MPI_COMM_WORLD); ranks 0-2 wait for it, rank 3 never does
 * (it computes forever), so the reduction never completes everywhere. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(1);
  double x[1024] = {0}, y[1024];
  MPI_Request req;
  MPI_Iallreduce(x, y, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
  if (scenario_rank == 3) {
    for (;;) pause();
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
