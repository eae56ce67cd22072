/* At #2 on MPI_COMM_WORLD rank 3 calls MPI_Reduce where the others call MPI_Allreduce. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(2);
  double x = 1, y = 0;
  if (scenario_rank == 3)
    MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  else
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
