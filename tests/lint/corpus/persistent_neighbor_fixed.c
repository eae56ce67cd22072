/* Every rank creates the persistent allreduce and joins the neighbourhood exchange. */
#include <mpi.h>

void setup(float* buf, int n, MPI_Comm cart, int* nbr_in, int* nbr_out) {
  MPI_Request req;
  MPI_Allreduce_init(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, 0, &req);
  MPI_Neighbor_allgather(nbr_out, 1, MPI_INT, nbr_in, 1, MPI_INT, cart);
}
