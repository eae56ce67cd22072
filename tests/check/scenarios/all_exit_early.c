/* Every rank leaves with exit(3) right after MPI_Init, before any collective and without
 * MPI_Finalize: the trace holds no collective to compare, yet the job failed everywhere. The one
 * finding is rank_died for all four ranks. */
#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  exit(3);
}
