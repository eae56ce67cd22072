/* At #1 on MPI_COMM_WORLD rank 1 reduces with MPI_MAX where the others use MPI_SUM. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(1);
  double x = scenario_rank, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, scenario_rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
