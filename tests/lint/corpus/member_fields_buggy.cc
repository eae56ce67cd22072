// An array of communicators, some made on a subset of the ranks, with a root next to each: a root that
// is not the same on every member is still reported, whether it holds the member's own rank or was
// written on another branch than the one that made the communicator.
#include <mpi.h>
#include <nccl.h>

struct Sub {
  ncclComm_t comm;  // null where this rank is not a member
  int size;
  int root;
};

void step(Sub* subs, int which, float* x, size_t n) {
  Sub& s = subs[which];
  if (!s.comm) return;
  ncclBroadcast(x, x, n, ncclFloat, s.root, s.comm, 0);
}

void root_is_own_rank(float* x, size_t n, ncclUniqueId id_sub, int steps) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Sub subs[1] = {};
  if (rank != 0) {
    subs[0].size = size - 1;
    subs[0].root = rank - 1;
    ncclCommInitRank(&subs[0].comm, size - 1, id_sub, rank - 1);
  }
  for (int i = 0; i < steps; ++i) step(subs, 0, x, n);
  // CHECK-MESSAGES: :[[@LINE-1]]:35: warning: call to 'step' passes a rank-local value as the root of collective 'ncclBroadcast' [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-10]]:3: note: rank obtained from 'MPI_Comm_rank' here
  // CHECK-NOTES: :[[@LINE-16]]:3: note: collective 'ncclBroadcast' called here
}

void root_on_other_branch(float* x, size_t n, ncclUniqueId id_sub, int steps) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Sub subs[1] = {};
  if (rank != 0) {
    subs[0].size = size - 1;
    ncclCommInitRank(&subs[0].comm, size - 1, id_sub, rank - 1);
  }
  if (rank > 1) subs[0].root = 1;  // rank 1 keeps root 0
  for (int i = 0; i < steps; ++i) step(subs, 0, x, n);
  // CHECK-MESSAGES: :[[@LINE-1]]:35: warning: call to 'step' passes a rank-local value as the root of collective 'ncclBroadcast' [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-10]]:3: note: rank obtained from 'MPI_Comm_rank' here
  // CHECK-NOTES: :[[@LINE-32]]:3: note: collective 'ncclBroadcast' called here
}
