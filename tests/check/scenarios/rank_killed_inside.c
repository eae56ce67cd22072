/* Every rank makes the same three collectives; then rank 2 waits in an MPI_Recv for a message rank 3
 * sends two seconds later, while ranks 0 and 1 enter the next MPI_Allreduce. Half a second in, rank 2
 * is killed there with SIGKILL (a thread of its own sends it, as the out-of-memory killer would while
 * it waits), and mpirun ends the others. Ranks 0 and 1 wait for it: the one finding is rank_died,
 * naming rank 2 killed inside its MPI_Recv, not a hang. */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "common.h"

static void* kill_soon(void* arg) {
  (void)arg;
  struct timespec half = {0, 500 * 1000 * 1000};
  nanosleep(&half, NULL);
  kill(getpid(), SIGKILL);
  return NULL;
}

int main(int argc, char** argv) {
  scenario_init(&argc, &argv);
  warm_up(3);
  double x = 0;
  if (scenario_rank == 2) {
    pthread_t t;
    pthread_create(&t, NULL, kill_soon, NULL);
    MPI_Recv(&x, 1, MPI_DOUBLE, 3, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (scenario_rank == 3) {
    sleep(2);
    MPI_Send(&x, 1, MPI_DOUBLE, 2, 99, MPI_COMM_WORLD);
  }
  warm_up(1);
  MPI_Finalize();
  return 0;
}
