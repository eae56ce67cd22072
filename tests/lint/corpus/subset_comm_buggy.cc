// A sub-communicator does not excuse a collective on a communicator every rank holds: under the
// member condition, a collective on MPI_COMM_WORLD (or on a split communicator every rank made) is
// still one-sided.
#include <mpi.h>
#include <nccl.h>

void odd_ranks(float* x, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Group world, odd_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int odds[] = {1, 3};
  MPI_Group_incl(world, 2, odds, &odd_group);
  MPI_Comm odd = MPI_COMM_NULL, half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  if (rank % 2 == 1) {
    MPI_Comm_create_group(MPI_COMM_WORLD, odd_group, 7, &odd);
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' runs only on ranks where a rank-local condition holds [conditional-collective]
    // CHECK-NOTES: :[[@LINE-4]]:7: note: condition evaluated here
    // CHECK-NOTES: :[[@LINE+1]]:5: note: collective 'MPI_Barrier' under the same condition here
    MPI_Barrier(half);
  }
}

void nccl_without_rank0(float* x, size_t n, ncclUniqueId id, ncclComm_t all) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    ncclComm_t sub;
    ncclCommInitRank(&sub, size - 1, id, rank - 1);
    ncclAllReduce(x, x, n, ncclFloat, ncclSum, all, 0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'ncclAllReduce' runs only on ranks where a rank-local condition holds [conditional-collective]
  }
}
