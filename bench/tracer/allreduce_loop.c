/* End-to-end workload for e2e.sh: N small MPI_Allreduce calls on MPI_COMM_WORLD; rank 0 prints the
 * loop's wall time in seconds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
  int rank, x = 1, y = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long i = 0; i < n; ++i) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  double t = MPI_Wtime() - t0;
  if (rank == 0) printf("%.4f\n", t);
  MPI_Finalize();
  return 0;
}
