/* The program of tests/tracer/early_calls.sh: MPI was started by a library's constructor
   (early_init.c); main only reduces, STEPS times, and prints the result.
     tracer_early_main [STEPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int early_init_ready(void);

int main(int argc, char** argv) {
  if (!early_init_ready()) {
    fprintf(stderr, "tracer_early_main: the library's constructor did not start MPI\n");
    return 1;
  }
  const int steps = argc > 1 ? atoi(argv[1]) : 10;
  int rank = 0, x = 1, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < steps; ++i) MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d sum %d after %d steps\n", rank, sum, steps);
  MPI_Finalize();
  return 0;
}
