/* MPI-4 persistent and neighbourhood collectives are collectives too: only rank 0 creates the
   persistent allreduce here. */
#include <mpi.h>

void setup(float* buf, int n, MPI_Comm cart, int* nbr_in, int* nbr_out) {
  int rank = 0;
  MPI_Request req;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) MPI_Allreduce_init(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, 0, &req);
  /* CHECK-MESSAGES: :[[@LINE-1]]:18: warning: collective 'MPI_Allreduce_init' runs only on ranks where a rank-local condition holds [conditional-collective] */
  if (rank > 1) MPI_Neighbor_allgather(nbr_out, 1, MPI_INT, nbr_in, 1, MPI_INT, cart);
  /* CHECK-MESSAGES: :[[@LINE-1]]:17: warning: collective 'MPI_Neighbor_allgather' runs only on ranks where a rank-local condition holds [conditional-collective] */
}
