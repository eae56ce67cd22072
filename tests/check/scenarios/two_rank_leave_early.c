/* Two ranks and no per-step pattern to go by: rank 1 leaves early (as an exception or an early return
 * would make it) and goes on to MPI_Finalize, while rank 0 waits in the job's first MPI_Barrier. Either
 * rank could be the one in the wrong (an extra barrier on rank 0, or rank 1 quitting), and nothing in
 * the trace tells them apart: a tie with both views, no rank blamed. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init_ranks(&argc, &argv, 2);
  if (scenario_rank == 0) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
