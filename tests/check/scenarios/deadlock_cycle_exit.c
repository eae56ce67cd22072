/* deadlock_cycle, with ranks that leave through _exit(195) when `lockstep run --timeout` stops the job,
 * as an MPI library does when it loses its launcher: their exits come after the stop and must not turn
 * the deadlock into "rank 1 died first". */
#include <signal.h>
#include <unistd.h>
static void leave(int sig) {
  (void)sig;
  _exit(195);
}
#define SCENARIO_AFTER_INIT() signal(SIGTERM, leave)
/* The same program, with the handler installed after its MPI_Init. */
#include "deadlock_cycle.c"  // NOLINT(bugprone-suspicious-include)
