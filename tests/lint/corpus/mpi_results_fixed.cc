// What MPI returns to every rank alike: the thread level provided, the size, a split or Cartesian
// communicator (each member uses the same handle for it).
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Barrier(half);
  MPI_Comm cart;
  int dims[1] = {size}, periods[1] = {0};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
  MPI_Barrier(cart);
  MPI_Comm_free(&cart);
  MPI_Comm_free(&half);
  return MPI_Finalize();
}
