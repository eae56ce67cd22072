// Early returns on rank-local data stay findings: a rank whose local index exceeds the device count
// returns before the gather.
#include <mpi.h>
#include <nccl.h>

int gather_stats(float* stats, float* all, int n) {
  int rank = 0, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cudaGetDeviceCount(&devices);
  int local = rank % 4;
  if (local >= devices) return -1;
  MPI_Gather(stats, n, MPI_FLOAT, all, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: collective 'MPI_Gather' is skipped by ranks that leave early [conditional-collective]
  // CHECK-NOTES: :[[@LINE-3]]:7: note: early exit decided here
  // CHECK-NOTES: :[[@LINE-7]]:3: note: rank obtained from 'MPI_Comm_rank' here
  return 0;
}
