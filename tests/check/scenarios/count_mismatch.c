/* At #1 on MPI_COMM_WORLD rank 1 reduces 8 doubles where the others reduce 4. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(1);
  double x[8] = {0}, y[8];
  MPI_Allreduce(x, y, scenario_rank == 1 ? 8 : 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
