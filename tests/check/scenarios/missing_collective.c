/* Rank 2 skips the barrier (#3 on MPI_COMM_WORLD) and goes on to MPI_Finalize; the others wait in it. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  if (scenario_rank != 2) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
