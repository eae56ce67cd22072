/* A rank frozen inside a collective: rank 2 enters an MPI_Allreduce of 8 MiB (#3 on MPI_COMM_WORLD) at
 * once and is stopped there half a second later (SIGSTOP from its own SIGALRM handler, as a debugger or
 * an operator would stop it); the others enter a second later. Their reduction needs the data rank 2
 * never sent, so every rank is inside #3 when the job is stopped, and no record tells which one the
 * others wait for: what `lockstep run` read in /proc at the stop does (rank 2: stopped). */
#include <signal.h>
#include <sys/time.h>

#include "common.h"

static void freeze(int sig) {
  (void)sig;
  kill(getpid(), SIGSTOP);
}

int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  if (scenario_rank == 2) {
    signal(SIGALRM, freeze);
    struct itimerval half = {{0, 0}, {0, 500000}};
    setitimer(ITIMER_REAL, &half, NULL);
  } else {
    sleep(1);
  }
  enum { kCount = 1 << 20 };
  double* x = calloc(kCount, sizeof *x);
  double* y = calloc(kCount, sizeof *y);
  MPI_Allreduce(x, y, kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  free(x);
  free(y);
  MPI_Finalize();
  return 0;
}
