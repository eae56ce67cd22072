// A 2-rank job that hangs: both ranks make one allreduce, then rank 0 enters MPI_Barrier and rank 1
// never does (it sleeps until it is stopped). For `lockstep run --timeout` and `--stall`.
#include <mpi.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, x = 1, y = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) MPI_Barrier(MPI_COMM_WORLD);
  for (;;) sleep(1);
}
