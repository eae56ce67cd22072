// Leaving on a rank-local condition by ending the whole job (MPI_Abort, exit, abort, a noreturn helper
// that exits) skips no collective that a peer then waits for forever: the launcher ends every rank.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

[[noreturn]] void die(const char* why) {
  fprintf(stderr, "fatal: %s\n", why);
  exit(2);
}

void step(float* grads, int n, FILE* log) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const float local = grads[0] * (1.0f + rank);
  if (!isfinite(local)) {
    fprintf(stderr, "rank %d: non-finite gradient\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  if (!log && rank == 0) die("rank 0 needs a log file");
  if (local > 1e30f) abort();
  MPI_Barrier(MPI_COMM_WORLD);
}

void loop(float* grads, int n, int steps) {
  const time_t deadline = time(NULL) + 3600;
  for (long i = 0; i < steps; ++i) {
    // A per-rank deadline that ends the process: the others are ended with it.
    if (i % 256 == 0 && time(NULL) > deadline) _exit(4);
    MPI_Allreduce(MPI_IN_PLACE, grads, n + static_cast<int>(i % 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}
