// Fault probe: a 4-rank MPI job that runs long enough to fill a small trace file system mid-run.
// mpi_fill STEPS: STEPS allreduces with an annotation every 64; rank 0 prints the result, which must be
// the same with and without the tracer, and the job exits 0.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lockstep/annotate.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long steps = argc > 1 ? std::atol(argv[1]) : 1000;
  long total = 0;
  for (long i = 0; i < steps; ++i) {
    if (i % 64 == 0 && lockstep_annotate) lockstep_annotate(("epoch " + std::to_string(i / 64)).c_str());
    long mine = rank + i, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
  }
  if (rank == 0) std::printf("mpi_fill: %d ranks, %ld steps, total %ld\n", size, steps, total);
  MPI_Finalize();
  return 0;
}
