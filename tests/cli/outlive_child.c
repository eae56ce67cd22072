/* A traced process that outlives its launcher: it records an annotation (which creates its trace file),
 * writes its pid to PIDFILE, lives SECONDS, then records another one and exits. With "ignore-term" it
 * ignores SIGTERM, as a rank stuck in a hang may.
 *   outlive_child PIDFILE SECONDS [ignore-term] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lockstep/annotate.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  if (argc > 3 && strcmp(argv[3], "ignore-term") == 0) signal(SIGTERM, SIG_IGN);
  LOCKSTEP_ANNOTATE("started");
  FILE* f = fopen(argv[1], "w");
  if (!f) return 2;
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  sleep((unsigned)atoi(argv[2]));
  LOCKSTEP_ANNOTATE("ending");
  return 0;
}
