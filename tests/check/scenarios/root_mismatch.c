/* At #1 on MPI_COMM_WORLD rank 3 broadcasts from root 1 where the others name root 0. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(1);
  int v[4] = {scenario_rank, 0, 0, 0};
  MPI_Bcast(v, 4, MPI_INT, scenario_rank == 3 ? 1 : 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
