/* At #1 on MPI_COMM_WORLD rank 2 sums 16 ints where the others sum 16 floats: the same bytes, read as
 * different types (a warning-level dtype_mismatch; the job completes). */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(1);
  float f[16] = {0}, g[16];
  MPI_Allreduce(f, g, 16, scenario_rank == 2 ? MPI_INT : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  warm_up(1);
  MPI_Finalize();
  return 0;
}
