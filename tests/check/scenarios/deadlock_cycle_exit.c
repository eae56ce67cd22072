/* deadlock_cycle, with ranks that leave through _exit(195) when `lockstep run --timeout` stops the job,
 * as an MPI library does when it loses its launcher: their exits come after the stop and must not turn
 * the deadlock into "rank 1 died first". */
#include <signal.h>

#include "common.h"
static void leave(int sig) {
  (void)sig;
  _exit(195);
}
int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  signal(SIGTERM, leave);
  MPI_Comm a, b;
  MPI_Comm_split(MPI_COMM_WORLD, scenario_rank < 2 ? 0 : 1, scenario_rank, &a);
  MPI_Comm_dup(a, &b);
  double x = 1, y = 0;
  if (scenario_rank == 0) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, a);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, b);
  } else if (scenario_rank == 1) {
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, b);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, a);
  }
  MPI_Finalize();
  return 0;
}
