// Sub-communicators made on some ranks only: MPI_Comm_create_group is collective over its group and
// ncclCommInitRank over the ranks sharing the id, so calling them (and collectives on what they make)
// under the condition that picks the members is how such a communicator is used.
#include <mpi.h>
#include <nccl.h>

void reduce_on(MPI_Comm comm, float* x, int n) {
  MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, comm);
}

void odd_ranks(float* x, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Group world, odd_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int odds[] = {1, 3};
  MPI_Group_incl(world, 2, odds, &odd_group);
  MPI_Comm odd = MPI_COMM_NULL;
  if (rank % 2 == 1) {
    MPI_Comm_create_group(MPI_COMM_WORLD, odd_group, 7, &odd);
    MPI_Barrier(odd);
    reduce_on(odd, x, n);
  }
  MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

void nccl_without_rank0(float* x, size_t n, ncclUniqueId id) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    ncclComm_t sub;
    ncclCommInitRank(&sub, size - 1, id, rank - 1);
    ncclAllReduce(x, x, n, ncclFloat, ncclSum, sub, 0);
  }
}
