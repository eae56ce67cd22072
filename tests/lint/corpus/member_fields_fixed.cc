// An array of communicators, some made on every rank and some on a subset, each with its size and
// root in the same struct, filled under the condition that picks the members; a step skips the ones
// this rank is not a member of. The root is uniform among the members of the communicator it is used
// on, because it was written on the same branch that made that communicator.
#include <mpi.h>
#include <nccl.h>

struct Sub {
  ncclComm_t comm;  // null where this rank is not a member
  int size;
  int root;
  int rank;
};

void step(Sub* subs, int which, float* x, size_t n) {
  Sub& s = subs[which];
  if (!s.comm) return;
  ncclBroadcast(x, x, n, ncclFloat, s.root % s.size, s.comm, 0);
  ncclAllReduce(x, x, n, ncclFloat, ncclSum, s.comm, 0);
}

void members(float* x, size_t n, ncclUniqueId id_all, ncclUniqueId id_sub, int steps) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Sub subs[2] = {};
  subs[0].size = size;
  subs[0].root = 0;
  subs[0].rank = rank;
  ncclCommInitRank(&subs[0].comm, size, id_all, rank);
  if (rank != 0) {
    subs[1].size = size - 1;
    subs[1].root = 1;
    subs[1].rank = rank - 1;
    ncclCommInitRank(&subs[1].comm, size - 1, id_sub, rank - 1);
  }
  for (int i = 0; i < steps; ++i) step(subs, i % 2, x, n);
  if (subs[1].comm) ncclCommDestroy(subs[1].comm);
  ncclCommDestroy(subs[0].comm);
}
