/* A library that starts MPI from its own constructor, as a framework's static initializer can: the
   dynamic loader runs it before the constructor of a preloaded liblockstep_trace.so. Its calls (MPI_Init,
   a ring of MPI_Sendrecv, an MPI_Barrier) must be traced like any other (tests/tracer/early_calls.sh). */
#include <mpi.h>

static int g_ready;

__attribute__((constructor)) static void start_mpi(void) {
  MPI_Init(NULL, NULL);
  int rank = 0, size = 1, got = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 5, &got, 1, MPI_INT, (rank + size - 1) % size, 5,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  g_ready = got == (rank + size - 1) % size;
}

/* 1 when the constructor ran and its ring delivered the left neighbour's rank. */
__attribute__((visibility("default"))) int early_init_ready(void) { return g_ready; }
