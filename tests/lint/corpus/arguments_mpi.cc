// Root, count and datatype computed from the rank.
#include <mpi.h>

void bcast_root_buggy(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int root = rank % 2;
  MPI_Bcast(buf, n, MPI_FLOAT, root, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:32: warning: the root of 'MPI_Bcast' is computed from a rank-local value [rank-dependent-argument]
  // CHECK-NOTES: :[[@LINE-4]]:3: note: rank obtained from 'MPI_Comm_rank' here
}

void count_buggy(float* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(MPI_IN_PLACE, buf, n - rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:36: warning: the count of 'MPI_Allreduce' is computed from a rank-local value [rank-dependent-argument]
}

void datatype_buggy(void* buf, int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Datatype type = rank == 0 ? MPI_DOUBLE : MPI_FLOAT;
  MPI_Allreduce(MPI_IN_PLACE, buf, n, type, MPI_SUM, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: the datatype of 'MPI_Allreduce' is computed from a rank-local value [rank-dependent-argument]
}

// Correct: constant root and types; per-rank counts of a v-variant; point-to-point peers.
void arguments_fixed(float* buf, int n, float* all, const int* counts, const int* displs) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  MPI_Bcast(buf, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
  MPI_Allgatherv(buf, counts[rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
  MPI_Send(buf, n, MPI_FLOAT, (rank + 1) % size, 0, MPI_COMM_WORLD);
  int max_n = 0;
  MPI_Allreduce(&n, &max_n, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, buf, max_n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
