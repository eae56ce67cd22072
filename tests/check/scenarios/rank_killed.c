/* Every rank makes the same three collectives; then rank 2 is killed with SIGKILL, as the kernel's
 * out-of-memory killer or a `kill -9` ends a process: nothing of its end reaches its trace. The others
 * block in the next MPI_Allreduce, waiting for it, until mpirun ends them. No collective differs, but
 * the job did not finish: the one finding is rank_died, naming rank 2 and the collective it was killed
 * after, with the ranks left waiting for it. */
#include <signal.h>

#include "common.h"
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  if (scenario_rank == 2) raise(SIGKILL);
  warm_up(1);
  MPI_Finalize();
  return 0;
}
