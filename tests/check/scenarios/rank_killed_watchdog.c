/* Every rank makes the same three collectives; then rank 2 is killed with SIGKILL (the out-of-memory
 * killer) while the others wait for it in the next MPI_Allreduce, and a watchdog thread in each of
 * them aborts the process when a collective has taken over 0.3 s, as PyTorch's NCCL watchdog does.
 * Three ranks crash (signal 6), one was killed before them: the one finding is rank_died, and it names
 * rank 2 first, not a rank that crashed while it waited. (Should mpirun's teardown come before the
 * watchdog, the others record its SIGTERM instead, and the finding is the same.) */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

static volatile int calls_done = 0;

static void* watchdog(void* arg) {
  (void)arg;
  for (;;) {
    const int seen = calls_done;
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    if (seen == calls_done && seen >= 3) abort();
  }
  return NULL;
}

int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  pthread_t t;
  pthread_create(&t, NULL, watchdog, NULL);
  double x = scenario_rank, y = 0;
  for (int i = 0; i < 4; ++i) {
    if (i == 3 && scenario_rank == 2) raise(SIGKILL);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    calls_done = i + 1;
  }
  MPI_Finalize();
  return 0;
}
