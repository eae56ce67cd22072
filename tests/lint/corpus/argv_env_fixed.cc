// SPMD launches hand every rank the same argv and environment: both are uniform by default.
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 10;
  const char* debug = getenv("TRAIN_DEBUG");
  float loss = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (debug) MPI_Barrier(MPI_COMM_WORLD);
  }
  return MPI_Finalize();
}
