// Suppression comments: on the line, or on the line above.
#include <mpi.h>

void rank_zero_barrier() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) MPI_Barrier(MPI_COMM_WORLD);  // lockstep: ignore[conditional-collective] test of the same line
  // lockstep: ignore[conditional-collective] test of the line above
  if (rank == 1) MPI_Barrier(MPI_COMM_WORLD);
  // lockstep: ignore[rank-dependent-argument] a different rule does not silence this one
  if (rank == 2) MPI_Barrier(MPI_COMM_WORLD);
}
