/* A correct program: 10,000 collectives over 3 communicators (MPI_COMM_WORLD, a split into halves, a
 * duplicate of the world). `lockstep check` must say IN LOCKSTEP and exit 0. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  MPI_Comm half, dup;
  MPI_Comm_split(MPI_COMM_WORLD, scenario_rank % 2, scenario_rank, &half);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  double x = scenario_rank, y = 0;
  int v = 0;
  /* 2 collectives at setup (split, dup are not collectives records) + 3 per step = 10,000 in all. */
  for (int i = 0; i < 3333; ++i) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(&v, 1, MPI_INT, 0, half);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, dup);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
