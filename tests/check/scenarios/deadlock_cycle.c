/* Ranks 0 and 1 share two communicators A and B (a split and its duplicate) and use them in opposite
 * orders: rank 0 reduces on A then B, rank 1 on B then A. Each waits for the other: a cycle. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
#ifdef SCENARIO_AFTER_INIT
  SCENARIO_AFTER_INIT(); /* deadlock_cycle_exit.c */
#endif
  MPI_Comm a, b;
  MPI_Comm_split(MPI_COMM_WORLD, scenario_rank < 2 ? 0 : 1, scenario_rank, &a);
  MPI_Comm_dup(a, &b);
  double x = 1, y = 0;
  if (scenario_rank == 0) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, a);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, b);
  } else if (scenario_rank == 1) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, b);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, a);
  }
  MPI_Finalize();
  return 0;
}
