/* A conditional expression on a uniform value (the size) around a collective (C). */
#include <mpi.h>

int maybe_sync(void) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1 ? MPI_Barrier(MPI_COMM_WORLD) : 0;
}
