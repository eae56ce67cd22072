/* A wait-for cycle across three communicators: ranks 0, 1 and 2 each share a two-rank communicator
 * with their neighbours (01, 12, 20) and reduce on them in rotated orders, so 0 waits for 1 on 01,
 * 1 waits for 2 on 12 and 2 waits for 0 on 20. Rank 3 takes no part and finalizes. */
#include "../../check/scenarios/common.h"

static MPI_Comm pair(int a, int b) {
  MPI_Comm c;
  int in = scenario_rank == a || scenario_rank == b;
  MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, scenario_rank, &c);
  return c;
}

int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  MPI_Comm c01 = pair(0, 1), c12 = pair(1, 2), c20 = pair(2, 0);
  double x = 1, y = 0;
  if (scenario_rank == 0) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c01);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c20);
  } else if (scenario_rank == 1) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c12);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c01);
  } else if (scenario_rank == 2) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c20);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c12);
  }
  MPI_Finalize();
  return 0;
}
