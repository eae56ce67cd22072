// Leaving on a rank-local condition by ending the whole job (MPI_Abort, exit, abort, a noreturn helper
// that exits) skips no collective that a peer then waits for forever: the launcher ends every rank.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

[[noreturn]] void die(const char* why) {
  fprintf(stderr, "fatal: %s\n", why);
  exit(2);
}

void step(float* grads, int n, FILE* log) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!isfinite(grads[0])) {
    if (rank == 0) fprintf(stderr, "non-finite gradient\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (!log) die("no log file");
  if (grads[0] > 1e30f) abort();
  MPI_Barrier(MPI_COMM_WORLD);
}

void loop(float* grads, int n, int steps) {
  for (long i = 0; i < steps; ++i) {
    // A per-rank deadline that ends the process: the others are ended with it.
    if (MPI_Wtime() > 3600.0) _exit(4);
    MPI_Allreduce(MPI_IN_PLACE, grads, n + static_cast<int>(i % 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}
