/* Ring mode (run with LOCKSTEP_TRACE_RING=4096): a split communicator made at the start (ranks 0-2, and
 * rank 3 alone), then 2,500 steps of one allreduce on MPI_COMM_WORLD and one on the split; at #2500 on
 * the split, rank 2 reduces 8 doubles where ranks 0 and 1 reduce 4 (the job hangs there). By then
 * every rank's ring (5,000 calls for 4,096 slots) has overwritten the creation records: the finding
 * must still name the communicator by how it was made, number the call as the tracer did, and warn
 * that the calls before the window were not checked. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, scenario_rank == 3, scenario_rank, &half);
  double x[8] = {0}, y[8];
  for (int i = 0; i < 2500; ++i) {
    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, half);
  }
  MPI_Allreduce(x, y, scenario_rank == 2 ? 8 : 4, MPI_DOUBLE, MPI_SUM, half);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
