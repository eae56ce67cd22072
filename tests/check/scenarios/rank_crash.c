/* Every rank makes the same three collectives; then rank 2 crashes (a write through a null pointer)
 * while the others go on to MPI_Finalize. No collective differs, but the job did not finish: the one
 * finding is rank_died, naming rank 2 and the collective it died after. */
#include <signal.h>

#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  if (scenario_rank == 2) {
    volatile int* volatile nowhere = NULL;
    *nowhere = 1;
  }
  MPI_Finalize();
  return 0;
}
