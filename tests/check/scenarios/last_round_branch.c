/* A correct program shaped like a bucketed exchange (HPC Challenge's RandomAccess check, for one): each
 * round every rank synchronizes and exchanges one fixed-size bucket, until every rank has sent all its
 * updates. The round in which a rank sends its last bucket takes a branch of its own, with the same two
 * calls on other lines; ranks reach it in different rounds (ranks 0 and 1 in adjacent ones). Every
 * position pairs the same operation and arguments, and every rank calls from each line as often: no
 * finding. (An optimizing compiler makes the same shape from one loop by copying its body.) */
#include "common.h"
#define BUCKET 16
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  long out[4 * BUCKET], in[4 * BUCKET];
  int left = 3 + 2 * scenario_rank + (scenario_rank > 1); /* rounds of work: 3, 5, 8, 10 */
  int all_done = 0;
  while (!all_done) {
    for (int i = 0; i < 4 * BUCKET; ++i) out[i] = left > 0 ? scenario_rank : -1;
    int mine = 0;
    if (left == 1) {
      /* The last bucket: flag it as such to every peer. */
      out[0] = -2;
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Alltoall(out, BUCKET, MPI_LONG, in, BUCKET, MPI_LONG, MPI_COMM_WORLD);
      mine = 1;
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Alltoall(out, BUCKET, MPI_LONG, in, BUCKET, MPI_LONG, MPI_COMM_WORLD);
      mine = left <= 0;
    }
    if (left > 0) --left;
    MPI_Allreduce(&mine, &all_done, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
